package report

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
)

// perRowCompetitorsQuery is competitorsQuery before each spelling was folded once: every
// row's competitor folded where it stands. The rows must stay the same.
const perRowCompetitorsQuery = `
	WITH c AS (
	    SELECT domain, competitor_global_rank AS rank, competitor_total_visits AS visits,
	           competitor_visits_ratio AS ratio, competitor_on_watchlist AS on_list,
	           regexp_replace(regexp_replace(lower(trim(competitor)), '\.$', ''), '^www\.', '') AS name
	    FROM competitors WHERE snapshot_month = ?
	),
	agg AS (
	    SELECT name, count(DISTINCT domain) AS listed,
	           list_slice(list_sort(list_distinct(list(domain))), 1, ?) AS some_names,
	           max(visits) AS visits, min(rank) FILTER (WHERE rank > 0) AS rank,
	           min(ratio) AS lo, max(ratio) AS hi, coalesce(bool_or(on_list), false) AS on_list
	    FROM c GROUP BY name
	)
	SELECT name, listed, some_names, visits, rank, lo, hi, on_list,
	       count(*) FILTER (WHERE NOT on_list) OVER (), count(*) FILTER (WHERE on_list) OVER (),
	       (SELECT count(DISTINCT domain) FROM c)
	FROM agg
	ORDER BY on_list, listed DESC, visits DESC NULLS LAST, name
	LIMIT ?`

// TestCompetitorsFoldEachSpellingOnce: the Competitors section's query gives the rows of the
// per-row query it replaced on the rich fixture (several spellings of one competitor, one
// listed by every domain, competitors on the watchlist), every row and only the first few.
func TestCompetitorsFoldEachSpellingOnce(t *testing.T) {
	db := openWarehouse(t)
	loadRich(t, db)
	for _, month := range []string{"2026-01", "2026-02"} {
		for _, limit := range []int{3, 1_000_000} {
			want := competitorRows(t, db, perRowCompetitorsQuery, month, maxNamed, limit)
			got := competitorRows(t, db, competitorsQuery, month, maxNamed, limit)
			if len(want) < 2 {
				t.Fatalf("%s: %d competitor rows: the fixture needs more", month, len(want))
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s, limit %d: rows\n%s\nwant\n%s", month, limit, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
	}
}

func competitorRows(t *testing.T, db *sql.DB, query, month string, named, limit int) []string {
	t.Helper()
	var out []string
	err := each(context.Background(), db, query, []any{month, named, limit}, func(r *sql.Rows) error {
		vals := make([]any, 11)
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := r.Scan(ptrs...); err != nil {
			return err
		}
		out = append(out, fmt.Sprint(vals...))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
