//go:build !linux || !cgo

package warehouse

// releaseNativeMemory is a no-op where the allocators are not glibc's and DuckDB's jemalloc.
func releaseNativeMemory() {}
