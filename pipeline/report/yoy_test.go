package report

import (
	"database/sql"
	"strings"
	"testing"
	"time"
)

// loadYearApart inserts snapshots a year apart, each with the 12 months of history one
// snapshot holds: neither snapshot's own history reaches a year back, the two together do.
func loadYearApart(t *testing.T, db *sql.DB, snapshots ...string) {
	t.Helper()
	for _, snap := range snapshots {
		sm, _ := time.Parse("2006-01", snap)
		for i, d := range []string{"big.example", "small.example"} {
			base := 1e9 / float64(1+i*999)
			insert(t, db, `INSERT INTO sites (snapshot_month, domain, snapshot_date, traffic_period, total_visits, global_rank)
				VALUES (?, ?, ?, ?, ?, ?)`, []any{snap, d, sm, sm.AddDate(0, -1, 0).Format("2006-01"), base, 100 + i*1000})
			for m := 12; m >= 1; m-- {
				month := sm.AddDate(0, -m, 0)
				// Visits grow 1% a month from 2024-01 on: +12.7% year on year.
				v := base * pow101(int(month.Sub(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)).Hours()/24/30.4))
				insert(t, db, `INSERT INTO traffic_history VALUES (?, ?, ?, ?)`, []any{snap, d, month, int64(v)})
			}
		}
	}
}

func pow101(n int) float64 {
	v := 1.0
	for range n {
		v *= 1.01
	}
	return v
}

// TestYearOnYearFromEverySnapshot: a snapshot's own 12 months never hold the month a year
// earlier; the report takes it from the earlier snapshot's history, on every card, in the
// headline and in its section.
func TestYearOnYearFromEverySnapshot(t *testing.T) {
	db := openWarehouse(t)
	loadYearApart(t, db, "2025-02", "2026-02")
	html := render(t, db, "2026-02")
	if strings.Contains(html, "YoY <span class=\"\">—</span>") {
		t.Errorf("a card still shows YoY —")
	}
	for _, want := range []string{"YoY &#43;12.7%", `<section id="yoy">`, "big.example: +12.7% (1.13B → 1.27B)", `<a href="#yoy">`} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// TestYearOnYearNotYet: with one snapshot the report says from which month year on year
// becomes available instead of a dash, and the section says why.
func TestYearOnYearNotYet(t *testing.T) {
	db := openWarehouse(t)
	loadYearApart(t, db, "2026-02")
	html := render(t, db, "2026-02")
	for _, want := range []string{"YoY from Feb 2026", "YoY <span class=\"\">from Feb 2026</span>",
		"starts in Feb 2025, so year on year becomes available from Feb 2026"} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
