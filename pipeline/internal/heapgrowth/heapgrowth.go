// Package heapgrowth measures what a value keeps on the Go heap, for tests that bound the
// bytes a per-domain structure costs (issue 34: a million domains on an ordinary machine).
package heapgrowth

import (
	"runtime"
	"slices"
)

// samples is how many times Of builds the value. Another goroutine allocating or freeing
// between the two readings moves one sample either way; the median of five ignores two such.
const samples = 5

// Of returns the live heap bytes that the value build returns keeps: the median of several
// builds, each measured between full collections (the value is kept alive until after the
// second and dropped before the next build). The result is signed and not clamped: a
// measurement that missed the value comes out near zero or below, so a caller bounds it from
// below as well as from above, and a broken measurement fails instead of passing at 0 bytes.
// build must keep the value nowhere else: a variable it assigns would hold one build's value
// through the next build's measurement, which then shows no growth.
func Of(build func() any) int64 {
	grown := make([]int64, samples)
	for i := range grown {
		grown[i] = once(build)
	}
	slices.Sort(grown)
	return grown[samples/2]
}

func once(build func() any) int64 {
	before := live()
	v := build()
	after := live()
	runtime.KeepAlive(v)
	return int64(after) - int64(before)
}

// live is the heap after two collections: the second frees what finalizers and the first
// collection's sweep left for it.
func live() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
