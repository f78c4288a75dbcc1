package sources

import (
	"testing"
	"time"
)

var (
	dec1    = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	nextRun = time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC) // "0 6 2 * *" after 2026-11-20
)

// The spend order and the shares: money decides who pays.
func TestNewPlan(t *testing.T) {
	direct := Allowance{Name: "direct", Usable: 5000, Rate: 3}
	market := Allowance{Name: "marketplace", Usable: 2000, Quota: true, Reset: dec1, Rate: 10}
	tests := []struct {
		name      string
		allow     []Allowance
		calls     int
		nextRun   time.Time
		wantOrder []string
		wantCalls []int
		wantText  string
	}{
		{"QuotaFirstThenCredits", []Allowance{direct, market}, 2001, nextRun,
			[]string{"marketplace", "direct"}, []int{2000, 1},
			"marketplace pays 2,000 of its 2,000 before 2026-12-01; direct pays 1 of its 5,000"},
		{"QuotaLeftToExpire", []Allowance{direct, market}, 1800, nextRun,
			[]string{"marketplace", "direct"}, []int{1800, 0},
			"marketplace pays 1,800 of its 2,000 before 2026-12-01; direct pays 0; 200 quota credits would expire unused"},
		{"ResetAfterNextRunStillBeforeCredits", []Allowance{direct, {Name: "late", Usable: 100, Quota: true, Reset: nextRun.Add(time.Hour), Rate: 1}}, 150, nextRun,
			[]string{"late", "direct"}, []int{100, 50},
			"late pays 100 of its 100 before 2026-12-02; direct pays 50 of its 5,000"},
		{"SoonestResetFirst", []Allowance{direct, {Name: "b", Usable: 10, Quota: true, Reset: dec1.Add(time.Hour)}, {Name: "a", Usable: 10, Quota: true, Reset: dec1}}, 15, nextRun,
			[]string{"a", "b", "direct"}, []int{10, 5, 0},
			"a pays 10 of its 10 before 2026-12-01; b pays 5 of its 10 before 2026-12-01; direct pays 0; 5 quota credits would expire unused"},
		{"AllExhausted", []Allowance{{Name: "direct", Usable: 3}}, 5, nextRun,
			[]string{"direct"}, []int{3},
			"direct pays 3 of its 3; 2 calls have no source to pay for them (the run would stop for credits)"},
		{"UnknownBalanceTakesTheRest", []Allowance{market, {Name: "direct", Usable: -1}}, 2500, nextRun,
			[]string{"marketplace", "direct"}, []int{2000, 500},
			"marketplace pays 2,000 of its 2,000 before 2026-12-01; direct pays 500"},
		{"ConfigOrderAmongCredits", []Allowance{{Name: "b", Usable: 10}, {Name: "a", Usable: 10}}, 12, nextRun,
			[]string{"b", "a"}, []int{10, 2}, "b pays 10 of its 10; a pays 2 of its 10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPlan(tt.allow, tt.calls, tt.nextRun)
			if len(p.Shares) != len(tt.wantOrder) {
				t.Fatalf("%d shares, want %d", len(p.Shares), len(tt.wantOrder))
			}
			for i, s := range p.Shares {
				if s.Name != tt.wantOrder[i] || s.Calls != tt.wantCalls[i] {
					t.Errorf("share %d = %s pays %d, want %s pays %d", i, s.Name, s.Calls, tt.wantOrder[i], tt.wantCalls[i])
				}
			}
			if got := p.String(); got != tt.wantText {
				t.Errorf("String() =\n  %q\nwant\n  %q", got, tt.wantText)
			}
		})
	}
}

// Ideal is the longest share at its own rate: the sources work at once.
func TestIdeal(t *testing.T) {
	p := NewPlan([]Allowance{{Name: "direct", Usable: -1, Rate: 20}, {Name: "m", Usable: 100, Quota: true, Reset: dec1, Rate: 10}}, 301, nextRun)
	if got, want := p.Ideal(), 10050*time.Millisecond; got != want {
		t.Errorf("Ideal = %v, want %v (201 calls at 20/s beat 100 at 10/s)", got, want)
	}
}
