// Package heapgrowth measures what a value keeps on the Go heap, for tests that bound the
// bytes a per-domain structure costs (issue 34: a million domains on an ordinary machine).
package heapgrowth

import "runtime"

// Of returns the live heap bytes that the value build returns keeps, measured between two
// collections (the value is kept alive until after the second).
func Of(build func() any) uint64 {
	before := live()
	v := build()
	after := live()
	runtime.KeepAlive(v)
	if after < before {
		return 0
	}
	return after - before
}

func live() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
