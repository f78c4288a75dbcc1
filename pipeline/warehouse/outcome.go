package warehouse

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"sitewatch/pipeline/model"
)

// outcomeSQL is every domain of the month with what it holds (bit 1 site-overview stored,
// bit 2 site-similar; loaded; the code of its latest 400), in byte order: a merge with the
// sorted watchlist then needs no map per domain.
const outcomeSQL = `SELECT domain, bit_or(stored)::INTEGER, bool_or(loaded), max(code) FROM (
	SELECT domain, CASE endpoint WHEN 'site-overview' THEN 1 ELSE 2 END AS stored, false AS loaded, NULL::VARCHAR AS code
	FROM raw_responses WHERE snapshot_month = $1 AND endpoint IN ('site-overview', 'site-similar')
	UNION ALL SELECT domain, 0, true, NULL FROM sites WHERE snapshot_month = $1
	UNION ALL SELECT domain, 0, false, arg_max(coalesce(code, ''), occurred_at) FROM fetch_errors
	WHERE snapshot_month = $1 AND http_status = 400 GROUP BY domain
) GROUP BY domain ORDER BY domain`

// Outcome counts what month holds for the domains of watchlist (normalized, unique). It is
// State's summary without State's maps: DuckDB groups and sorts the month's domains under its
// memory limit and they are merged with a sorted copy of the watchlist, so a run's end holds
// one string header per watchlist domain, not two maps (~280 MB of Go heap at a million).
func (w *Warehouse) Outcome(ctx context.Context, month string, watchlist []string) (*model.Outcome, error) {
	if err := checkSnapshot(month); err != nil {
		return nil, fmt.Errorf("outcome: %w", err)
	}
	if err := w.Flush(ctx); err != nil {
		return nil, fmt.Errorf("outcome of snapshot %s: %w", month, err)
	}
	sorted := slices.Clone(watchlist)
	slices.Sort(sorted)
	out := &model.Outcome{Rejected: map[string]string{}}
	next := 0 // sorted[next] is the first watchlist domain not yet passed
	err := QueryEach(ctx, w.db, outcomeSQL, []any{month}, func(rows *sql.Rows) error {
		var domain string
		var stored int
		var loaded bool
		var code sql.NullString
		if err := rows.Scan(&domain, &stored, &loaded, &code); err != nil {
			return err
		}
		out.AnyStored = out.AnyStored || stored != 0
		for next < len(sorted) && strings.Compare(sorted[next], domain) < 0 {
			next++
		}
		if next == len(sorted) || sorted[next] != domain {
			return nil // not on the watchlist
		}
		switch {
		case loaded:
			out.Loaded++
		case code.Valid:
			out.Rejected[domain] = code.String
		}
		if stored == 3 && !loaded {
			out.Unloadable++
		}
		return nil
	})
	if err == nil {
		err = w.db.QueryRowContext(ctx, `SELECT count(*) > 0 FROM raw_responses WHERE snapshot_month = ? AND endpoint = 'country-metadata'`, month).Scan(&out.CountriesLoaded)
	}
	if err != nil {
		return nil, fmt.Errorf("outcome of snapshot %s: %w", month, err)
	}
	out.AnyStored = out.AnyStored || out.CountriesLoaded
	return out, nil
}
