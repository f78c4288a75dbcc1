package report

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"sitewatch/pipeline/changes"
	"sitewatch/pipeline/discover"
	"sitewatch/pipeline/model"
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

	Place int // in the report's order over every loaded domain (0: the most visited)
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
	PrevSnapshot string // the newest earlier snapshot in the warehouse, or ""
	// Sites are the rows the page names, by total visits, descending: the allInPage most
	// visited, every flagged domain, and each ranking's leaders (sitepass.go); Totals are
	// every loaded domain's.
	Sites     []site
	Totals    siteTotals
	History   map[string][]point // every month up to the snapshot, for the topN domains
	YearPairs []yearPair         // the latest 12 months against a year earlier; nil without any
	// Shown are the domains whose per-domain rows are read (channels, countries, keywords, AI
	// platforms, whole history): the topN most visited and every domain the needs-attention
	// list names, so what is read follows what the page draws, not the watchlist's length.
	Shown         []string
	Channels      []channelShare
	Countries     map[string][]countryShare // of the shown domains, by share, descending
	CountryWeight []countryShare            // every domain's shares summed per country, the maxGeoColumns heaviest
	AITotals      map[string]float64        // every domain's platform shares summed per platform
	Keywords      map[string][]keyword      // top five by position
	Overlaps      []overlap
	AI            map[string][]aiShare // of the shown domains, by share, descending
	Competitors   *competitorTotals    // competitors.go: aggregated in DuckDB
	// PanelCompetitors are each flagged domain's first competitors, "name (visits)" (panels.go).
	PanelCompetitors map[string][]string
	Runs             []runRow // oldest first
	FetchErrors      []fetchError
	// QualityRecorded is false when the warehouse has no quality_checks table (an older schema).
	QualityRecorded bool
	QualitySummary  []warehouse.QualityCheckSummary // one per check run on the snapshot
	Quality         []model.QualityFinding          // error and warn findings, errors first
	Digest          *changes.Digest                 // nil when DigestNote says why
	DigestNote      string
	CSVName         string             // the file beside the page holding every domain's row, "" when none is written
	Attention       *changes.Attention // nil when AttentionNote says why
	AttentionNote   string

	// Candidates are discover's best domains not tracked yet (candidates.go).
	Candidates []discover.Candidate

	settings settings       // the config's knobs the page is read with (candidates.go)
	Falls    []changes.Fall // the month's largest falls in visits (falls.go)
}

// load reads the snapshot's figures. It returns an error naming the snapshot and the snapshots
// that do exist when the warehouse has no sites rows for it.
func load(ctx context.Context, db *sql.DB, snapshot string, set settings) (*data, error) {
	return loadWith(ctx, db, snapshot, set, loadOptions{})
}

// loadOptions are load's extras: the CSV of every domain's row, written as the rows pass, and
// a hook told each read's name and duration (the profile at 100,000 domains, profile_test.go).
type loadOptions struct {
	CSV     io.Writer // nil: no CSV
	CSVName string
	took    func(step string, took time.Duration)
}

// loadStep is one read of load, named for the profile.
type loadStep struct {
	name string
	read func(context.Context, *sql.DB) error
}

