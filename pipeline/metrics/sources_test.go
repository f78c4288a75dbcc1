package metrics

import (
	"testing"
	"time"
)

// Each credit source's spend and what it has left are exported with a source label; the
// spend counts on across Progress reports and runs.
func TestSourceLabel(t *testing.T) {
	r := New(Options{})
	r.RunStarted("2026-11", 150, time.Now())
	r.Progress(Progress{Sources: []SourceCredits{{Name: "marketplace", Spent: 40, Left: 60}, {Name: "direct", Spent: 10, Left: -1}}})
	r.Progress(Progress{Sources: []SourceCredits{{Name: "marketplace", Spent: 100, Left: 0}, {Name: "direct", Spent: 201, Left: 799}}})
	r.RunStarted("2026-11", 150, time.Now())
	r.Progress(Progress{Sources: []SourceCredits{{Name: "direct", Spent: 5, Left: 794}}})
	fams := gather(t, r)
	for _, tt := range []struct {
		name, source string
		want         float64
	}{
		{"sitewatch_source_credits_spent_total", "marketplace", 100},
		{"sitewatch_source_credits_spent_total", "direct", 206},
		{"sitewatch_source_credits_remaining", "marketplace", 0},
		{"sitewatch_source_credits_remaining", "direct", 794},
	} {
		if got := value(t, fams, tt.name, "source", tt.source); got != tt.want {
			t.Errorf("%s{source=%q} = %v, want %v", tt.name, tt.source, got, tt.want)
		}
	}
}
