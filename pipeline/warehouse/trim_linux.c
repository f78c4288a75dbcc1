//go:build cgo

// A gate in front of glibc's malloc_trim, for DuckDB's calls and ours.
//
// DuckDB 1.1 calls malloc_trim(0) at every database open and close, every SET memory_limit and
// every change of its thread count; the warehouse calls it after an operation. Each call walks
// every free chunk of every arena and hands each whole free page back to the kernel (one
// madvise each, and a TLB shootdown on every core running the process), and the next
// allocation faults the page in again, zeroed: over sixteen end-to-end tests, ~200,000 madvise
// calls and a fifth of the CPU (docs/internals.md, "What a release of memory costs").
// Defined in the executable, this malloc_trim is the one DuckDB's static library links to; it
// lets a call through to glibc's at most once per sitewatch_trim_interval_ns, so what is freed
// is still handed back within that time of the next call, and a burst of calls costs one walk.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <stddef.h>
#include <time.h>

long long sitewatch_trim_interval_ns; // set from the package's init: trimInterval
unsigned long long sitewatch_trims_asked, sitewatch_trims_run;

static int (*glibc_malloc_trim)(size_t);
static long long last_trim_ns; // CLOCK_MONOTONIC of the last call let through; 0: none yet

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

// sitewatch_trim trims through glibc's malloc_trim if force is set or the interval has passed
// since the last trim let through; it returns glibc's answer, or 0 when it did not trim.
int sitewatch_trim(size_t pad, int force) {
	__atomic_add_fetch(&sitewatch_trims_asked, 1, __ATOMIC_RELAXED);
	if (glibc_malloc_trim == NULL) {
		return 0;
	}
	long long now = monotonic_ns();
	if (force) {
		__atomic_store_n(&last_trim_ns, now, __ATOMIC_RELAXED);
	} else {
		long long last = __atomic_load_n(&last_trim_ns, __ATOMIC_RELAXED);
		long long interval = __atomic_load_n(&sitewatch_trim_interval_ns, __ATOMIC_RELAXED);
		if (last != 0 && now - last < interval) {
			return 0;
		}
		if (!__atomic_compare_exchange_n(&last_trim_ns, &last, now, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
			return 0; // another thread's call went through just now
		}
	}
	__atomic_add_fetch(&sitewatch_trims_run, 1, __ATOMIC_RELAXED);
	return glibc_malloc_trim(pad);
}

int malloc_trim(size_t pad) { return sitewatch_trim(pad, 0); }
