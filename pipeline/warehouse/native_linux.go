//go:build linux && cgo

package warehouse

/*
#include <malloc.h>
#include <stddef.h>

// DuckDB's bundled jemalloc (go-duckdb's static library); weak, so a build against a
// DuckDB shared library without it still links.
extern int duckdb_je_mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen) __attribute__((weak));

static void sitewatch_limit_arenas(void) { mallopt(M_ARENA_MAX, 2); }

static size_t sitewatch_glibc_in_use(void) { return mallinfo2().uordblks; }

static void sitewatch_release_native(void) {
	if (duckdb_je_mallctl) {
		// MALLCTL_ARENAS_ALL (4096): purge the dirty pages of every jemalloc arena.
		duckdb_je_mallctl("arena.4096.purge", NULL, NULL, NULL, 0);
	}
	malloc_trim(0);
}
*/
import "C"

// init caps glibc's malloc arenas at 2 before DuckDB starts its threads: by default each
// thread that allocates under contention gets its own arena (up to 8 per core), and the
// memory freed in an arena stays with it, so the process's native memory grew with the run's
// length (docs/warehouse-internals.md, "Memory").
func init() { C.sitewatch_limit_arenas() }

// releaseNativeMemory hands the pages freed by DuckDB back to the kernel: jemalloc's dirty
// pages (DuckDB's buffers) and glibc's free heap tops and whole free pages (its C++ objects).
// It takes a few milliseconds at most.
func releaseNativeMemory() { C.sitewatch_release_native() }

// glibcInUse is the memory glibc's malloc has handed out and not had back (mallinfo2's
// uordblks): DuckDB's C++ objects and cgo's allocations, not DuckDB's jemalloc or Go's heap.
func glibcInUse() (bytes uint64, ok bool) { return uint64(C.sitewatch_glibc_in_use()), true }
