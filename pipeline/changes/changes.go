// Package changes builds the monthly "what changed" digest: biggest movers, competitors that
// appeared or dropped out, new AI platforms and keywords, countries entering a domain's top 5,
// and the month's data-quality findings. It reads the changes_* views (sql/views/changes.sql),
// which compare a complete month with the complete month before it, so the digest, the
// report, the webhook and an analyst's own SQL all agree.
package changes

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"sitewatch/pipeline/discover"
	"sitewatch/pipeline/model"
	"sitewatch/pipeline/months"
	"sitewatch/pipeline/warehouse"
)

// ErrNoCompleteMonth reports a warehouse without any complete month: nothing to compare yet.
var ErrNoCompleteMonth = errors.New("no complete month in the warehouse")

// ErrMonthNotComplete reports a requested month that is not complete (its latest run did not
// load or reject every watchlist domain).
var ErrMonthNotComplete = errors.New("month is not complete")

// Metrics of changes_movers, in the order the digest shows them.
const (
	MetricVisits         = "visits"
	MetricGlobalRank     = "global_rank"
	MetricAIVisits       = "ai_visits"
	MetricAITrafficShare = "ai_traffic_share"
	MetricChannelShare   = "channel_share"
)

var metricOrder = []string{MetricVisits, MetricGlobalRank, MetricAIVisits, MetricAITrafficShare, MetricChannelShare}

// RankingRule is the one ordering of movers and per-domain changes that the report, `sitewatch
// changes` and the webhook headline share (changes_movers.mover_rank implements its first part).
const RankingRule = "Movers are ranked by the visits a move stands for: the change in visits (or AI-referred visits); " +
	"for a global rank, |ln(old rank ÷ new rank)| × the domain's visits; for a share, the change in share × the domain's visits. " +
	"So a 1 → 2 visit change (+100 %) never leads a list that holds sites with millions of visits. " +
	"Competitors, keywords, AI platforms and countries that changed are listed by their domain's visits, largest first."

// MoversPerMetric bounds the movers the digest keeps per metric (the view has them all).
const MoversPerMetric = 5

// Mover is one row of changes_movers.
type Mover struct {
	Domain, Metric, Channel string // Channel only for MetricChannelShare
	Previous, Current       float64
	Change                  float64  // Current - Previous, in the metric's unit
	ChangeRatio             *float64 // Current/Previous - 1; nil when Previous is 0
	Improved                *bool    // nil for channel shares and no change
	Rank                    int      // 1 = biggest move of the metric
}

// CompetitorChange is one row of changes_competitors.
type CompetitorChange struct {
	Domain, Change, Competitor string // Change: new | dropped
	Position                   int
	GlobalRank                 *int64
	TotalVisits                *float64
	OnWatchlist                bool
}

// PlatformChange is one row of changes_ai_platforms.
type PlatformChange struct {
	Domain, Change, Platform string // Change: new | dropped
	Rank                     *int64
	SharePct                 *float64 // percent 0-100
}

// KeywordChange is one row of changes_keywords.
type KeywordChange struct {
	Domain, Change, Keyword string // Change: new | dropped
	Position                int
	SearchVolume            *int64
	EstimatedValueUSD       *float64
}

// CountryChange is one row of changes_top_countries.
type CountryChange struct {
	Domain, Change, CountryCode, CountryName string // Change: entered | left; CountryName "" when unknown
	Position, PreviousPosition               *int64
	Share, PreviousShare                     *float64 // decimals 0-1
}

// Digest is what changed between Month and PreviousMonth, two consecutive complete months.
type Digest struct {
	Month         string
	PreviousMonth string // "" when Month is the first complete month: nothing to compare
	Domains       int    // domains loaded in both months
	// Incomplete lists months after Month whose latest run did not complete, so a reader
	// knows why a newer month is not the one shown.
	Incomplete []string

	Movers      []Mover // up to MoversPerMetric per metric with a non-zero change, by metric then rank
	Competitors []CompetitorChange
	AIPlatforms []PlatformChange
	Keywords    []KeywordChange
	Countries   []CountryChange

	Quality        []warehouse.QualityCheckSummary // one per check run on Month; empty when never checked
	QualityIssues  []model.QualityFinding          // Month's error and warn findings, errors first
	QualityChecked bool

	// Attention is the month's needs-attention list (needs_attention), which every surface
	// leads with.
	Attention *Attention
	// AttentionNote says why Attention is nil ("" when it is not).
	AttentionNote string
	// LargestFalls ranks the month's falls in visits, steepest first: its own section, not
	// rows of the needs-attention list.
	LargestFalls []Fall
	// WorthTracking is the short list of candidates not on the watchlist (discover_candidates
	// at or above discover.min_visits), never counted as domains needing attention.
	WorthTracking []discover.Candidate
	// Top bounds each list WriteText shows (0: MaxLinesPerSection).
	Top int
	// Against is the month compared with when the caller chose it (--against), "" for the
	// complete month before Month.
	Against string

	// stored is true when the movers and the four lists are read from changes_cached_*
	// (migration 0013): they hold Month against PreviousMonth, computed from the tables as
	// they are now (warehouse.ChangesCached).
	stored bool
}

