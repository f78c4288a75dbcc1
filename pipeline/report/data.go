package report

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"
	"time"
)

var snapshotRE = regexp.MustCompile(`^\d{4}-(0[1-9]|1[0-2])$`)

// site is one watchlist domain of the snapshot with its headline figures.
type site struct {
	Domain       string
	Title        string
	SnapshotDate string // meta.snapshot_date, YYYY-MM-DD or ""
	Period       string // traffic.period, YYYY-MM or ""
	Coverage     string
	GlobalRank   sql.NullInt64
	TotalVisits  sql.NullFloat64
	FromGA       bool
	AITotal      sql.NullInt64
	BounceRate   sql.NullFloat64
	PagesPerVis  sql.NullFloat64
	LastMonth    string // newest traffic_history month of the snapshot, YYYY-MM
	LastVisits   sql.NullInt64
	MoM          sql.NullFloat64 // change of LastVisits over the previous calendar month
	TopCountries string          // "US 41.0%, DE 12.5%, …"
}

type point struct {
	Month  time.Time
	Visits float64
}

type channelShare struct {
	Domain, Channel string
	Share, Avg      float64
}

type aiShare struct {
	Domain, Platform string
	SharePct         float64
	Estimated        sql.NullFloat64
}

type competitor struct {
	Domain, Competitor string
	Position           int
	CompRank           sql.NullInt64
	CompVisits         sql.NullFloat64
	Ratio              sql.NullFloat64
	OnWatchlist        bool
}

// data is everything the report shows for one snapshot.
type data struct {
	Snapshot    string
	Sites       []site // by total visits, descending
	Traffic     map[string][]point
	Channels    []channelShare
	AI          []aiShare
	Competitors []competitor
}

// load reads the snapshot's figures. It returns an error naming the snapshot and the snapshots
// that do exist when the warehouse has no sites rows for it.
func load(ctx context.Context, db *sql.DB, snapshot string) (*data, error) {
	if !snapshotRE.MatchString(snapshot) {
		return nil, fmt.Errorf("report: snapshot %q is not a month in the form YYYY-MM (e.g. 2026-01)", snapshot)
	}
	d := &data{Snapshot: snapshot, Traffic: map[string][]point{}}
	if err := d.loadSites(ctx, db); err != nil {
		return nil, err
	}
	if len(d.Sites) == 0 {
		have, err := snapshots(ctx, db)
		if err != nil {
			return nil, err
		}
		if len(have) == 0 {
			return nil, fmt.Errorf("report: snapshot %s has no data: the warehouse holds no snapshot yet; run `sitewatch run --snapshot %s` first", snapshot, snapshot)
		}
		return nil, fmt.Errorf("report: snapshot %s has no data in the warehouse (snapshots loaded: %s); pick one of those with --snapshot or run `sitewatch run --snapshot %s`",
			snapshot, strings.Join(have, ", "), snapshot)
	}
	for _, step := range []func(context.Context, *sql.DB) error{d.loadTraffic, d.loadCountries, d.loadChannels, d.loadAI, d.loadCompetitors} {
		if err := step(ctx, db); err != nil {
			return nil, err
		}
	}
	return d, nil
}

