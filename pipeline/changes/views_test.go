package changes

import (
	"strings"
	"testing"
)

func equalRows(t *testing.T, name string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\ngot:\n%s\nwant:\n%s", name, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestViewsTwoMonths checks every changes view on the two-complete-month fixture: 2026-03 is
// not complete, so 2026-02 is compared with 2026-01 and nothing else.
func TestViewsTwoMonths(t *testing.T) {
	w := openWarehouse(t)
	db := w.DB()
	loadTwoMonths(t, db)
	tests := []struct {
		name, query string
		want        []string
	}{
		{
			// 2026-02's first run stopped for credits, its second completed; 2026-03's latest
			// finished run stopped for credits (the running one does not count).
			name:  "complete_months",
			query: `SELECT snapshot_month, previous_month, run_id, status, domains_in_warehouse FROM complete_months ORDER BY 1`,
			want: []string{
				"2026-01 | NULL | r1 | complete | 2",
				"2026-02 | 2026-01 | r3 | complete | 3",
			},
		},
		{
			name: "changes_movers",
			query: `SELECT snapshot_month, previous_month, domain, metric, coalesce(channel, '-'), previous_value, current_value,
				change, change_ratio, improved, mover_rank FROM changes_movers ORDER BY metric, mover_rank`,
			want: []string{
				"2026-02 | 2026-01 | a.com | ai_traffic_share | - | 0.01 | 0.02 | 0.01 | 1 | true | 1",
				"2026-02 | 2026-01 | b.com | ai_traffic_share | - | 0.02 | 0.02 | 0 | 0 | NULL | 2",
				"2026-02 | 2026-01 | a.com | ai_visits | - | 10 | 30 | 20 | 2 | true | 1",
				"2026-02 | 2026-01 | b.com | ai_visits | - | 20 | 20 | 0 | 0 | NULL | 2",
				"2026-02 | 2026-01 | a.com | channel_share | direct | 0.5 | 0.375 | -0.125 | -0.25 | NULL | 1",
				"2026-02 | 2026-01 | a.com | channel_share | organic_search | 0.5 | 0.625 | 0.125 | 0.25 | NULL | 2",
				"2026-02 | 2026-01 | b.com | channel_share | direct | 0.25 | 0.25 | 0 | 0 | NULL | 3",
				"2026-02 | 2026-01 | b.com | channel_share | organic_search | 0.75 | 0.75 | 0 | 0 | NULL | 4",
				"2026-02 | 2026-01 | a.com | global_rank | - | 100 | 80 | -20 | -0.2 | true | 1",
				"2026-02 | 2026-01 | b.com | global_rank | - | 300 | 350 | 50 | 0.166667 | false | 2",
				"2026-02 | 2026-01 | b.com | visits | - | 2000 | 1000 | -1000 | -0.5 | false | 1",
				"2026-02 | 2026-01 | a.com | visits | - | 1000 | 1500 | 500 | 0.5 | true | 2",
			},
		},
		{
			name: "changes_competitors",
			query: `SELECT snapshot_month, previous_month, domain, change, competitor, competitor_position,
				competitor_global_rank, competitor_total_visits, competitor_on_watchlist
				FROM changes_competitors ORDER BY domain, change, competitor`,
			want: []string{
				"2026-02 | 2026-01 | a.com | dropped | x.com | 1 | 50 | 9000 | false",
				"2026-02 | 2026-01 | a.com | new | z.com | 2 | 7000 | 400 | false",
				"2026-02 | 2026-01 | b.com | dropped | y.com | 2 | NULL | NULL | false",
			},
		},
		{
			name:  "changes_ai_platforms",
			query: `SELECT snapshot_month, previous_month, domain, change, platform, rank, share_pct FROM changes_ai_platforms ORDER BY domain, change, platform`,
			want: []string{
				"2026-02 | 2026-01 | a.com | dropped | perplexity.ai | 2 | 30",
				"2026-02 | 2026-01 | a.com | new | gemini.google.com | 2 | 40",
				"2026-02 | 2026-01 | b.com | new | chatgpt.com | 1 | 100",
			},
		},
		{
			name:  "changes_keywords",
			query: `SELECT snapshot_month, previous_month, domain, change, keyword, position, search_volume, estimated_value_usd FROM changes_keywords ORDER BY domain, change, keyword`,
			want: []string{
				"2026-02 | 2026-01 | a.com | dropped | boots | 2 | 500 | 20",
				"2026-02 | 2026-01 | a.com | new | sandals | 2 | 800 | 30",
			},
		},
		{
			name: "changes_top_countries",
			query: `SELECT snapshot_month, previous_month, domain, change, country_code, coalesce(country_name, '-'), position,
				previous_position, share, previous_share FROM changes_top_countries ORDER BY domain, change, country_code`,
			want: []string{
				"2026-02 | 2026-01 | a.com | entered | IT | Italy | 3 | 6 | 0.15 | 0.05",
				"2026-02 | 2026-01 | a.com | left | ES | - | 6 | 5 | 0.04 | 0.05",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			equalRows(t, tt.name, rows(t, db, tt.query), tt.want)
		})
	}
}

// TestViewsThreeMonths: once 2026-03 completes, each complete month is compared with the one
// before it, and the older comparison stays as it was.
func TestViewsThreeMonths(t *testing.T) {
	w := openWarehouse(t)
	db := w.DB()
	loadTwoMonths(t, db)
	completeThirdMonth(t, db)
	equalRows(t, "complete_months",
		rows(t, db, `SELECT snapshot_month, previous_month, run_id, status FROM complete_months ORDER BY 1`),
		[]string{"2026-01 | NULL | r1 | complete", "2026-02 | 2026-01 | r3 | complete", "2026-03 | 2026-02 | r6 | up_to_date"})
	equalRows(t, "changes_competitors",
		rows(t, db, `SELECT snapshot_month, domain, change, competitor, competitor_on_watchlist FROM changes_competitors ORDER BY ALL`),
		[]string{
			"2026-02 | a.com | dropped | x.com | false",
			"2026-02 | a.com | new | z.com | false",
			"2026-02 | b.com | dropped | y.com | false",
			// c.com is on the watchlist in 2026-02 but not loaded in 2026-03.
			"2026-03 | b.com | new | c.com | false",
		})
	equalRows(t, "changes_movers 2026-03 channel shares",
		rows(t, db, `SELECT domain, channel, change, mover_rank FROM changes_movers
			WHERE snapshot_month = '2026-03' AND metric = 'channel_share' ORDER BY mover_rank`),
		[]string{
			"b.com | direct | 0.25 | 1",
			"b.com | organic_search | -0.25 | 2",
			"a.com | direct | 0 | 3",
			"a.com | organic_search | 0 | 4",
		})
	// 2026-03 has no AI platforms, keywords or geography: "dropped" needs the domain loaded in
	// both months, and it is; every 2026-02 entry of a.com and b.com is gone.
	equalRows(t, "changes_ai_platforms 2026-03",
		rows(t, db, `SELECT domain, change, platform FROM changes_ai_platforms WHERE snapshot_month = '2026-03' ORDER BY ALL`),
		[]string{"a.com | dropped | chatgpt.com", "a.com | dropped | gemini.google.com", "b.com | dropped | chatgpt.com"})
}
