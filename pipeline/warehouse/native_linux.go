//go:build linux && cgo

package warehouse

/*
#include <malloc.h>
#include <stddef.h>

static void sitewatch_limit_arenas(void) { mallopt(M_ARENA_MAX, 2); }

// trim_linux.c: a release, at most once an interval.
extern long long sitewatch_trim_interval_ns;
extern unsigned long long sitewatch_releases_asked, sitewatch_releases_run, sitewatch_purges_run;
void sitewatch_resolve_trim(void);
int sitewatch_release(size_t pad, int force, int purge);
static unsigned long long sitewatch_load(unsigned long long *counter) { return __atomic_load_n(counter, __ATOMIC_RELAXED); }
static long long sitewatch_set_trim_interval(long long ns) { return __atomic_exchange_n(&sitewatch_trim_interval_ns, ns, __ATOMIC_RELAXED); }

static size_t sitewatch_glibc_in_use(void) { return mallinfo2().uordblks; }
*/
import "C"

import "time"

// init caps glibc's malloc arenas at 2 before DuckDB starts its threads: by default each
// thread that allocates under contention gets its own arena (up to 8 per core), and the
// memory freed in an arena stays with it, so the process's native memory grew with the run's
// length (docs/warehouse-internals.md, "Memory").
func init() {
	C.sitewatch_limit_arenas()
	C.sitewatch_resolve_trim()
	setTrimInterval(trimInterval)
}

// releaseNativeMemory hands the pages freed by DuckDB back to the kernel: jemalloc's dirty
// pages (DuckDB's buffers) and glibc's free heap tops and whole free pages (its C++ objects),
// unless a release, DuckDB's or ours, went through in the last trimInterval and force is not
// set. It takes a few milliseconds at most.
func releaseNativeMemory(force bool) {
	f := C.int(0)
	if force {
		f = 1
	}
	C.sitewatch_release(0, f, 1)
}

// releaseNativeSoon releases native memory one trimInterval from now, paced as any other
// release: a process that idles (schedule) gets what a closed warehouse freed back within a
// second or two, one that exits first (most commands) spends nothing on it.
func releaseNativeSoon() { time.AfterFunc(trimInterval, func() { releaseNativeMemory(false) }) }

// glibcInUse is the memory glibc's malloc has handed out and not had back (mallinfo2's
// uordblks): DuckDB's C++ objects and cgo's allocations, not DuckDB's jemalloc or Go's heap.
func glibcInUse() (bytes uint64, ok bool) { return uint64(C.sitewatch_glibc_in_use()), true }

// trimInterval is the least time between two releases of native memory that are not forced,
// DuckDB's malloc_trim calls or ours (trim_linux.c).
const trimInterval = time.Second

// releaseCounts reports how many releases (malloc_trim calls included) were asked for in the
// process, how many went through, and how many of those purged jemalloc.
func releaseCounts() (asked, run, purged uint64) {
	return uint64(C.sitewatch_load(&C.sitewatch_releases_asked)), uint64(C.sitewatch_load(&C.sitewatch_releases_run)),
		uint64(C.sitewatch_load(&C.sitewatch_purges_run))
}

// setTrimInterval changes the interval (tests); it returns the one it replaced.
func setTrimInterval(d time.Duration) (previous time.Duration) {
	return time.Duration(C.sitewatch_set_trim_interval(C.longlong(d)))
}