func snapshots(ctx context.Context, db *sql.DB) ([]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT DISTINCT snapshot_month FROM sites ORDER BY 1`)
	if err != nil {
		return nil, fmt.Errorf("report: list snapshots: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, fmt.Errorf("report: list snapshots: %w", err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

func (d *data) loadSites(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, `
		SELECT domain, coalesce(title, ''), coalesce(strftime(snapshot_date, '%Y-%m-%d'), ''),
		       coalesce(traffic_period, ''), coalesce(data_coverage, ''), global_rank, total_visits,
		       coalesce(is_data_from_ga, false), ai_total_visits, bounce_rate, pages_per_visit
		FROM sites WHERE snapshot_month = ?
		ORDER BY total_visits DESC NULLS LAST, domain`, d.Snapshot)
	if err != nil {
		return fmt.Errorf("report: read sites of %s: %w", d.Snapshot, err)
	}
	defer rows.Close()
	for rows.Next() {
		var s site
		if err := rows.Scan(&s.Domain, &s.Title, &s.SnapshotDate, &s.Period, &s.Coverage, &s.GlobalRank,
			&s.TotalVisits, &s.FromGA, &s.AITotal, &s.BounceRate, &s.PagesPerVis); err != nil {
			return fmt.Errorf("report: read sites of %s: %w", d.Snapshot, err)
		}
		d.Sites = append(d.Sites, s)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("report: read sites of %s: %w", d.Snapshot, err)
	}
	return nil
}

// loadTraffic reads the snapshot's own traffic history (not traffic_monthly, which mixes in
// later snapshots), so a report for a past month stays as it was.
func (d *data) loadTraffic(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, `
		SELECT domain, month, visits FROM traffic_history
		WHERE snapshot_month = ? AND visits IS NOT NULL
		ORDER BY domain, month`, d.Snapshot)
	if err != nil {
		return fmt.Errorf("report: read traffic_history of %s: %w", d.Snapshot, err)
	}
	defer rows.Close()
	for rows.Next() {
		var dom string
		var p point
		var v int64
		if err := rows.Scan(&dom, &p.Month, &v); err != nil {
			return fmt.Errorf("report: read traffic_history of %s: %w", d.Snapshot, err)
		}
		p.Visits = float64(v)
		d.Traffic[dom] = append(d.Traffic[dom], p)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("report: read traffic_history of %s: %w", d.Snapshot, err)
	}
	for i := range d.Sites {
		s := &d.Sites[i]
		pts := d.Traffic[s.Domain]
		if len(pts) == 0 {
			continue
		}
		last := pts[len(pts)-1]
		s.LastMonth = last.Month.Format("2006-01")
		s.LastVisits = sql.NullInt64{Int64: int64(last.Visits), Valid: true}
		if len(pts) > 1 {
			prev := pts[len(pts)-2]
			if prev.Month.Equal(last.Month.AddDate(0, -1, 0)) && prev.Visits != 0 {
				s.MoM = sql.NullFloat64{Float64: last.Visits/prev.Visits - 1, Valid: true}
			}
		}
	}
	return nil
}

func (d *data) loadCountries(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, `
		SELECT domain, string_agg(coalesce(country_name, country_code) || ' ' || printf('%.1f%%', share * 100), ', ' ORDER BY country_position)
		FROM top_countries
		WHERE snapshot_month = ? AND country_position <= 3 AND share IS NOT NULL
		GROUP BY domain`, d.Snapshot)
	if err != nil {
		return fmt.Errorf("report: read top_countries of %s: %w", d.Snapshot, err)
	}
	defer rows.Close()
	top := map[string]string{}
	for rows.Next() {
		var dom, s string
		if err := rows.Scan(&dom, &s); err != nil {
			return fmt.Errorf("report: read top_countries of %s: %w", d.Snapshot, err)
		}
		top[dom] = s
	}
	for i := range d.Sites {
		d.Sites[i].TopCountries = top[d.Sites[i].Domain]
	}
	return rows.Err()
}

func (d *data) loadChannels(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, `
		SELECT domain, channel, share, watchlist_avg_share FROM channel_mix
		WHERE snapshot_month = ? AND share IS NOT NULL
		ORDER BY domain, channel`, d.Snapshot)
	if err != nil {
		return fmt.Errorf("report: read channel_mix of %s: %w", d.Snapshot, err)
	}
	defer rows.Close()
	for rows.Next() {
		var c channelShare
		if err := rows.Scan(&c.Domain, &c.Channel, &c.Share, &c.Avg); err != nil {
			return fmt.Errorf("report: read channel_mix of %s: %w", d.Snapshot, err)
		}
		d.Channels = append(d.Channels, c)
	}
	return rows.Err()
}

func (d *data) loadAI(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, `
		SELECT p.domain, p.platform, p.share_pct, p.share_pct / 100 * s.ai_total_visits
		FROM ai_platforms p
		JOIN sites s ON s.snapshot_month = p.snapshot_month AND s.domain = p.domain
		WHERE p.snapshot_month = ? AND p.share_pct IS NOT NULL
		ORDER BY p.domain, p.rank NULLS LAST, p.platform`, d.Snapshot)
	if err != nil {
		return fmt.Errorf("report: read ai_platforms of %s: %w", d.Snapshot, err)
	}
	defer rows.Close()
	for rows.Next() {
		var a aiShare
		if err := rows.Scan(&a.Domain, &a.Platform, &a.SharePct, &a.Estimated); err != nil {
			return fmt.Errorf("report: read ai_platforms of %s: %w", d.Snapshot, err)
		}
		d.AI = append(d.AI, a)
	}
	return rows.Err()
}

func (d *data) loadCompetitors(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, `
		SELECT domain, competitor, competitor_position, competitor_global_rank,
		       competitor_total_visits, competitor_visits_ratio, competitor_on_watchlist
		FROM competitors WHERE snapshot_month = ?
		ORDER BY domain, competitor_position`, d.Snapshot)
	if err != nil {
		return fmt.Errorf("report: read competitors of %s: %w", d.Snapshot, err)
	}
	defer rows.Close()
	for rows.Next() {
		var c competitor
		if err := rows.Scan(&c.Domain, &c.Competitor, &c.Position, &c.CompRank, &c.CompVisits, &c.Ratio, &c.OnWatchlist); err != nil {
			return fmt.Errorf("report: read competitors of %s: %w", d.Snapshot, err)
		}
		d.Competitors = append(d.Competitors, c)
	}
	return rows.Err()
}
