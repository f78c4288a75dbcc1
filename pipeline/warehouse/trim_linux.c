//go:build cgo

// The pacing of native memory's release, for DuckDB's calls and ours.
//
// DuckDB 1.1 calls malloc_trim(0) at every database open and close, every SET memory_limit and
// every change of its thread count; the warehouse releases after an operation (a jemalloc
// purge, then a trim). Each walks every free chunk of every arena and hands each whole free
// page back to the kernel (one madvise each, and a TLB shootdown on every core running the
// process), and the next allocation faults the page in again, zeroed: over sixteen end-to-end
// tests, ~200,000 madvise calls and a tenth to a fifth of the CPU (docs/internals.md, "What a
// release of memory costs"). Defined in the executable, this malloc_trim is the one DuckDB's
// static library links to. A release, DuckDB's or ours, goes through at most once per
// sitewatch_trim_interval_ns in the process (ours may be forced), so what is freed is still
// handed back within that time of the next call, and a burst of calls costs one walk.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <stddef.h>
#include <time.h>

// DuckDB's bundled jemalloc (go-duckdb's static library); weak, so a build against a DuckDB
// shared library without it still links.
extern int duckdb_je_mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen) __attribute__((weak));

long long sitewatch_trim_interval_ns; // set from the package's init: trimInterval
unsigned long long sitewatch_releases_asked, sitewatch_releases_run, sitewatch_purges_run;

static int (*glibc_malloc_trim)(size_t);
static long long last_release_ns; // CLOCK_MONOTONIC of the last release let through; 0: none yet

// sitewatch_resolve_trim finds glibc's malloc_trim; called from the package's init, before
// DuckDB starts a thread.
void sitewatch_resolve_trim(void) {
	glibc_malloc_trim = (int (*)(size_t))dlsym(RTLD_NEXT, "malloc_trim");
}

static long long monotonic_ns(void) {
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (long long)now.tv_sec * 1000000000LL + now.tv_nsec;
}

// paced reports whether a release may go through now (always if force is set) and, if so,
// marks it as the last.
static int paced(int force) {
	long long now = monotonic_ns();
	if (force) {
		__atomic_store_n(&last_release_ns, now, __ATOMIC_RELAXED);
		return 1;
	}
	long long last = __atomic_load_n(&last_release_ns, __ATOMIC_RELAXED);
	long long interval = __atomic_load_n(&sitewatch_trim_interval_ns, __ATOMIC_RELAXED);
	if (last != 0 && now - last < interval) {
		return 0;
	}
	// A race lost means another thread's release went through just now.
	return __atomic_compare_exchange_n(&last_release_ns, &last, now, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

// sitewatch_release hands freed native memory back to the kernel if paced lets it: with purge
// set, jemalloc's dirty pages (DuckDB's buffers) first, then glibc's free heap tops and whole
// free pages (its C++ objects). It returns glibc's malloc_trim's answer, or 0.
int sitewatch_release(size_t pad, int force, int purge) {
	__atomic_add_fetch(&sitewatch_releases_asked, 1, __ATOMIC_RELAXED);
	if (!paced(force)) {
		return 0;
	}
	__atomic_add_fetch(&sitewatch_releases_run, 1, __ATOMIC_RELAXED);
	if (purge && duckdb_je_mallctl) {
		// MALLCTL_ARENAS_ALL (4096): purge the dirty pages of every jemalloc arena.
		duckdb_je_mallctl("arena.4096.purge", NULL, NULL, NULL, 0);
		__atomic_add_fetch(&sitewatch_purges_run, 1, __ATOMIC_RELAXED);
	}
	return glibc_malloc_trim ? glibc_malloc_trim(pad) : 0;
}

int malloc_trim(size_t pad) { return sitewatch_release(pad, 0, 0); }
