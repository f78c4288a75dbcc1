package report

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"sitewatch/pipeline/changes"
	"sitewatch/pipeline/discover"
	"sitewatch/pipeline/months"
	"sitewatch/pipeline/warehouse"
)

var snapshotRE = regexp.MustCompile(`^\d{4}-(0[1-9]|1[0-2])$`)

// site is one watchlist domain of the snapshot with its headline figures.
type site struct {
	Domain       string
	Title        string
	SnapshotDate string // meta.snapshot_date, YYYY-MM-DD or ""
	Period       string // traffic.period, YYYY-MM or ""
	Category     string
	GlobalRank   sql.NullInt64
	TotalVisits  sql.NullFloat64
	FromGA       bool
	AITotal      sql.NullInt64
	BounceRate   sql.NullFloat64
	PagesPerVis  sql.NullFloat64
	DurationSec  sql.NullFloat64
	PrevRank     sql.NullInt64 // global rank in the previous snapshot holding the domain

	// From the snapshot's own traffic history.
	LastMonth     time.Time // newest month; zero when the history is empty
	LastVisits    sql.NullFloat64
	PrevVisits    sql.NullFloat64 // the calendar month before LastMonth
	YearAgoVisits sql.NullFloat64 // LastMonth one year earlier, from any snapshot up to this one
	YoYFrom       time.Time       // first month with a month a year earlier in the warehouse; zero without history
}

// change returns cur/base - 1 when both are known and base is not 0.
func change(cur, base sql.NullFloat64) (float64, bool) {
	if !cur.Valid || !base.Valid || base.Float64 == 0 {
		return 0, false
	}
	return cur.Float64/base.Float64 - 1, true
}

func (s *site) mom() (float64, bool) { return change(s.LastVisits, s.PrevVisits) }
func (s *site) yoy() (float64, bool) { return change(s.LastVisits, s.YearAgoVisits) }

type point struct {
	Month  time.Time
	Visits float64
}

type channelShare struct {
	Domain, Channel string
	Share, Avg      float64
}

type countryShare struct {
	Code, Name string
	Share      float64
}

type keyword struct {
	Domain, Keyword string
	Volume          sql.NullInt64
	CPC, Value      sql.NullFloat64
}

type overlap struct {
	Domain, Other string
	Keywords      []string
}

type aiShare struct {
	Domain, Platform string
	SharePct         float64
}

type competitor struct {
	Domain, Competitor string
	Position           int
	CompRank           sql.NullInt64
	CompVisits         sql.NullFloat64
	Ratio              sql.NullFloat64
	OnWatchlist        bool
}

type runRow struct {
	ID, Status, Message                        string
	Started                                    time.Time
	Finished                                   sql.NullTime
	Total, Loaded, Rejected, Requests, Credits sql.NullInt64
	Remaining, RateLimited                     sql.NullInt64
}

type fetchError struct {
	Domain, Endpoint, Code, Message string
	Status                          sql.NullInt64
}

// data is everything the report shows for one snapshot.
type data struct {
	Snapshot     string
	PrevSnapshot string             // the newest earlier snapshot in the warehouse, or ""
	Sites        []site             // by total visits, descending
	Traffic      map[string][]point // the snapshot's own history (12 months from the API)
	History      map[string][]point // every month up to the snapshot, for the topN domains
	YearPairs    []yearPair         // the latest 12 months against a year earlier; nil without any
	Channels     []channelShare
	Countries    map[string][]countryShare // by share, descending
	Keywords     map[string][]keyword      // top five by position
	Overlaps     []overlap
	AI           map[string][]aiShare // by share, descending
	Competitors  []competitor
	Runs         []runRow // oldest first
	FetchErrors  []fetchError
	// QualityRecorded is false when the warehouse has no quality_checks table (an older schema).
	QualityRecorded bool
	QualitySummary  []warehouse.QualityCheckSummary // one per check run on the snapshot
	Quality         []warehouse.QualityFinding      // error and warn findings, errors first
	Digest          *changes.Digest                 // nil when DigestNote says why
	DigestNote      string

	// Candidates are discover's best domains not tracked yet (candidates.go).
	Candidates []discover.Candidate
}

