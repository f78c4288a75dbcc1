package report

import (
	"context"
	"database/sql"
	"fmt"
)

// sitesQuery reads one row per loaded domain of the snapshot with every figure the report
// derives from other tables, joined in DuckDB instead of in Go maps (a map of 1.2 million
// history points and two maps of 100,000 domains at 100,000 domains):
//
//   - the global rank in the newest earlier snapshot;
//   - from the snapshot's own traffic history (not traffic_monthly, which mixes in later
//     snapshots, so a report for a past month stays as it was): the newest month, its visits
//     and the calendar month before's;
//   - from every snapshot's history up to this one (one snapshot holds only 12 months): the
//     visits a year before the newest month, and the first month year on year exists
//     (bestHistory's rule: the newest snapshot with a value wins, here arg_max over the one
//     month needed instead of a window over the whole history, which took minutes at 100,000
//     domains on a busy machine).
const sitesQuery = `
	WITH own AS (
	    SELECT domain, month, visits FROM traffic_history
	    WHERE snapshot_month = ? AND visits IS NOT NULL
	),
	last_month AS (SELECT domain, max(month) AS month FROM own GROUP BY domain),
	latest AS (
	    SELECT l.domain, l.month, o.visits, b.visits AS prev_visits
	    FROM last_month l
	    JOIN own o ON o.domain = l.domain AND o.month = l.month
	    LEFT JOIN own b ON b.domain = l.domain AND b.month = CAST(l.month - INTERVAL 1 MONTH AS DATE)
	),
	held AS (
	    SELECT domain, month, visits, snapshot_month FROM traffic_history
	    WHERE snapshot_month <= ? AND visits IS NOT NULL
	),
	first AS (SELECT domain, min(month) AS month FROM held GROUP BY domain),
	year_ago AS (
	    SELECT l.domain, arg_max(h.visits, h.snapshot_month) AS visits
	    FROM latest l JOIN held h ON h.domain = l.domain AND h.month = CAST(l.month - INTERVAL 12 MONTH AS DATE)
	    GROUP BY l.domain
	),
	prev AS (
	    SELECT domain, global_rank FROM sites
	    WHERE snapshot_month = (SELECT max(snapshot_month) FROM sites WHERE snapshot_month < ?)
	)
	SELECT s.domain, coalesce(s.title, ''), coalesce(strftime(s.snapshot_date, '%Y-%m-%d'), ''),
	       coalesce(s.traffic_period, ''), coalesce(s.category_name, ''), s.global_rank, s.total_visits,
	       coalesce(s.is_data_from_ga, false), s.ai_total_visits, s.bounce_rate, s.pages_per_visit,
	       s.average_visit_duration_seconds, p.global_rank,
	       l.month, l.visits::DOUBLE, l.prev_visits::DOUBLE, y.visits::DOUBLE, f.month
	FROM sites s
	LEFT JOIN prev p ON p.domain = s.domain
	LEFT JOIN latest l ON l.domain = s.domain
	LEFT JOIN first f ON f.domain = s.domain AND l.domain IS NOT NULL
	LEFT JOIN year_ago y ON y.domain = s.domain
	WHERE s.snapshot_month = ?
	ORDER BY s.total_visits DESC NULLS LAST, s.domain`

// loadSites reads every loaded domain of the snapshot (sitesQuery), most visited first.
func (d *data) loadSites(ctx context.Context, db *sql.DB) error {
	err := each(ctx, db, sitesQuery, []any{d.Snapshot, d.Snapshot, d.Snapshot, d.Snapshot}, func(r *sql.Rows) error {
		var s site
		var last, first sql.NullTime
		if err := r.Scan(&s.Domain, &s.Title, &s.SnapshotDate, &s.Period, &s.Category, &s.GlobalRank,
			&s.TotalVisits, &s.FromGA, &s.AITotal, &s.BounceRate, &s.PagesPerVis, &s.DurationSec, &s.PrevRank,
			&last, &s.LastVisits, &s.PrevVisits, &s.YearAgoVisits, &first); err != nil {
			return err
		}
		if last.Valid {
			s.LastMonth = last.Time
		}
		if first.Valid {
			s.YoYFrom = first.Time.AddDate(1, 0, 0)
		}
		d.Sites = append(d.Sites, s)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read sites with their history (snapshots up to %s): %w", d.Snapshot, err)
	}
	return d.loadPrevious(ctx, db)
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
