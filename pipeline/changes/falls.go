package changes

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"sitewatch/pipeline/discover"
	"sitewatch/pipeline/numfmt"
	"sitewatch/pipeline/warehouse"
)

// Fall is one of the month's largest falls in visits (LargestFalls): its own ranking, apart
// from the needs-attention list, which names only what is unusual for a domain.
type Fall struct {
	Rank      int     `json:"rank"` // 1 = the steepest fall
	Domain    string  `json:"domain"`
	Visits    float64 `json:"visits"`          // whole visits in the month
	Previous  float64 `json:"previous_visits"` // the calendar month before
	ChangePct float64 `json:"change_pct"`      // percent, -100 = vanished
	Lost      float64 `json:"visits_lost"`     // Previous - Visits
}

// FallsTitle is the largest falls' heading, the same words on every surface (changes, the
// report's section and headline card): "Largest falls in visits in 2026-10 (at least 10.0k
// visits the month before)".
func FallsTitle(month string, floor int64) string {
	return fmt.Sprintf("Largest falls in visits in %s (at least %s visits the month before)", month, numfmt.Count(float64(floor)))
}

// NoFalls is what every surface says when no domain above the floor lost visits.
const NoFalls = "no domain lost visits"

// Text is the fall in words, the same on every surface: "fell 35.0% (2.00M → 1.30M visits)",
// "fell 100.0% (800k → 0 visits)".
func (f Fall) Text() string {
	return fmt.Sprintf("fell %s (%s → %s visits)", strings.TrimPrefix(numfmt.Change(f.ChangePct/100), numfmt.Minus),
		numfmt.Count(f.Previous), numfmt.Count(f.Visits))
}

// largestFallsSQL ranks the month's falls by percent, then by the visits lost, among the
// month's watchlist domains that had at least the size floor the month before. Its visits are
// traffic_monthly's merged history (the newest snapshot with a value wins, as needs_attention
// reads it), taken for the month and the month before only: the view ranks every history row
// (at 100,000 domains 6.5 s CPU against 0.8 s), and the month's domains are a hash semi-join
// (a join condition on the month alone made DuckDB loop over every pair of rows: 36 s). The
// newest value is an aggregate, not a window: DuckDB spills a hash aggregate, and at 1,000,000
// domains the window (row_number over 4 million rows) ran out of `changes`' memory; the rows are
// the same (compared at 100,000 and 1,000,000 domains), for half the CPU.
const largestFallsSQL = `WITH best AS (
		SELECT domain, month, arg_max(visits, snapshot_month) AS visits
		FROM traffic_history
		WHERE (month = CAST($1 || '-01' AS DATE) OR month = CAST(CAST($1 || '-01' AS DATE) - INTERVAL 1 MONTH AS DATE))
			AND visits IS NOT NULL
		GROUP BY domain, month
	)
	SELECT c.domain, round(c.visits), round(p.visits), 100 * (c.visits / p.visits - 1), round(p.visits - c.visits)
	FROM best c
	JOIN best p ON p.domain = c.domain AND p.month = CAST(c.month - INTERVAL 1 MONTH AS DATE)
	SEMI JOIN (SELECT domain FROM sites WHERE snapshot_month = $1) s ON s.domain = c.domain
	WHERE c.month = CAST($1 || '-01' AS DATE) AND p.visits >= $2 AND c.visits < p.visits
	ORDER BY c.visits / p.visits, p.visits - c.visits DESC, c.domain
	LIMIT $3`

// ReadLargestFalls returns the n largest falls in visits of month (YYYY-MM) among the
// watchlist domains with at least minVisits visits the month before (0: the needs-attention
// default), steepest first: a fall to zero leads. It returns the warehouse's error.
func ReadLargestFalls(ctx context.Context, db *sql.DB, month string, minVisits int64, n int) ([]Fall, error) {
	if minVisits <= 0 {
		minVisits = DefaultAttentionMinVisits
	}
	var out []Fall
	err := warehouse.QueryEach(ctx, db, largestFallsSQL, []any{month, minVisits, n}, func(rows *sql.Rows) error {
		f := Fall{Rank: len(out) + 1}
		if err := rows.Scan(&f.Domain, &f.Visits, &f.Previous, &f.ChangePct, &f.Lost); err != nil {
			return err
		}
		out = append(out, f)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("largest falls of %s: %w", month, err)
	}
	return out, nil
}

// WorthTrackingLines is how many candidates the "worth tracking" list names by default.
const WorthTrackingLines = 3

// ReadWorthTracking returns the month's best n candidates not on the watchlist at or above the
// size floor (discover.min_visits; 0: its default): the list `sitewatch discover` leads with,
// never counted as domains needing attention. A month without similar sites has none. With
// current (the file's lists mark holds: AttentionSettings.StoredCurrent) it reads the ranking a
// writer stored for the latest complete month, when it holds n.
func ReadWorthTracking(ctx context.Context, db *sql.DB, month string, minVisits int64, n int, current bool) ([]discover.Candidate, error) {
	var held int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM similar_sites WHERE snapshot_month = ?`, month).Scan(&held); err != nil {
		return nil, fmt.Errorf("worth tracking in %s: %w", month, err)
	}
	if held == 0 {
		return nil, nil
	}
	q := discover.Query{Snapshot: month, Top: n, MinVisits: minVisits}
	if current {
		cands, ok, err := discover.StoredCandidates(ctx, db, q, month)
		if err != nil || ok {
			return cands, err
		}
	}
	_, cands, err := discover.Candidates(ctx, db, q)
	if err != nil {
		return nil, fmt.Errorf("worth tracking in %s: %w", month, err)
	}
	return cands, nil
}
