package report

import (
	"reflect"
	"strings"
	"testing"
)

// rowsOf turns "a | b | c" lines into rows for compact expectations.
func rowsOf(lines ...string) [][]string {
	out := make([][]string, len(lines))
	for i, l := range lines {
		parts := strings.Split(l, "|")
		for j := range parts {
			parts[j] = strings.TrimSpace(parts[j])
		}
		out[i] = parts
	}
	return out
}

func TestViews(t *testing.T) {
	db := openWarehouse(t)
	loadFixture(t, db)
	tests := []struct {
		name  string
		query string
		want  [][]string
	}{
		{
			// Latest snapshot wins (a.com 2025-12: 1100 -> 1200), a NULL in the newer snapshot
			// does not hide an older value (a.com 2025-10), growth bases are calendar months
			// (b.com 2025-11 has no 2025-10 although 2025-09 is the previous row), a zero base
			// gives NULL (c.com 2025-12), yoy needs the month a year earlier (a.com 2025-12).
			name: "traffic_monthly",
			query: `SELECT domain, month, visits, source_snapshot, is_estimate, prev_month_visits, mom_change,
				year_ago_visits, yoy_change FROM traffic_monthly ORDER BY domain, month`,
			want: rowsOf(
				"a.com | 2024-12-01 | 800  | 2026-01 | true  | NULL | NULL     | NULL | NULL",
				"a.com | 2025-10-01 | 900  | 2026-01 | true  | NULL | NULL     | NULL | NULL",
				"a.com | 2025-11-01 | 1000 | 2026-02 | true  | 900  | 0.111111 | NULL | NULL",
				"a.com | 2025-12-01 | 1200 | 2026-02 | true  | 1000 | 0.200000 | 800  | 0.500000",
				"a.com | 2026-01-01 | 1500 | 2026-02 | true  | 1200 | 0.250000 | NULL | NULL",
				"b.com | 2025-09-01 | 100  | 2026-01 | false | NULL | NULL     | NULL | NULL",
				"b.com | 2025-11-01 | 200  | 2026-01 | false | NULL | NULL     | NULL | NULL",
				"b.com | 2025-12-01 | 250  | 2026-02 | false | 200  | 0.250000 | NULL | NULL",
				"c.com | 2025-11-01 | 0    | 2026-01 | true  | NULL | NULL     | NULL | NULL",
				"c.com | 2025-12-01 | 50   | 2026-01 | true  | 0    | NULL     | NULL | NULL",
			),
		},
		{
			name:  "latest_sites",
			query: `SELECT domain, snapshot_month, global_rank, title FROM latest_sites ORDER BY domain`,
			want: rowsOf(
				"a.com | 2026-02 | 90   | A <Shop>",
				"b.com | 2026-02 | 250  | B",
				"c.com | 2026-01 | 9000 | C",
			),
		},
		{
			// Averages are per snapshot and channel, over the domains with a value.
			name: "channel_mix",
			query: `SELECT snapshot_month, domain, channel, share, watchlist_avg_share, diff_from_avg, watchlist_domains
				FROM channel_mix ORDER BY snapshot_month, channel, domain`,
			want: rowsOf(
				"2026-01 | a.com | direct         | 0.500000 | 0.500000 | 0.000000  | 3",
				"2026-01 | b.com | direct         | 0.250000 | 0.500000 | -0.250000 | 3",
				"2026-01 | c.com | direct         | 0.750000 | 0.500000 | 0.250000  | 3",
				"2026-01 | a.com | organic_search | 0.250000 | 0.375000 | -0.125000 | 2",
				"2026-01 | b.com | organic_search | 0.500000 | 0.375000 | 0.125000  | 2",
				"2026-02 | a.com | direct         | 0.375000 | 0.500000 | -0.125000 | 2",
				"2026-02 | b.com | direct         | 0.625000 | 0.500000 | 0.125000  | 2",
			),
		},
		{
			// Ties broken by code; lower-case codes matched; unknown codes keep a NULL name.
			name: "top_countries",
			query: `SELECT snapshot_month, domain, country_position, country_code, country_alpha3, country_name, share
				FROM top_countries ORDER BY snapshot_month, domain, country_position`,
			want: rowsOf(
				"2026-02 | a.com | 1 | US | USA  | United States | 0.500000",
				"2026-02 | a.com | 2 | DE | DEU  | Germany       | 0.200000",
				"2026-02 | a.com | 3 | FR | FRA  | France        | 0.200000",
				"2026-02 | a.com | 4 | ZZ | NULL | NULL          | 0.100000",
			),
		},
		{
			// History rows win over the current share for the same month; the newest snapshot
			// wins (chatgpt 2025-12: 60 -> 58); estimate = share_pct/100 x that snapshot's
			// ai_total_visits; platforms without history appear at the snapshot's period.
			name: "ai_platform_trend",
			query: `SELECT domain, platform, month, share_pct, snapshot_ai_total_visits, estimated_visits, source_snapshot, source
				FROM ai_platform_trend ORDER BY domain, platform, month`,
			want: rowsOf(
				"a.com | chatgpt.com       | 2025-11-01 | 55.000000 | 1000 | 550.000000  | 2026-01 | history",
				"a.com | chatgpt.com       | 2025-12-01 | 58.000000 | 2000 | 1160.000000 | 2026-02 | history",
				"a.com | chatgpt.com       | 2026-01-01 | 50.000000 | 2000 | 1000.000000 | 2026-02 | history",
				"a.com | gemini.google.com | 2026-01-01 | 30.000000 | 2000 | 600.000000  | 2026-02 | current",
				"a.com | perplexity.ai     | 2025-12-01 | 40.000000 | 1000 | 400.000000  | 2026-01 | current",
			),
		},
		{
			// www.B.com counts as the watchlist's b.com; c.com is not loaded in 2026-02.
			name: "competitors",
			query: `SELECT snapshot_month, domain, competitor_position, competitor, domain_global_rank, competitor_global_rank,
				domain_total_visits, competitor_total_visits, competitor_visits_ratio, competitor_on_watchlist
				FROM competitors ORDER BY snapshot_month, domain, competitor_position`,
			want: rowsOf(
				"2026-01 | a.com | 1 | www.B.com | 100  | 310  | 5000.000000 | 2100.000000  | 0.420000  | true",
				"2026-01 | a.com | 2 | x.com     | 100  | 50   | 5000.000000 | 10000.000000 | 2.000000  | false",
				"2026-01 | b.com | 1 | a.com     | 300  | 101  | 2000.000000 | 5100.000000  | 2.550000  | true",
				"2026-01 | c.com | 1 | a.com     | 9000 | 101  | 100.000000  | 5100.000000  | 51.000000 | true",
				"2026-02 | a.com | 1 | b.com     | 90   | 260  | 6000.000000 | 2400.000000  | 0.400000  | true",
				"2026-02 | a.com | 2 | c.com     | 90   | 8000 | 6000.000000 | NULL         | NULL      | false",
				"2026-02 | b.com | 1 | z.com     | 250  | NULL | 2500.000000 | 700.000000   | 0.280000  | false",
			),
		},
		{
			// Only a.com and b.com list each other (2026-01); c.com lists a.com one way only,
			// and in 2026-02 b.com no longer lists a.com.
			name: "keyword_overlap",
			query: `SELECT snapshot_month, domain, other_domain, '[' || keyword || ']', domain_keyword_position, other_keyword_position,
				domain_search_volume, other_search_volume, domain_estimated_value_usd, other_estimated_value_usd,
				domain_cpc_usd, other_cpc_usd
				FROM keyword_overlap ORDER BY snapshot_month, domain, keyword`,
			want: rowsOf(
				"2026-01 | a.com | b.com | [Shoes]  | 1 | 2 | 1000 | 1100 | 50.000000 | 70.000000 | 1.500000 | 1.250000",
				"2026-01 | b.com | a.com | [shoes ] | 2 | 1 | 1100 | 1000 | 70.000000 | 50.000000 | 1.250000 | 1.500000",
			),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := query(t, db, tt.query)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("%s:\ngot:\n%s\nwant:\n%s", tt.name, table(got), table(tt.want))
			}
		})
	}
}

func table(rows [][]string) string {
	var b strings.Builder
	for _, r := range rows {
		b.WriteString("  " + strings.Join(r, " | ") + "\n")
	}
	return b.String()
}
