//go:build !linux || !cgo

package warehouse

// releaseNativeMemory is a no-op where the allocators are not glibc's and DuckDB's jemalloc.
func releaseNativeMemory() {}

// glibcInUse is not measured where the allocator is not glibc's.
func glibcInUse() (bytes uint64, ok bool) { return 0, false }
