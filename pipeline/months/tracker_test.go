package months

import (
	"testing"

	"sitewatch/schema"
)

func ptr(s string) *string { return &s }

func overview(period, date *string) *schema.SiteOverview {
	ov := &schema.SiteOverview{Traffic: &schema.Traffic{Period: period}}
	ov.Meta.SnapshotDate = date
	return ov
}

// TestMonthRule: traffic.period decides; a missing period falls back to the run's month
// while snapshot_date agrees, else to the month of snapshot_date; similar-sites answers
// follow their domain's overview.
func TestMonthRule(t *testing.T) {
	m := NewTracker()
	if got := m.Overview("a.com", overview(ptr("2026-10"), ptr("2026-11-01"))); got != "2026-10" {
		t.Fatalf("period first: got %s", got)
	}
	cases := []struct {
		name         string
		period, date *string
		want         string
	}{
		{"NoPeriodSameDate", nil, ptr("2026-11-01"), "2026-10"},
		{"NoPeriodNoDate", nil, nil, "2026-10"},
		{"BadPeriodSameDate", ptr("Oct 2026"), ptr("2026-11-01"), "2026-10"},
		{"NoPeriodNewDate", nil, ptr("2026-12-01"), "2026-12"},
		{"NewPeriod", ptr("2026-11"), ptr("2026-12-01"), "2026-11"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := m.Overview(tc.name+".com", overview(tc.period, tc.date)); got != tc.want {
				t.Errorf("month = %s, want %s", got, tc.want)
			}
		})
	}
	if got := m.Other("NewPeriod.com"); got != "2026-11" {
		t.Errorf("similar-sites of a domain answered for 2026-11 = %s", got)
	}
	if got := m.Other("never-seen.com"); got != "2026-10" {
		t.Errorf("similar-sites of an unseen domain = %s, want the run's month", got)
	}
	if got := NewTracker().Overview("x.com", overview(nil, nil)); got != "" {
		t.Errorf("an answer naming no month with no run month = %q, want \"\"", got)
	}
}
