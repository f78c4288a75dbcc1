package iceberg

import (
	"math"
	"runtime/debug"
	"testing"
)

// The commits' memory limit is what the process holds plus commitHeadroom, a lower limit set
// by the user (GOMEMLIMIT) stands, and the previous limit comes back after the month (a
// schedule process goes on with its own).
func TestBoundGoMemory(t *testing.T) {
	prev := debug.SetMemoryLimit(math.MaxInt64)
	defer debug.SetMemoryLimit(prev)

	restore := boundGoMemory()
	got := debug.SetMemoryLimit(-1)
	held := goMemoryHeld()
	if got < commitHeadroom || got > held+commitHeadroom+(16<<20) {
		t.Errorf("limit during the commits = %d MB, want what is held (%d MB) + %d MB", got>>20, held>>20, commitHeadroom>>20)
	}
	restore()
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("limit after the month = %d, want the previous one (no limit)", got)
	}

	debug.SetMemoryLimit(64 << 20) // GOMEMLIMIT=64MiB
	restore = boundGoMemory()
	if got := debug.SetMemoryLimit(-1); got != 64<<20 {
		t.Errorf("limit during the commits = %d MB, want the user's 64 MB", got>>20)
	}
	restore()
	if got := debug.SetMemoryLimit(-1); got != 64<<20 {
		t.Errorf("limit after the month = %d MB, want the user's 64 MB", got>>20)
	}
}
