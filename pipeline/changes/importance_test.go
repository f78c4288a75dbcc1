package changes

import (
	"context"
	"strings"
	"testing"
)

// TestMoversRankedByImportance checks the one ranking rule the report, `sitewatch changes` and
// the webhook headline share: a move counts by the visits it stands for. A small site that
// doubles (1 -> 2 visits, +100 %) must not lead a large site that gains 5 % (2 M -> 2.1 M),
// for visits, rank, AI visits and shares alike.
func TestMoversRankedByImportance(t *testing.T) {
	w := openWarehouse(t)
	db := w.DB()
	addRun(t, db, "r1", "2026-01", "complete", 2, 2, 0)
	addRun(t, db, "r2", "2026-02", "complete", 2, 2, 1)
	const site = `INSERT INTO sites (snapshot_month, domain, traffic_period, snapshot_date, total_visits, global_rank,
		ai_total_visits, ai_global_traffic_share) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
	insert(t, db, site,
		[]any{"2026-01", "a-tiny.fr", "2026-01", day("2026-01-01"), 1.0, 30_000_000, 1, 0.01},
		[]any{"2026-01", "big.com", "2026-01", day("2026-01-01"), 2_000_000.0, 9000, 20_000, 0.01},
		[]any{"2026-02", "a-tiny.fr", "2026-02", day("2026-02-01"), 2.0, 15_000_000, 2, 0.30},
		[]any{"2026-02", "big.com", "2026-02", day("2026-02-01"), 2_100_000.0, 8700, 21_000, 0.02},
	)
	insert(t, db, `INSERT INTO sources_share VALUES (?, ?, ?, ?)`,
		[]any{"2026-01", "a-tiny.fr", "direct", 0.1}, []any{"2026-02", "a-tiny.fr", "direct", 0.9},
		[]any{"2026-01", "big.com", "direct", 0.40}, []any{"2026-02", "big.com", "direct", 0.42})
	// Each domain gains a competitor; the larger domain's change is listed first, although
	// a-tiny.fr comes first by name.
	insert(t, db, `INSERT INTO similar_sites (snapshot_month, domain, position, similar_domain) VALUES (?, ?, ?, ?)`,
		[]any{"2026-01", "a-tiny.fr", 1, "old.example"}, []any{"2026-02", "a-tiny.fr", 1, "new-a.example"},
		[]any{"2026-01", "big.com", 1, "old.example"}, []any{"2026-02", "big.com", 1, "new-b.example"})
	equalRows(t, "leaders", rows(t, db, `SELECT metric, domain FROM changes_movers WHERE mover_rank = 1 ORDER BY metric`),
		[]string{
			"ai_traffic_share | big.com",
			"ai_visits | big.com",
			"channel_share | big.com",
			"global_rank | big.com",
			"visits | big.com",
		})
	d, err := Build(context.Background(), db, "2026-02")
	if err != nil {
		t.Fatal(err)
	}
	if h := d.Headline(); !strings.Contains(h, "biggest mover big.com visits +5") {
		t.Errorf("headline leads with the wrong mover:\n%s", h)
	}
	if len(d.Competitors) == 0 || d.Competitors[0].Domain != "big.com" {
		t.Errorf("competitor changes not led by the larger domain: %+v", d.Competitors)
	}
}