// load reads the snapshot's figures. It returns an error naming the snapshot and the snapshots
// that do exist when the warehouse has no sites rows for it.
func load(ctx context.Context, db *sql.DB, snapshot string) (*data, error) {
	if !snapshotRE.MatchString(snapshot) {
		return nil, fmt.Errorf("snapshot %q is not a month in the form YYYY-MM (e.g. 2026-01)", snapshot)
	}
	d := &data{Snapshot: snapshot, Traffic: map[string][]point{}, Countries: map[string][]countryShare{},
		Keywords: map[string][]keyword{}, AI: map[string][]aiShare{}}
	if err := d.loadSites(ctx, db); err != nil {
		return nil, err
	}
	if len(d.Sites) == 0 {
		return nil, noData(ctx, db, snapshot)
	}
	for _, step := range []func(context.Context, *sql.DB) error{d.loadPrevious, d.loadTraffic, d.loadYearAgo, d.loadHistory, d.loadYearPairs, d.loadChannels,
		d.loadCountries, d.loadKeywords, d.loadOverlaps, d.loadAI, d.loadCompetitors, d.loadCandidates, d.loadRuns,
		d.loadFetchErrors, d.loadQuality, d.loadDigest} {
		if err := step(ctx, db); err != nil {
			return nil, err
		}
	}
	return d, nil
}

func noData(ctx context.Context, db *sql.DB, snapshot string) error {
	var have []string
	err := each(ctx, db, `SELECT DISTINCT snapshot_month FROM sites ORDER BY 1`, nil, func(r *sql.Rows) error {
		var s string
		have = append(have, s)
		return r.Scan(&have[len(have)-1])
	})
	if err != nil {
		return fmt.Errorf("list snapshots: %w", err)
	}
	if len(have) == 0 {
		return fmt.Errorf("snapshot %s has no data: the warehouse holds no snapshot yet; %s", snapshot, months.FinishAdvice(snapshot, "", time.Now()))
	}
	return fmt.Errorf("snapshot %s has no data in the warehouse (snapshots loaded: %s); pick one of those, or %s",
		snapshot, strings.Join(have, ", "), months.FinishAdvice(snapshot, have[len(have)-1], time.Now()))
}

