package iceberg

import (
	"math"
	"runtime/debug"
	"runtime/metrics"
)

// commitHeadroom is the Go memory a month's commits may take beyond what the process holds
// when they start. The commits' working set is bounded (one batch read, the writer's queue
// and row group, the upload parts) but it is churned: every batch is garbage once encoded,
// so under GOGC alone the heap grows to a multiple of it between collections. At 100,000
// domains that put `run` + both formats at 673 MB (issue 34). Under the limit the collector
// runs as the heap nears it instead; the working set measured in a publish of a
// 30,000-domain month is ~90–130 MB, so 128 MB of headroom costs no time there (the
// collector's CPU is capped at half when a limit is tight, so a larger month is slower, not
// unbounded).
const commitHeadroom = 128 << 20

// boundGoMemory collects, returns freed pages to the kernel (what a run left behind: its
// garbage, before the commits add theirs), and sets a soft Go memory limit of what the
// process now holds plus commitHeadroom, unless a lower one is set (GOMEMLIMIT). The
// returned function restores the previous limit (a schedule process goes on).
func boundGoMemory() (restore func()) {
	debug.FreeOSMemory()
	prev := debug.SetMemoryLimit(-1)
	limit := goMemoryHeld() + commitHeadroom
	if limit >= prev {
		return func() {}
	}
	debug.SetMemoryLimit(limit)
	return func() { debug.SetMemoryLimit(prev) }
}

// goMemoryHeld is the memory the Go runtime holds from the kernel (mapped and not released):
// what its memory limit counts.
func goMemoryHeld() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	held := s[0].Value.Uint64() - s[1].Value.Uint64()
	if held > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(held)
}
