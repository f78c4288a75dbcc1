package report

import (
	"context"
	"database/sql"
	"fmt"
	"html/template"
	"math"
	"time"

	"sitewatch/pipeline/numfmt"
)

// yoyText is a site's year-on-year change, or from which month it becomes available.
func (s *site) yoyText() (text, toneClass string) {
	if ch, ok := s.yoy(); ok {
		return numfmt.Change(ch), changeTone(ch)
	}
	if !s.YoYFrom.IsZero() && s.YoYFrom.After(s.LastMonth) {
		return "from " + s.YoYFrom.Format("Jan 2006"), ""
	}
	return numfmt.Dash, ""
}

// yoyFrom is the earliest month any site's year on year becomes available, or zero.
func yoyFrom(d *data) time.Time { return d.Totals.YoYFrom }

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

// bestHistory is every domain's monthly visits over every snapshot up to the report's, the
// newest snapshot's value winning (traffic_monthly's rule, restricted so a past report stays
// as it was). One snapshot holds only 12 months; together they hold the whole history.
const bestHistory = `
	WITH best AS (
	    SELECT domain, month, visits FROM traffic_history
	    WHERE snapshot_month <= ? AND visits IS NOT NULL
	    QUALIFY row_number() OVER (PARTITION BY domain, month ORDER BY snapshot_month DESC) = 1
	)`

