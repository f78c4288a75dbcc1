package heapgrowth

import "testing"

// TestOfMeasuresBothWays: a value of known size measures at its size, one the build does not
// keep measures near zero: the helper can tell a compact value from a missed one.
func TestOfMeasuresBothWays(t *testing.T) {
	const size = 4 << 20
	const slack = 64 << 10
	kept := Of(func() any { return make([]byte, size) })
	if kept < size || kept > size+slack {
		t.Errorf("a %d-byte slice measured %d bytes, want %d to %d", size, kept, size, size+slack)
	}
	dropped := Of(func() any {
		_ = make([]byte, size)
		return nil
	})
	if dropped < -slack || dropped > slack {
		t.Errorf("a slice the build drops measured %d bytes, want within ±%d of 0", dropped, slack)
	}
	t.Logf("kept %d bytes, dropped %d", kept, dropped)
}
