package report

import (
	"context"
	"database/sql"
	"fmt"
	"io"
)

// sitesQuery reads one row per loaded domain of the snapshot with every figure the report
// derives from other tables, aggregated in DuckDB instead of in Go maps (a map of 1.2 million
// history points and two maps of 100,000 domains at 100,000 domains):
//
//   - the global rank in the newest earlier snapshot;
//   - from the snapshot's own traffic history (not traffic_monthly, which mixes in later
//     snapshots, so a report for a past month stays as it was): the newest month, its visits
//     and the calendar month before's;
//   - from every snapshot's history up to this one (one snapshot holds only 12 months): the
//     visits a year before the newest month, and the first month year on year exists
//     (bestHistory's rule: the newest snapshot with a value wins, here arg_max over the one
//     month needed instead of a window over the whole history).
//
// The history is read in two grouped passes and one join on the domain alone: span finds each
// domain's newest own month and its first month; figures picks the three months it needs from
// the rows of those domains with filtered aggregates. Before, five joins on (domain, month) and
// two groupings took 149 s at 100,000 domains (load 12–20).
const sitesQuery = `
	WITH held AS (
	    SELECT domain, month, visits, snapshot_month FROM traffic_history
	    WHERE snapshot_month <= ? AND visits IS NOT NULL
	),
	span AS (
	    SELECT domain, max(month) FILTER (WHERE snapshot_month = ?) AS last, min(month) AS first
	    FROM held GROUP BY domain
	),
	figures AS (
	    SELECT h.domain, any_value(s.last) AS last, any_value(s.first) AS first,
	           any_value(h.visits) FILTER (WHERE h.snapshot_month = ? AND h.month = s.last) AS visits,
	           any_value(h.visits) FILTER (WHERE h.snapshot_month = ? AND h.month = CAST(s.last - INTERVAL 1 MONTH AS DATE)) AS prev_visits,
	           arg_max(h.visits, h.snapshot_month) FILTER (WHERE h.month = CAST(s.last - INTERVAL 12 MONTH AS DATE)) AS year_ago
	    FROM held h JOIN span s ON s.domain = h.domain
	    WHERE s.last IS NOT NULL
	      AND h.month IN (s.last, CAST(s.last - INTERVAL 1 MONTH AS DATE), CAST(s.last - INTERVAL 12 MONTH AS DATE))
	    GROUP BY h.domain
	),
	prev AS (
	    SELECT domain, global_rank FROM sites
	    WHERE snapshot_month = (SELECT max(snapshot_month) FROM sites WHERE snapshot_month < ?)
	)
	SELECT s.domain, coalesce(s.title, ''), coalesce(strftime(s.snapshot_date, '%Y-%m-%d'), ''),
	       coalesce(s.traffic_period, ''), coalesce(s.category_name, ''), s.global_rank, s.total_visits,
	       coalesce(s.is_data_from_ga, false), s.ai_total_visits, s.bounce_rate, s.pages_per_visit,
	       s.average_visit_duration_seconds, p.global_rank,
	       f.last, f.visits::DOUBLE, f.prev_visits::DOUBLE, f.year_ago::DOUBLE, f.first
	FROM sites s
	LEFT JOIN prev p ON p.domain = s.domain
	LEFT JOIN figures f ON f.domain = s.domain
	WHERE s.snapshot_month = ?
	ORDER BY s.total_visits DESC NULLS LAST, s.domain`

// loadSites streams every loaded domain of the snapshot (sitesQuery), most visited first,
// through a sitePass: d.Sites keeps only the rows the page names (sitepass.go), d.Totals
// every domain's totals, and csv (when not nil) receives every domain's row as it passes.
// The needs-attention list must be read first: its domains' rows are kept wherever they fall.
func (d *data) loadSites(ctx context.Context, db *sql.DB, csv io.Writer) error {
	pass, err := newSitePass(d, csv)
	if err != nil {
		return fmt.Errorf("write %s: %w", d.CSVName, err)
	}
	args := []any{d.Snapshot, d.Snapshot, d.Snapshot, d.Snapshot, d.Snapshot, d.Snapshot}
	err = each(ctx, db, sitesQuery, args, func(r *sql.Rows) error {
		s, err := scanSite(r)
		if err != nil {
			return err
		}
		return pass.add(s)
	})
	if err != nil {
		return fmt.Errorf("read sites with their history (snapshots up to %s): %w", d.Snapshot, err)
	}
	if err := pass.finish(); err != nil {
		return fmt.Errorf("write %s: %w", d.CSVName, err)
	}
	return nil
}

func scanSite(r *sql.Rows) (site, error) {
	var s site
	var last, first sql.NullTime
	if err := r.Scan(&s.Domain, &s.Title, &s.SnapshotDate, &s.Period, &s.Category, &s.GlobalRank,
		&s.TotalVisits, &s.FromGA, &s.AITotal, &s.BounceRate, &s.PagesPerVis, &s.DurationSec, &s.PrevRank,
		&last, &s.LastVisits, &s.PrevVisits, &s.YearAgoVisits, &first); err != nil {
		return s, err
	}
	if last.Valid {
		s.LastMonth = last.Time
	}
	if first.Valid {
		s.YoYFrom = first.Time.AddDate(1, 0, 0)
	}
	return s, nil
}

// countSites is how many domains the snapshot loaded: 0 sends load to noData before any
// other read.
func countSites(ctx context.Context, db *sql.DB, snapshot string) (int, error) {
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sites WHERE snapshot_month = ?`, snapshot).Scan(&n); err != nil {
		return 0, fmt.Errorf("count the sites of snapshot %s: %w", snapshot, err)
	}
	return n, nil
}

// loadPrevious finds the newest earlier snapshot, "" when there is none.
func (d *data) loadPrevious(ctx context.Context, db *sql.DB) error {
	var prev sql.NullString
	if err := db.QueryRowContext(ctx, `SELECT max(snapshot_month) FROM sites WHERE snapshot_month < ?`, d.Snapshot).Scan(&prev); err != nil {
		return fmt.Errorf("find the previous snapshot: %w", err)
	}
	d.PrevSnapshot = prev.String
	return nil
}