// against is the changes_* macros' argument: nil for the complete month before.
func (d *Digest) against() any {
	if d.Against == "" {
		return nil
	}
	return d.Against
}

// Options are what a digest is built with beyond its month.
type Options struct {
	Attention AttentionSettings
	// Top bounds the largest falls and the worth-tracking list (0: MaxLinesPerSection falls,
	// WorthTrackingLines candidates).
	Top int
	// DiscoverMinVisits is the size floor of the worth-tracking list (0: discover's default).
	DiscoverMinVisits int64
	// WorthTracking bounds the worth-tracking list when Top is 0 (0: WorthTrackingLines): the
	// report reads its candidates from the digest instead of running discover's query twice.
	WorthTracking int
	// Against compares the month with this complete month (YYYY-MM) instead of the complete
	// month before it; "" for that one.
	Against string
}

var monthRE = regexp.MustCompile(`^[0-9]{4}-(0[1-9]|1[0-2])$`)

// Build reads the digest of month (YYYY-MM) compared with the complete month before it; month
// "" means the latest complete month. It returns an error wrapping ErrNoCompleteMonth when no
// month is complete, ErrMonthNotComplete when month is not complete, and a plain error when
// the warehouse lacks the views (a warehouse last written by an older sitewatch).
func Build(ctx context.Context, db *sql.DB, month string) (*Digest, error) {
	return BuildWith(ctx, db, month, AttentionSettings{})
}

// BuildWith is Build with the needs-attention settings of the config (attention.min_visits,
// attention.threshold; zero fields are the defaults).
func BuildWith(ctx context.Context, db *sql.DB, month string, s AttentionSettings) (*Digest, error) {
	return BuildOptions(ctx, db, month, Options{Attention: s})
}

// BuildOptions is Build with o: the config's attention settings and discover floor, and how
// many falls and candidates to keep.
func BuildOptions(ctx context.Context, db *sql.DB, month string, o Options) (*Digest, error) {
	s := o.Attention
	if month != "" && !monthRE.MatchString(month) {
		return nil, fmt.Errorf("changes: month %q is not YYYY-MM (e.g. 2026-01)", month)
	}
	if err := requireViews(ctx, db); err != nil {
		return nil, err
	}
	d, err := pickMonths(ctx, db, month)
	if err != nil {
		return nil, err
	}
	if err := d.setAgainst(ctx, db, o.Against); err != nil {
		return nil, err
	}
	if d.Against == "" {
		held := warehouse.ChangesCached
		if o.Attention.StoredCurrent {
			held = warehouse.ChangesHeld
		}
		if d.stored, err = held(ctx, db, d.Month, d.PreviousMonth); err != nil {
			return nil, fmt.Errorf("changes of %s: %w", d.Month, err)
		}
	}
	steps := []func(context.Context, *sql.DB) error{d.readIncomplete, d.readQuality}
	if d.PreviousMonth != "" {
		steps = append(steps, d.readDomains, d.readMovers, d.readCompetitors, d.readPlatforms, d.readKeywords, d.readCountries)
	}
	for _, step := range steps {
		if err := step(ctx, db); err != nil {
			return nil, fmt.Errorf("changes of %s: %w", d.Month, err)
		}
	}
	a, err := ReadAttention(ctx, db, d.Month, s)
	switch {
	case errors.Is(err, ErrNoAttentionView):
		d.AttentionNote = err.Error() // an older warehouse: the rest of the digest still reads
	case err != nil:
		return nil, fmt.Errorf("changes of %s: %w", d.Month, err)
	default:
		d.Attention = a
	}
	d.Top = o.Top
	if err := d.readRankings(ctx, db, o); err != nil {
		return nil, fmt.Errorf("changes of %s: %w", d.Month, err)
	}
	return d, nil
}

