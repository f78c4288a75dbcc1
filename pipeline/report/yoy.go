package report

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// loadYearAgo reads, for each site, the month a year before its latest history month and the
// first month year on year becomes available, from every snapshot's history up to this one:
// one snapshot holds only 12 months, so its own history never reaches a year back. The rule is
// traffic_monthly's (the newest snapshot with a value wins), restricted to snapshots up to the
// report's, so a report of a past month does not change when later months are loaded.
func (d *data) loadYearAgo(ctx context.Context, db *sql.DB) error {
	type yearAgo struct {
		first  time.Time
		visits sql.NullInt64
	}
	got := map[string]yearAgo{}
	err := each(ctx, db, `
		WITH best AS (
		    SELECT domain, month, visits FROM traffic_history
		    WHERE snapshot_month <= ? AND visits IS NOT NULL
		    QUALIFY row_number() OVER (PARTITION BY domain, month ORDER BY snapshot_month DESC) = 1
		),
		latest AS (
		    SELECT domain, max(month) AS month FROM traffic_history
		    WHERE snapshot_month = ? AND visits IS NOT NULL GROUP BY domain
		),
		first AS (SELECT domain, min(month) AS month FROM best GROUP BY domain)
		SELECT l.domain, f.month, y.visits
		FROM latest l
		JOIN first f ON f.domain = l.domain
		LEFT JOIN best y ON y.domain = l.domain AND y.month = CAST(l.month - INTERVAL 12 MONTH AS DATE)`,
		[]any{d.Snapshot, d.Snapshot}, func(r *sql.Rows) error {
			var dom string
			var y yearAgo
			if err := r.Scan(&dom, &y.first, &y.visits); err != nil {
				return err
			}
			got[dom] = y
			return nil
		})
	if err != nil {
		return fmt.Errorf("read the months a year earlier from traffic_history (snapshots up to %s): %w", d.Snapshot, err)
	}
	for i := range d.Sites {
		s := &d.Sites[i]
		y, ok := got[s.Domain]
		if !ok {
			continue
		}
		s.YoYFrom = y.first.AddDate(1, 0, 0)
		s.YearAgoVisits = sql.NullFloat64{Float64: float64(y.visits.Int64), Valid: y.visits.Valid}
	}
	return nil
}

// yoyText is a site's year-on-year change, or from which month it becomes available.
func (s *site) yoyText() (text, toneClass string) {
	if ch, ok := s.yoy(); ok {
		return signedPct(ch), changeTone(ch)
	}
	if !s.YoYFrom.IsZero() && s.YoYFrom.After(s.LastMonth) {
		return "from " + s.YoYFrom.Format("Jan 2006"), ""
	}
	return dash, ""
}

// yoyFrom is the earliest month any site's year on year becomes available, or zero.
func yoyFrom(d *data) time.Time {
	var first time.Time
	for _, s := range d.Sites {
		if !s.YoYFrom.IsZero() && (first.IsZero() || s.YoYFrom.Before(first)) {
			first = s.YoYFrom
		}
	}
	return first
}

// yoyPending is the year-on-year section when no domain has a month a year earlier yet: it
// says from when the comparison exists instead of leaving the section out.
func yoyPending(d *data) *chartSection {
	from := yoyFrom(d)
	if from.IsZero() {
		return &chartSection{Note: "No traffic history in the warehouse, so there is no year-on-year comparison."}
	}
	return &chartSection{Note: fmt.Sprintf("Year on year compares a month with the same month a year earlier. The warehouse's history "+
		"(every snapshot up to %s) starts in %s, so year on year becomes available from %s; each later snapshot adds a month.",
		d.Snapshot, from.AddDate(-1, 0, 0).Format("Jan 2006"), from.Format("Jan 2006"))}
}