// each runs query with args and calls scan for every row; errors name the query's purpose
// through the caller's wrapping.
func each(ctx context.Context, db *sql.DB, query string, args []any, scan func(*sql.Rows) error) error {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer func() { _ = rows.Close() }() // read-only query: rows.Err reports what matters
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (d *data) loadSites(ctx context.Context, db *sql.DB) error {
	err := each(ctx, db, `
		SELECT domain, coalesce(title, ''), coalesce(strftime(snapshot_date, '%Y-%m-%d'), ''),
		       coalesce(traffic_period, ''), coalesce(category_name, ''), global_rank, total_visits,
		       coalesce(is_data_from_ga, false), ai_total_visits, bounce_rate, pages_per_visit,
		       average_visit_duration_seconds
		FROM sites WHERE snapshot_month = ?
		ORDER BY total_visits DESC NULLS LAST, domain`, []any{d.Snapshot}, func(r *sql.Rows) error {
		var s site
		if err := r.Scan(&s.Domain, &s.Title, &s.SnapshotDate, &s.Period, &s.Category, &s.GlobalRank,
			&s.TotalVisits, &s.FromGA, &s.AITotal, &s.BounceRate, &s.PagesPerVis, &s.DurationSec); err != nil {
			return err
		}
		d.Sites = append(d.Sites, s)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read sites: %w", err)
	}
	return nil
}

// loadPrevious finds the newest earlier snapshot and each domain's rank in it.
func (d *data) loadPrevious(ctx context.Context, db *sql.DB) error {
	var prev sql.NullString
	if err := db.QueryRowContext(ctx, `SELECT max(snapshot_month) FROM sites WHERE snapshot_month < ?`, d.Snapshot).Scan(&prev); err != nil {
		return fmt.Errorf("find the previous snapshot: %w", err)
	}
	if !prev.Valid {
		return nil
	}
	d.PrevSnapshot = prev.String
	ranks := map[string]sql.NullInt64{}
	err := each(ctx, db, `SELECT domain, global_rank FROM sites WHERE snapshot_month = ?`, []any{prev.String}, func(r *sql.Rows) error {
		var dom string
		var rank sql.NullInt64
		if err := r.Scan(&dom, &rank); err != nil {
			return err
		}
		ranks[dom] = rank
		return nil
	})
	if err != nil {
		return fmt.Errorf("read sites of the previous snapshot %s: %w", prev.String, err)
	}
	for i := range d.Sites {
		d.Sites[i].PrevRank = ranks[d.Sites[i].Domain]
	}
	return nil
}

// loadTraffic reads the snapshot's own traffic history (not traffic_monthly, which mixes in
// later snapshots), so a report for a past month stays as it was.
func (d *data) loadTraffic(ctx context.Context, db *sql.DB) error {
	err := each(ctx, db, `
		SELECT domain, month, visits FROM traffic_history
		WHERE snapshot_month = ? AND visits IS NOT NULL
		ORDER BY domain, month`, []any{d.Snapshot}, func(r *sql.Rows) error {
		var dom string
		var p point
		var v int64
		if err := r.Scan(&dom, &p.Month, &v); err != nil {
			return err
		}
		p.Visits = float64(v)
		d.Traffic[dom] = append(d.Traffic[dom], p)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read traffic_history: %w", err)
	}
	for i := range d.Sites {
		s := &d.Sites[i]
		pts := d.Traffic[s.Domain]
		if len(pts) == 0 {
			continue
		}
		last := pts[len(pts)-1]
		s.LastMonth, s.LastVisits = last.Month, sql.NullFloat64{Float64: last.Visits, Valid: true}
		s.PrevVisits = visitsIn(pts, last.Month.AddDate(0, -1, 0))
	}
	return nil
}

func visitsIn(pts []point, month time.Time) sql.NullFloat64 {
	for _, p := range pts {
		if p.Month.Equal(month) {
			return sql.NullFloat64{Float64: p.Visits, Valid: true}
		}
	}
	return sql.NullFloat64{}
}

func (d *data) loadChannels(ctx context.Context, db *sql.DB) error {
	err := each(ctx, db, `
		SELECT domain, channel, share, watchlist_avg_share FROM channel_mix
		WHERE snapshot_month = ? AND share IS NOT NULL
		ORDER BY domain, channel`, []any{d.Snapshot}, func(r *sql.Rows) error {
		var c channelShare
		if err := r.Scan(&c.Domain, &c.Channel, &c.Share, &c.Avg); err != nil {
			return err
		}
		d.Channels = append(d.Channels, c)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read channel_mix: %w", err)
	}
	return nil
}

func (d *data) loadCountries(ctx context.Context, db *sql.DB) error {
	err := each(ctx, db, `
		SELECT domain, country_code, coalesce(country_name, country_code), share FROM top_countries
		WHERE snapshot_month = ? AND share IS NOT NULL
		ORDER BY domain, country_position`, []any{d.Snapshot}, func(r *sql.Rows) error {
		var dom string
		var c countryShare
		if err := r.Scan(&dom, &c.Code, &c.Name, &c.Share); err != nil {
			return err
		}
		d.Countries[dom] = append(d.Countries[dom], c)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read top_countries: %w", err)
	}
	return nil
}

func (d *data) loadKeywords(ctx context.Context, db *sql.DB) error {
	err := each(ctx, db, `
		SELECT domain, keyword, search_volume, cpc_usd, estimated_value_usd FROM keywords
		WHERE snapshot_month = ?
		QUALIFY row_number() OVER (PARTITION BY domain ORDER BY position) <= 5
		ORDER BY domain, position`, []any{d.Snapshot}, func(r *sql.Rows) error {
		var k keyword
		if err := r.Scan(&k.Domain, &k.Keyword, &k.Volume, &k.CPC, &k.Value); err != nil {
			return err
		}
		d.Keywords[k.Domain] = append(d.Keywords[k.Domain], k)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read keywords: %w", err)
	}
	return nil
}

// loadOverlaps reads the keywords shared by watchlist domains that list each other as similar,
// each pair once (domain < other_domain), for pairs with one of the topN most visited domains
// (the section shows ten; the view keyword_overlap has every pair).
func (d *data) loadOverlaps(ctx context.Context, db *sql.DB) error {
	args := []any{d.Snapshot}
	marks := make([]string, 0, topN)
	for _, s := range topSites(d) {
		args, marks = append(args, s.Domain), append(marks, "?")
	}
	in := strings.Join(marks, ", ")
	args = append(args, args[1:]...)
	err := each(ctx, db, `
		SELECT domain, other_domain, list(DISTINCT lower(trim(keyword)) ORDER BY lower(trim(keyword)))
		FROM keyword_overlap
		WHERE snapshot_month = ? AND domain < other_domain
		  AND (domain IN (`+in+`) OR other_domain IN (`+in+`))
		GROUP BY domain, other_domain
		ORDER BY count(DISTINCT lower(trim(keyword))) DESC, domain, other_domain
		LIMIT 10`, args, func(r *sql.Rows) error {
		var o overlap
		var kws []any
		if err := r.Scan(&o.Domain, &o.Other, &kws); err != nil {
			return err
		}
		for _, k := range kws {
			o.Keywords = append(o.Keywords, fmt.Sprint(k))
		}
		d.Overlaps = append(d.Overlaps, o)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read keyword_overlap: %w", err)
	}
	return nil
}

func (d *data) loadAI(ctx context.Context, db *sql.DB) error {
	err := each(ctx, db, `
		SELECT domain, platform, share_pct FROM ai_platforms
		WHERE snapshot_month = ? AND share_pct IS NOT NULL
		ORDER BY domain, share_pct DESC, platform`, []any{d.Snapshot}, func(r *sql.Rows) error {
		var a aiShare
		if err := r.Scan(&a.Domain, &a.Platform, &a.SharePct); err != nil {
			return err
		}
		d.AI[a.Domain] = append(d.AI[a.Domain], a)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read ai_platforms: %w", err)
	}
	return nil
}

func (d *data) loadCompetitors(ctx context.Context, db *sql.DB) error {
	err := each(ctx, db, `
		SELECT domain, competitor, competitor_position, competitor_global_rank,
		       competitor_total_visits, competitor_visits_ratio, competitor_on_watchlist
		FROM competitors WHERE snapshot_month = ?
		ORDER BY domain, competitor_position`, []any{d.Snapshot}, func(r *sql.Rows) error {
		var c competitor
		if err := r.Scan(&c.Domain, &c.Competitor, &c.Position, &c.CompRank, &c.CompVisits, &c.Ratio, &c.OnWatchlist); err != nil {
			return err
		}
		d.Competitors = append(d.Competitors, c)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read competitors: %w", err)
	}
	return nil
}

func (d *data) loadRuns(ctx context.Context, db *sql.DB) error {
	err := each(ctx, db, `
		SELECT run_id, status, coalesce(message, ''), started_at, finished_at, domains_total, domains_loaded,
		       domains_rejected, requests, credits_spent, credits_remaining, rate_limited
		FROM runs WHERE snapshot_month = ? ORDER BY started_at, run_id`, []any{d.Snapshot}, func(r *sql.Rows) error {
		var x runRow
		if err := r.Scan(&x.ID, &x.Status, &x.Message, &x.Started, &x.Finished, &x.Total, &x.Loaded,
			&x.Rejected, &x.Requests, &x.Credits, &x.Remaining, &x.RateLimited); err != nil {
			return err
		}
		d.Runs = append(d.Runs, x)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read runs: %w", err)
	}
	return nil
}

// loadFetchErrors reads the newest error of each domain and endpoint that is still not loaded.
func (d *data) loadFetchErrors(ctx context.Context, db *sql.DB) error {
	err := each(ctx, db, `
		SELECT e.domain, e.endpoint, coalesce(e.code, ''), coalesce(e.message, ''), e.http_status
		FROM fetch_errors e
		WHERE e.snapshot_month = ?
		  AND NOT EXISTS (SELECT 1 FROM sites s WHERE s.snapshot_month = e.snapshot_month AND s.domain = e.domain)
		QUALIFY row_number() OVER (PARTITION BY e.domain, e.endpoint ORDER BY e.occurred_at DESC NULLS LAST) = 1
		ORDER BY e.domain, e.endpoint`, []any{d.Snapshot}, func(r *sql.Rows) error {
		var e fetchError
		if err := r.Scan(&e.Domain, &e.Endpoint, &e.Code, &e.Message, &e.Status); err != nil {
			return err
		}
		d.FetchErrors = append(d.FetchErrors, e)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read fetch_errors: %w", err)
	}
	return nil
}

// loadQuality reads the snapshot's data-quality outcome. A warehouse last written by an older
// sitewatch has no quality_checks table; the report then says no checks were recorded.
func (d *data) loadQuality(ctx context.Context, db *sql.DB) error {
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM duckdb_tables() WHERE table_name = 'quality_checks'`).Scan(&n); err != nil {
		return fmt.Errorf("look for the quality_checks table: %w", err)
	}
	if n == 0 {
		return nil
	}
	d.QualityRecorded = true
	var err error
	if d.QualitySummary, err = warehouse.QualitySummary(ctx, db, d.Snapshot); err != nil {
		return err
	}
	d.Quality, err = warehouse.QualityIssues(ctx, db, d.Snapshot)
	return err
}

// loadDigest reads what changed between the snapshot and the complete month before it. An
// incomplete snapshot, or a warehouse without the changes views, has no digest; DigestNote
// says why.
func (d *data) loadDigest(ctx context.Context, db *sql.DB) error {
	var n int
	err := db.QueryRowContext(ctx, `SELECT count(*) FROM duckdb_views() WHERE view_name IN ('complete_months', 'changes_movers')`).Scan(&n)
	if err != nil {
		return fmt.Errorf("look for the changes views: %w", err)
	}
	if n < 2 || !d.QualityRecorded {
		d.DigestNote = "This warehouse was last written by an older sitewatch and has no changes views; run `sitewatch rebuild --all` once to add them."
		return nil
	}
	dg, err := changes.Build(ctx, db, d.Snapshot)
	switch {
	case errors.Is(err, changes.ErrMonthNotComplete), errors.Is(err, changes.ErrNoCompleteMonth):
		d.DigestNote = fmt.Sprintf("Snapshot %s is not complete, so it is not compared with the month before (month-to-month changes compare complete months only). Below: the movers within this snapshot's own traffic history.", d.Snapshot)
		return nil
	case err != nil:
		return fmt.Errorf("read what changed: %w", err)
	}
	d.Digest = dg
	if dg.PreviousMonth == "" {
		d.DigestNote = fmt.Sprintf("Snapshot %s is the first complete month in the warehouse: there is no earlier complete month to compare with yet. Below: the movers within this snapshot's own traffic history.", d.Snapshot)
	}
	return nil
}