// readRankings reads the largest falls and the worth-tracking list.
func (d *Digest) readRankings(ctx context.Context, db *sql.DB, o Options) error {
	falls, cands := MaxLinesPerSection, WorthTrackingLines
	if o.WorthTracking > 0 {
		cands = o.WorthTracking
	}
	if o.Top > 0 {
		falls, cands = o.Top, o.Top
	}
	var err error
	if d.LargestFalls, err = ReadLargestFalls(ctx, db, d.Month, o.Attention.withDefaults().MinVisits, falls); err != nil {
		return err
	}
	d.WorthTracking, err = ReadWorthTracking(ctx, db, d.Month, o.DiscoverMinVisits, cands, o.Attention.StoredCurrent)
	return err
}

// setAgainst makes the digest compare with against, a complete month other than d.Month.
func (d *Digest) setAgainst(ctx context.Context, db *sql.DB, against string) error {
	if against == "" {
		return nil
	}
	if !monthRE.MatchString(against) {
		return fmt.Errorf("changes: --against %q is not YYYY-MM (e.g. 2026-01)", against)
	}
	if against == d.Month {
		return fmt.Errorf("changes: --against %s is the month described; give another complete month (%s)", against, completeList(ctx, db))
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM complete_months WHERE snapshot_month = ?`, against).Scan(&n); err != nil {
		return fmt.Errorf("changes: read complete_months: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("changes: --against %w: %s; complete months: %s", ErrMonthNotComplete, against, completeList(ctx, db))
	}
	d.PreviousMonth, d.Against = against, against
	return nil
}

// requireViews fails with a way out when the warehouse predates the changes views (they are
// created when a warehouse is opened for writing).
func requireViews(ctx context.Context, db *sql.DB) error {
	var n int
	err := db.QueryRowContext(ctx, `SELECT count(*) FROM duckdb_views()
		WHERE view_name IN ('complete_months', 'changes_movers') AND NOT internal`).Scan(&n)
	if err != nil {
		return fmt.Errorf("changes: read the warehouse catalog: %w", err)
	}
	var q int
	err = db.QueryRowContext(ctx, `SELECT count(*) FROM duckdb_tables() WHERE table_name = 'quality_checks' AND NOT internal`).Scan(&q)
	if err != nil {
		return fmt.Errorf("changes: read the warehouse catalog: %w", err)
	}
	if n < 2 || q < 1 {
		return errors.New("changes: the warehouse has no changes views yet (it was last written by an older sitewatch); " +
			"run `sitewatch run` or `sitewatch rebuild` once to upgrade it")
	}
	return nil
}

func pickMonths(ctx context.Context, db *sql.DB, month string) (*Digest, error) {
	q := `SELECT snapshot_month, coalesce(previous_month, '') FROM complete_months`
	var args []any
	if month == "" {
		q += ` ORDER BY snapshot_month DESC LIMIT 1`
	} else {
		q += ` WHERE snapshot_month = ?`
		args = append(args, month)
	}
	d := &Digest{}
	err := db.QueryRowContext(ctx, q, args...).Scan(&d.Month, &d.PreviousMonth)
	if errors.Is(err, sql.ErrNoRows) {
		if month == "" {
			return nil, fmt.Errorf("changes: %w: run `sitewatch run` until a month completes (`sitewatch status` shows each run)", ErrNoCompleteMonth)
		}
		return nil, fmt.Errorf("%w: %s (%s); %s; complete months: %s",
			ErrMonthNotComplete, month, latestRunOf(ctx, db, month), months.FinishAdvice(month, newestRun(ctx, db), time.Now()), completeList(ctx, db))
	}
	if err != nil {
		return nil, fmt.Errorf("changes: read complete_months: %w", err)
	}
	return d, nil
}

// newestRun is the newest month any run recorded, "" when none.
func newestRun(ctx context.Context, db *sql.DB) string {
	var m sql.NullString
	_ = db.QueryRowContext(ctx, `SELECT max(snapshot_month) FROM runs`).Scan(&m) // advice only: "" on error
	return m.String
}

// latestRunOf describes month's latest run for an error message.
func latestRunOf(ctx context.Context, db *sql.DB, month string) string {
	var status string
	var loaded, rejected, total sql.NullInt64
	err := db.QueryRowContext(ctx, `SELECT status, domains_loaded, domains_rejected, domains_total FROM runs
		WHERE snapshot_month = ? ORDER BY started_at DESC, run_id DESC LIMIT 1`, month).Scan(&status, &loaded, &rejected, &total)
	if err != nil {
		return "no run of that month"
	}
	return fmt.Sprintf("latest run %s, %d loaded + %d rejected of %d domains", status, loaded.Int64, rejected.Int64, total.Int64)
}

func completeList(ctx context.Context, db *sql.DB) string {
	var months []string
	rows, err := db.QueryContext(ctx, `SELECT snapshot_month FROM complete_months ORDER BY snapshot_month DESC LIMIT 12`)
	if err == nil {
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var m string
			if rows.Scan(&m) == nil {
				months = append(months, m)
			}
		}
	}
	if len(months) == 0 {
		return "none yet"
	}
	return strings.Join(months, ", ")
}

func (d *Digest) readIncomplete(ctx context.Context, db *sql.DB) error {
	return warehouse.QueryEach(ctx, db, `SELECT DISTINCT snapshot_month FROM runs
		WHERE snapshot_month > ? AND status <> 'month_mismatch' AND snapshot_month NOT IN (SELECT snapshot_month FROM complete_months)
		ORDER BY 1`, []any{d.Month}, func(rows *sql.Rows) error {
		var m string
		if err := rows.Scan(&m); err != nil {
			return err
		}
		d.Incomplete = append(d.Incomplete, m)
		return nil
	})
}

func (d *Digest) readQuality(ctx context.Context, db *sql.DB) error {
	var err error
	if d.Quality, err = warehouse.QualitySummary(ctx, db, d.Month); err != nil {
		return err
	}
	d.QualityChecked = len(d.Quality) > 0
	d.QualityIssues, err = warehouse.QualityIssues(ctx, db, d.Month)
	return err
}

func (d *Digest) readDomains(ctx context.Context, db *sql.DB) error {
	return db.QueryRowContext(ctx, `SELECT count(*) FROM sites s JOIN sites o ON o.domain = s.domain
		WHERE s.snapshot_month = ? AND o.snapshot_month = ?`, d.Month, d.PreviousMonth).Scan(&d.Domains)
}

// moversSQL reads the MoversPerMetric largest moves of a month ($2) per metric against $1, in
// changes_movers' mover_rank order, among the moves that changed at all
// (changes_movers_top, sql/views/changes.sql).
var moversSQL = fmt.Sprintf(`SELECT domain, metric, coalesce(channel, ''), previous_value, current_value, change, change_ratio, improved, mover_rank
	FROM changes_movers_top(against := $1, for_month := $2, per_metric := %d)
	ORDER BY metric, mover_rank`, MoversPerMetric)

// storedMoversSQL reads the same rows from changes_cached_movers, which holds them for the
// latest complete month ($1; see Digest.stored).
const storedMoversSQL = `SELECT domain, metric, coalesce(channel, ''), previous_value, current_value, change, change_ratio, improved, mover_rank
	FROM changes_cached_movers WHERE snapshot_month = $1
	ORDER BY metric, mover_rank`

func (d *Digest) readMovers(ctx context.Context, db *sql.DB) error {
	query, args := moversSQL, []any{d.against(), d.Month}
	if d.stored {
		query, args = storedMoversSQL, []any{d.Month}
	}
	err := warehouse.QueryEach(ctx, db, query, args, func(rows *sql.Rows) error {
		var m Mover
		var ratio sql.NullFloat64
		var improved sql.NullBool
		if err := rows.Scan(&m.Domain, &m.Metric, &m.Channel, &m.Previous, &m.Current, &m.Change, &ratio, &improved, &m.Rank); err != nil {
			return err
		}
		m.ChangeRatio = floatPtr(ratio)
		if improved.Valid {
			m.Improved = &improved.Bool
		}
		d.Movers = append(d.Movers, m)
		return nil
	})
	if err != nil {
		return err
	}
	sort.SliceStable(d.Movers, func(i, j int) bool {
		return slices.Index(metricOrder, d.Movers[i].Metric) < slices.Index(metricOrder, d.Movers[j].Metric)
	})
	return nil
}

// bySize joins the rows of a changes_* view (aliased c) with their domain's visits in the
// month (size_visits), so lists can lead with the largest domains: the per-domain half of
// RankingRule. A join, not a correlated subquery: 5,000 domains' lists stay fast.
const bySize = ` LEFT JOIN (SELECT snapshot_month AS size_month, domain AS size_domain, total_visits AS size_visits FROM sites) z
		ON z.size_month = c.snapshot_month AND z.size_domain = c.domain`

// listFrom is where a list of changes (competitors, ai_platforms, keywords, top_countries) is
// read: its stored rows when they hold the digest's months as the tables are now, else its
// changes_*_in macro; listArgs are the query's arguments.
func (d *Digest) listFrom(list string) string {
	if d.stored {
		return `(SELECT * FROM changes_cached_` + list + ` WHERE snapshot_month = ?)`
	}
	return `changes_` + list + `_in(against := ?, for_month := ?)`
}

func (d *Digest) listArgs() []any {
	if d.stored {
		return []any{d.Month}
	}
	return []any{d.against(), d.Month}
}

func (d *Digest) readCompetitors(ctx context.Context, db *sql.DB) error {
	return warehouse.QueryEach(ctx, db, `SELECT domain, change, competitor, competitor_position, competitor_global_rank,
			competitor_total_visits, competitor_on_watchlist
		FROM `+d.listFrom("competitors")+` c`+bySize+`
		ORDER BY size_visits DESC NULLS LAST, domain, change DESC, competitor_position, competitor`, d.listArgs(), func(rows *sql.Rows) error {
		var c CompetitorChange
		var rank sql.NullInt64
		var visits sql.NullFloat64
		if err := rows.Scan(&c.Domain, &c.Change, &c.Competitor, &c.Position, &rank, &visits, &c.OnWatchlist); err != nil {
			return err
		}
		c.GlobalRank, c.TotalVisits = intPtr(rank), floatPtr(visits)
		d.Competitors = append(d.Competitors, c)
		return nil
	})
}

func (d *Digest) readPlatforms(ctx context.Context, db *sql.DB) error {
	return warehouse.QueryEach(ctx, db, `SELECT domain, change, platform, rank, share_pct
		FROM `+d.listFrom("ai_platforms")+` c`+bySize+`
		ORDER BY size_visits DESC NULLS LAST, domain, change DESC, rank NULLS LAST, platform`, d.listArgs(), func(rows *sql.Rows) error {
		var p PlatformChange
		var rank sql.NullInt64
		var share sql.NullFloat64
		if err := rows.Scan(&p.Domain, &p.Change, &p.Platform, &rank, &share); err != nil {
			return err
		}
		p.Rank, p.SharePct = intPtr(rank), floatPtr(share)
		d.AIPlatforms = append(d.AIPlatforms, p)
		return nil
	})
}

func (d *Digest) readKeywords(ctx context.Context, db *sql.DB) error {
	return warehouse.QueryEach(ctx, db, `SELECT domain, change, keyword, position, search_volume, estimated_value_usd
		FROM `+d.listFrom("keywords")+` c`+bySize+`
		ORDER BY size_visits DESC NULLS LAST, domain, change DESC, position, keyword`, d.listArgs(), func(rows *sql.Rows) error {
		var k KeywordChange
		var volume sql.NullInt64
		var value sql.NullFloat64
		if err := rows.Scan(&k.Domain, &k.Change, &k.Keyword, &k.Position, &volume, &value); err != nil {
			return err
		}
		k.SearchVolume, k.EstimatedValueUSD = intPtr(volume), floatPtr(value)
		d.Keywords = append(d.Keywords, k)
		return nil
	})
}

func (d *Digest) readCountries(ctx context.Context, db *sql.DB) error {
	return warehouse.QueryEach(ctx, db, `SELECT domain, change, country_code, coalesce(country_name, ''), position, previous_position,
			share, previous_share
		FROM `+d.listFrom("top_countries")+` c`+bySize+`
		ORDER BY size_visits DESC NULLS LAST, domain, change, coalesce(position, previous_position), country_code`, d.listArgs(), func(rows *sql.Rows) error {
		var c CountryChange
		var pos, prevPos sql.NullInt64
		var share, prevShare sql.NullFloat64
		if err := rows.Scan(&c.Domain, &c.Change, &c.CountryCode, &c.CountryName, &pos, &prevPos, &share, &prevShare); err != nil {
			return err
		}
		c.Position, c.PreviousPosition = intPtr(pos), intPtr(prevPos)
		c.Share, c.PreviousShare = floatPtr(share), floatPtr(prevShare)
		d.Countries = append(d.Countries, c)
		return nil
	})
}

func floatPtr(v sql.NullFloat64) *float64 {
	if !v.Valid {
		return nil
	}
	return &v.Float64
}

func intPtr(v sql.NullInt64) *int64 {
	if !v.Valid {
		return nil
	}
	return &v.Int64
}
