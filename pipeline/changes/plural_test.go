package changes

import "testing"

// TestRankMoveSingular: a rank that moves by one place says "1 place", never "1 places".
func TestRankMoveSingular(t *testing.T) {
	for change, want := range map[float64]string{-1: "up 1 place", 1: "down 1 place", -20: "up 20 places", 1500: "down 1,500 places"} {
		if got := moveText(Mover{Metric: MetricGlobalRank, Change: change}); got != want {
			t.Errorf("rank change %v: %q, want %q", change, got, want)
		}
	}
}