// loadHistory reads the whole history of the shown domains (the trend charts' and the flagged
// domains' panels), up to each domain's latest month in this snapshot.
func (d *data) loadHistory(ctx context.Context, db *sql.DB) error {
	d.History = map[string][]point{}
	if len(d.Shown) == 0 {
		return nil
	}
	in, args := d.shownIn()
	err := each(ctx, db, bestHistory+`
		SELECT domain, month, visits FROM best WHERE domain IN (`+in+`)
		ORDER BY domain, month`, args, func(r *sql.Rows) error {
		var dom string
		var p point
		var v int64
		if err := r.Scan(&dom, &p.Month, &v); err != nil {
			return err
		}
		p.Visits = float64(v)
		d.History[dom] = append(d.History[dom], p)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read the whole traffic history (snapshots up to %s): %w", d.Snapshot, err)
	}
	last := map[string]time.Time{}
	for _, s := range d.Sites {
		if _, ok := d.History[s.Domain]; ok {
			last[s.Domain] = s.LastMonth
		}
	}
	for dom, pts := range d.History {
		lm := last[dom]
		for len(pts) > 0 && !lm.IsZero() && pts[len(pts)-1].Month.After(lm) {
			pts = pts[:len(pts)-1]
		}
		d.History[dom] = pts
	}
	return nil
}

// yearPair is one calendar month of the watchlist's visits this year and a year earlier,
// summed over the domains holding both months.
type yearPair struct {
	Month      time.Time
	Cur, Prev  float64
	Domains    int
	Comparable bool
}

// loadYearPairs reads the 12 months up to the watchlist's latest month, each against the same
// month a year earlier, over the domains that hold both.
func (d *data) loadYearPairs(ctx context.Context, db *sql.DB) error {
	last := latestMonth(d)
	if last.IsZero() {
		return nil
	}
	first := last.AddDate(0, -11, 0)
	got := map[time.Time]yearPair{}
	// Only the 24 months compared are read, each (domain, month) once, the newest snapshot's
	// value winning (bestHistory's rule, grouped rather than windowed: a window sorted the
	// whole history, 13 s of the report at 100,000 domains). A month of the window and the
	// month a year before it meet on one key (the later month), grouped rather than joined.
	err := each(ctx, db, `
		WITH best AS (
		    SELECT domain, month, arg_max(visits, snapshot_month) AS visits FROM traffic_history
		    WHERE snapshot_month <= ? AND visits IS NOT NULL
		      AND month BETWEEN CAST(?::DATE - INTERVAL 12 MONTH AS DATE) AND ?
		    GROUP BY domain, month
		),
		both_months AS (
		    SELECT CASE WHEN month >= ? THEN month ELSE CAST(month + INTERVAL 12 MONTH AS DATE) END AS m,
		           max(visits) FILTER (WHERE month >= ?) AS cur, max(visits) FILTER (WHERE month < ?) AS prev
		    FROM best GROUP BY domain, m
		    HAVING cur IS NOT NULL AND prev IS NOT NULL
		)
		SELECT m, sum(cur)::DOUBLE, sum(prev)::DOUBLE, count(*) FROM both_months GROUP BY m`,
		[]any{d.Snapshot, first, last, first, first, first}, func(r *sql.Rows) error {
			var y yearPair
			if err := r.Scan(&y.Month, &y.Cur, &y.Prev, &y.Domains); err != nil {
				return err
			}
			y.Comparable = true
			got[y.Month] = y
			return nil
		})
	if err != nil {
		return fmt.Errorf("read this year against last year (snapshots up to %s): %w", d.Snapshot, err)
	}
	if len(got) == 0 {
		return nil
	}
	for m := first; !m.After(last); m = m.AddDate(0, 1, 0) {
		y, ok := got[m]
		if !ok {
			y = yearPair{Month: m}
		}
		d.YearPairs = append(d.YearPairs, y)
	}
	return nil
}

// yearVsYear is the Year on year section's line chart of the watchlist's visits in each of
// the latest 12 months against the same month a year earlier; nil until two months exist.
type yearVsYear struct {
	SVG              template.HTML
	ThisYear, Before string // legend colours
	Shown, YearAgo   string // the months the lines draw, "Nov 2025 – Oct 2026", and a year earlier
	Note             string
}

// monthSpan names the months from first to last: "Nov 2025 – Oct 2026", "Oct 2026".
func monthSpan(first, last time.Time) string {
	if first.Equal(last) {
		return last.Format("Jan 2006")
	}
	return first.Format("Jan 2006") + " – " + last.Format("Jan 2006")
}

func buildYearVsYear(d *data) *yearVsYear {
	var pairs []yearPair
	for _, p := range d.YearPairs {
		if p.Comparable {
			pairs = append(pairs, p)
		}
	}
	if len(pairs) < 2 {
		return nil
	}
	minN, maxN := pairs[0].Domains, pairs[0].Domains
	for _, p := range pairs {
		minN, maxN = min(minN, p.Domains), max(maxN, p.Domains)
	}
	over := count(maxN) + " domains"
	if minN != maxN {
		over = count(minN) + " to " + count(maxN) + " domains (those holding both months)"
	}
	last := pairs[len(pairs)-1].Month
	return &yearVsYear{
		SVG: yearLines(pairs), ThisYear: barColor, Before: mutedColor,
		Shown: monthSpan(pairs[0].Month, last), YearAgo: monthSpan(pairs[0].Month.AddDate(-1, 0, 0), last.AddDate(-1, 0, 0)),
		Note: fmt.Sprintf("The watchlist's visits per month, %s to %s, against the same months a year earlier, summed over the %s; scaled from the lowest to the highest month (both labelled). Point at or tap a month for both figures.",
			pairs[0].Month.Format("Jan 2006"), last.Format("Jan 2006"), over),
	}
}

// yearLines draws this year (solid) and a year earlier (dashed) on one fluid chart.
func yearLines(pairs []yearPair) template.HTML {
	const h, top, plotH, x0, x1 = 156.0, 22.0, 100.0, 2.0, 98.0
	s := newSVG(0, h, "watchlist visits per month, this year against a year earlier")
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range pairs {
		lo, hi = math.Min(lo, math.Min(p.Cur, p.Prev)), math.Max(hi, math.Max(p.Cur, p.Prev))
	}
	pad := math.Max((hi-lo)*0.06, hi*0.001+1)
	fy := func(v float64) float64 { return (v - lo + pad) / (hi - lo + 2*pad) }
	py := func(v float64) float64 { return top + (1-fy(v))*plotH }
	first, last := monthIndex(pairs[0].Month), monthIndex(pairs[len(pairs)-1].Month)
	fx := func(t time.Time) float64 { return (monthIndex(t) - first) / (last - first) }
	xp := func(t time.Time) float64 { return x0 + fx(t)*(x1-x0) }
	s.lineP(0, py(hi), 100, py(hi), gridColor, 1)
	s.lineP(0, py(lo), 100, py(lo), gridColor, 1)
	s.textP(0, 0, py(hi)-4, valueSize, "start", mutedColor, "high "+numfmt.Count(hi))
	s.textP(0, 0, py(lo)+13, valueSize, "start", mutedColor, "low "+numfmt.Count(lo))
	cur, prev := make([][2]float64, len(pairs)), make([][2]float64, len(pairs))
	for i, p := range pairs {
		cur[i], prev[i] = [2]float64{fx(p.Month), fy(p.Cur)}, [2]float64{fx(p.Month), fy(p.Prev)}
	}
	s.plotLines(x0, x1, top, plotH, []plotLine{{Points: prev, Color: mutedColor, Width: 1.5, Dashed: true}, {Points: cur, Color: barColor, Width: 2}})
	bandW := (x1 - x0) / float64(len(pairs)-1)
	for i, p := range pairs {
		s.band(math.Max(0, xp(p.Month)-bandW/2), top-6, bandW, plotH+12, fmt.Sprintf("%s: %s · %s: %s (%s), %s domains",
			p.Month.Format("Jan 2006"), numfmt.Count(p.Cur), p.Month.AddDate(-1, 0, 0).Format("Jan 2006"), numfmt.Count(p.Prev), numfmt.Change(p.Cur/p.Prev-1), count(p.Domains)))
		if (len(pairs)-1-i)%2 != 0 { // every other month, ending on the latest
			continue
		}
		x, anchor := xp(p.Month), "middle"
		switch i {
		case 0:
			x, anchor = 0, "start"
		case len(pairs) - 1:
			x, anchor = 100, "end"
		}
		s.textP(x, 0, h-4, valueSize, anchor, mutedColor, p.Month.Format("Jan"))
	}
	return s.fluidHTML()
}