func loadWith(ctx context.Context, db *sql.DB, snapshot string, set settings, o loadOptions) (*data, error) {
	if !snapshotRE.MatchString(snapshot) {
		return nil, fmt.Errorf("snapshot %q is not a month in the form YYYY-MM (e.g. 2026-01)", snapshot)
	}
	d := &data{Snapshot: snapshot, Countries: map[string][]countryShare{},
		Keywords: map[string][]keyword{}, AI: map[string][]aiShare{}, settings: set}
	if o.CSV != nil {
		d.CSVName = o.CSVName
	}
	run := func(steps ...loadStep) error {
		for _, s := range steps {
			start := time.Now()
			if err := s.read(ctx, db); err != nil {
				return err
			}
			if o.took != nil {
				o.took(s.name, time.Since(start))
			}
		}
		return nil
	}
	if n, err := countSites(ctx, db, snapshot); err != nil || n == 0 {
		if err == nil {
			err = noData(ctx, db, snapshot)
		}
		return nil, err
	}
	// The digest, the needs-attention list and the largest falls come first: the domains they
	// name are kept among the sites, and shown.
	sites := func(ctx context.Context, db *sql.DB) error { return d.loadSites(ctx, db, o.CSV) }
	err := run(loadStep{"quality", d.loadQuality}, loadStep{"digest", d.loadDigest}, loadStep{"attention", d.attentionLoader(set.Attention)},
		loadStep{"falls", d.loadFalls}, loadStep{"sites and csv", sites}, loadStep{"previous", d.loadPrevious})
	if err != nil {
		return nil, err
	}
	d.Shown = shownDomains(d)
	err = run(loadStep{"history", d.loadHistory}, loadStep{"year pairs", d.loadYearPairs}, loadStep{"channels", d.loadChannels},
		loadStep{"countries", d.loadCountries}, loadStep{"country weights", d.loadCountryWeights}, loadStep{"keywords", d.loadKeywords},
		loadStep{"overlaps", d.loadOverlaps}, loadStep{"ai", d.loadAI}, loadStep{"ai totals", d.loadAITotals},
		loadStep{"competitors", d.loadCompetitors}, loadStep{"panel competitors", d.loadPanelCompetitors},
		loadStep{"candidates", d.loadCandidates}, loadStep{"runs", d.loadRuns}, loadStep{"fetch errors", d.loadFetchErrors})
	if err != nil {
		return nil, err
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

func (d *data) loadChannels(ctx context.Context, db *sql.DB) error {
	in, args := d.shownIn()
	err := each(ctx, db, `
		SELECT domain, channel, share, watchlist_avg_share FROM channel_mix
		WHERE snapshot_month = ? AND share IS NOT NULL AND domain IN (`+in+`)
		ORDER BY domain, channel`, args, func(r *sql.Rows) error {
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
	in, args := d.shownIn()
	err := each(ctx, db, `
		SELECT domain, country_code, coalesce(country_name, country_code), share FROM top_countries
		WHERE snapshot_month = ? AND share IS NOT NULL AND domain IN (`+in+`)
		ORDER BY domain, country_position`, args, func(r *sql.Rows) error {
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
	in, args := d.shownIn()
	err := each(ctx, db, `
		SELECT domain, keyword, search_volume, cpc_usd, estimated_value_usd FROM keywords
		WHERE snapshot_month = ? AND domain IN (`+in+`)
		QUALIFY row_number() OVER (PARTITION BY domain ORDER BY position) <= 5
		ORDER BY domain, position`, args, func(r *sql.Rows) error {
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
	var top []string
	for _, s := range topSites(d) {
		top = append(top, s.Domain)
	}
	query, args := overlapsQuery(d.Snapshot, top)
	err := each(ctx, db, query, args, func(r *sql.Rows) error {
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
		return fmt.Errorf("read keyword overlaps: %w", err)
	}
	return nil
}

// overlapsQuery is keyword_overlap's rows for the pairs with one of top, in the section's
// order: the view's steps (mutual similar sites, then one side's keywords, then the other's),
// but starting from top's own similar sites. The view pairs every domain of the month first
// (1.25 M similar-site rows folded and joined at 100,000 domains) before the report keeps 30
// domains' pairs; the same rows (TestOverlapsAsTheView).
func overlapsQuery(snapshot string, top []string) (string, []any) {
	args := []any{snapshot}
	marks := make([]string, 0, len(top))
	for i, dom := range top {
		args, marks = append(args, dom), append(marks, "$"+strconv.Itoa(i+2))
	}
	return `
		WITH mine AS MATERIALIZED (
		    SELECT domain, regexp_replace(rtrim(lower(similar_domain), '.'), '^www\.', '') AS other
		    FROM similar_sites WHERE snapshot_month = $1 AND domain IN (` + strings.Join(marks, ", ") + `)
		),
		theirs AS MATERIALIZED (
		    SELECT domain, regexp_replace(rtrim(lower(similar_domain), '.'), '^www\.', '') AS other
		    FROM similar_sites WHERE snapshot_month = $1 AND domain IN (SELECT other FROM mine)
		),
		pairs AS MATERIALIZED (
		    SELECT DISTINCT least(m.domain, t.domain) AS domain, greatest(m.domain, t.domain) AS other_domain
		    FROM mine m JOIN theirs t ON t.domain = m.other AND t.other = m.domain
		    WHERE m.domain <> t.domain
		),
		one_side AS MATERIALIZED (
		    SELECT p.domain, p.other_domain, lower(trim(k.keyword)) AS matched
		    FROM pairs p JOIN keywords k ON k.snapshot_month = $1 AND k.domain = p.domain
		)
		SELECT o.domain, o.other_domain, list(DISTINCT o.matched ORDER BY o.matched)
		FROM one_side o
		JOIN keywords kb ON kb.snapshot_month = $1 AND kb.domain = o.other_domain AND lower(trim(kb.keyword)) = o.matched
		GROUP BY o.domain, o.other_domain
		ORDER BY count(DISTINCT o.matched) DESC, o.domain, o.other_domain
		LIMIT 10`, args
}

func (d *data) loadAI(ctx context.Context, db *sql.DB) error {
	in, args := d.shownIn()
	err := each(ctx, db, `
		SELECT domain, platform, share_pct FROM ai_platforms
		WHERE snapshot_month = ? AND share_pct IS NOT NULL AND domain IN (`+in+`)
		ORDER BY domain, share_pct DESC, platform`, args, func(r *sql.Rows) error {
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
	dg, err := changes.BuildOptions(ctx, db, d.Snapshot, d.settings.digestOptions())
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
