package changes

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"sitewatch/pipeline/numfmt"
	"sitewatch/pipeline/textout"
	"sitewatch/pipeline/warehouse"
)

// Reason kinds of the needs_attention view (sql/views/needs_attention.sql).
const (
	KindVanished       = "vanished" // visits fell to 0: always first, severity high
	KindVisitsFell     = "visits_fell"
	KindVisitsRose     = "visits_rose"
	KindRankLost       = "rank_lost"
	KindAIVisitsFell   = "ai_visits_fell"
	KindTopChannelFell = "top_channel_fell"
	KindDataMissing    = "data_missing"
	KindQualityFailed  = "quality_failed"
)

// AttentionKinds lists every reason kind, in the order the docs and /metrics list them.
var AttentionKinds = []string{KindVanished, KindVisitsFell, KindVisitsRose, KindRankLost, KindAIVisitsFell, KindTopChannelFell, KindDataMissing, KindQualityFailed}

// Severities of a needs-attention row, the same words on every surface: high when |z| is at
// least twice the threshold (and for vanished, missing data and quality errors), medium from
// the threshold (and for quality warnings).
const (
	SeverityHigh   = "high"
	SeverityMedium = "medium"
)

// Defaults of the needs-attention ranking (the view needs_attention uses them; config keys
// attention.min_visits and attention.threshold override them).
const (
	DefaultAttentionMinVisits = 10000
	DefaultAttentionThreshold = 3.0
)

// AttentionSettings are the ranking's two knobs; a zero field means its default.
type AttentionSettings struct {
	MinVisits int64   // size floor: visits in the month or the month before
	Threshold float64 // |z| a move must reach
	// StoredCurrent says the warehouse's stored lists (needs attention's for these settings,
	// and those of `changes`) follow every row in it, by the writer's mark a reader found
	// (warehouse.StoredListsCurrent): the reads then use them without checking the checksums
	// of every row they were computed from. Not a setting: false always checks.
	StoredCurrent bool `json:"-"`
}

// Resolved returns s with its zero fields set to the defaults: the settings a list was read with.
func (s AttentionSettings) Resolved() AttentionSettings { return s.withDefaults() }

// withDefaults fills the zero fields.
func (s AttentionSettings) withDefaults() AttentionSettings {
	if s.MinVisits <= 0 {
		s.MinVisits = DefaultAttentionMinVisits
	}
	if s.Threshold <= 0 {
		s.Threshold = DefaultAttentionThreshold
	}
	return s
}

// AttentionReason is one row of needs_attention: why a domain is listed, one field per unit.
type AttentionReason struct {
	Kind     string   // one of AttentionKinds
	Metric   string   // visits | global_rank | ai_visits | channel_share; "" for quality_failed
	Channel  string   // the channel of a channel_share row, else ""
	Value    *float64 // the metric in the month (whole visits; rank; share in percent); nil when missing
	Previous *float64 // the metric the month before, same unit; nil when none
	// ChangePct is value / previous - 1 in percent (-35 = a 35 % fall) for visits, global_rank
	// and ai_visits; ChangePoints the change in percentage points for channel_share. The other
	// is nil.
	ChangePct, ChangePoints *float64
	Z                       *float64 // the move in usual swings; nil for vanished, data_missing, quality_failed
	Severity                string   // SeverityHigh | SeverityMedium
	Text                    string   // the reason in words
	Score                   float64  // what the list is ordered by after vanished rows
	Rank                    int      // the row's position in the month's list, 1 = first
}

// AttentionDomain is one listed domain with its reasons, best-ranked first.
type AttentionDomain struct {
	Domain  string
	Rank    int // the domain's position, 1 = first (needs_attention.domain_rank)
	Reasons []AttentionReason
}

// Severity is the severity of the domain's first (loudest) reason.
func (d AttentionDomain) Severity() string { return d.Reasons[0].Severity }

// Attention is the needs-attention list of one month: the one ranking that `sitewatch
// changes`, `sitewatch show`, the report's first section, the webhook and /metrics lead with.
// A quiet month has no Domains; every surface then says so in one line (Title).
type Attention struct {
	Month, PreviousMonth string // PreviousMonth "" when no complete month precedes Month
	Settings             AttentionSettings
	Domains              []AttentionDomain // in list order
}

// Rows is the number of reasons listed over all domains.
func (a *Attention) Rows() int {
	n := 0
	for _, d := range a.Domains {
		n += len(d.Reasons)
	}
	return n
}

// ByKind counts the domains listed for each reason kind (every kind present, 0 when none).
func (a *Attention) ByKind() map[string]int {
	out := make(map[string]int, len(AttentionKinds))
	for _, k := range AttentionKinds {
		out[k] = 0
	}
	for _, d := range a.Domains {
		for _, r := range d.Reasons {
			out[r.Kind]++ // one row per domain and kind: counts domains
		}
	}
	return out
}

// AttentionSeverities lists every severity, loudest first.
var AttentionSeverities = []string{SeverityHigh, SeverityMedium}

// BySeverity counts the domains listed by the severity of their first (loudest) reason, every
// severity present (0 when none).
func (a *Attention) BySeverity() map[string]int {
	out := make(map[string]int, len(AttentionSeverities))
	for _, s := range AttentionSeverities {
		out[s] = 0
	}
	for _, d := range a.Domains {
		out[d.Severity()]++
	}
	return out
}

// ReadAttention reads the needs-attention list of month (YYYY-MM; "" = the latest complete
// month) with settings s (zero fields: the defaults) from the table macro behind the
// needs_attention view. It returns an empty list when the warehouse has no complete month and
// month is "", and an error naming the month when month is malformed or the query fails (an
// older warehouse without the view: run `sitewatch run` or `sitewatch rebuild` once).
func ReadAttention(ctx context.Context, db *sql.DB, month string, s AttentionSettings) (*Attention, error) {
	return readAttention(ctx, db, month, "", s)
}

// ReadDomainAttention is ReadAttention limited to one domain's rows (`sitewatch show`).
func ReadDomainAttention(ctx context.Context, db *sql.DB, month, domain string, s AttentionSettings) (*Attention, error) {
	return readAttention(ctx, db, month, domain, s)
}

// attentionRead says how readAttention reads a domain's rows.
type attentionRead int

const (
	askDomainFirst attentionRead = iota // ask only_domain whether it is listed before reading the whole list
	knownListed                         // the caller knows it is listed: read the whole list at once
)

// attentionSQL reads one month's rows through needs_attention_all's only_month, so only that
// month is computed (needs_attention_in filters every month's rows, which LATERAL needs).
const attentionSQL = `SELECT snapshot_month, coalesce(previous_month, ''), domain, kind, coalesce(metric, ''), coalesce(channel, ''),
		value, previous_value, change_pct, change_points, z, severity, reason, score, rank, domain_rank
	FROM needs_attention_all(?, ?, only_month := ?)
	WHERE ? = '' OR domain = ?
	ORDER BY rank`

func readAttention(ctx context.Context, db *sql.DB, month, domain string, s AttentionSettings) (*Attention, error) {
	return readAttentionAs(ctx, db, month, domain, s, askDomainFirst)
}

// readAttentionAs is readAttention; with knownListed it skips the only_domain question (a
// second computation of the month's watchlist-wide moves) for a domain the caller found listed.
func readAttentionAs(ctx context.Context, db *sql.DB, month, domain string, s AttentionSettings, how attentionRead) (*Attention, error) {
	if month != "" && !monthRE.MatchString(month) {
		return nil, fmt.Errorf("needs attention: month %q is not YYYY-MM (e.g. 2026-01)", month)
	}
	s = s.withDefaults()
	a := &Attention{Month: month, Settings: s}
	if month == "" {
		if err := db.QueryRowContext(ctx, `SELECT coalesce(max(snapshot_month), '') FROM complete_months`).Scan(&a.Month); err != nil {
			return nil, fmt.Errorf("needs attention: read complete_months: %w", err)
		}
		if a.Month == "" {
			return a, requireAttentionView(ctx, db, month)
		}
	}
	if months, err := storedAttentionMonths(ctx, db, a.Month, s); err == nil && len(months) == 1 && months[0].Stored {
		a.PreviousMonth = months[0].Previous
		return a, readStoredAttention(ctx, db, map[string]*Attention{a.Month: a}, domain, s)
	}
	if err := requireAttentionView(ctx, db, month); err != nil {
		return nil, err
	}
	if err := db.QueryRowContext(ctx, `SELECT coalesce(max(previous_month), '') FROM complete_months WHERE snapshot_month = ?`, a.Month).Scan(&a.PreviousMonth); err != nil {
		return nil, fmt.Errorf("needs attention of %s: read complete_months: %w", a.Month, err)
	}
	if domain != "" && how == askDomainFirst && !domainListed(ctx, db, a.Month, domain, s) {
		return a, nil
	}
	err := scanAttention(ctx, db, map[string]*Attention{a.Month: a}, attentionSQL, s.MinVisits, s.Threshold, a.Month, domain, domain)
	return a, err
}

// scanAttention adds the rows query returns to the list of their month in lists (rows of a
// month not in lists are an error: the query asked for other months).
func scanAttention(ctx context.Context, db *sql.DB, lists map[string]*Attention, query string, args ...any) error {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("needs attention of %s: %w", listMonths(lists), err)
	}
	defer func() { _ = rows.Close() }()
	byDomain := map[string]map[string]int{}
	for rows.Next() {
		row, err := scanAttentionRow(rows)
		if err != nil {
			return fmt.Errorf("needs attention of %s: %w", listMonths(lists), err)
		}
		a, ok := lists[row.Month]
		if !ok {
			return fmt.Errorf("needs attention of %s: a row of %s, not asked for", listMonths(lists), row.Month)
		}
		if byDomain[row.Month] == nil {
			byDomain[row.Month] = map[string]int{}
		}
		a.add(row, byDomain[row.Month])
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("needs attention of %s: %w", listMonths(lists), err)
	}
	return nil
}

// listMonths names the months of lists for an error message, e.g. "2026-09, 2026-10".
func listMonths(lists map[string]*Attention) string {
	months := make([]string, 0, len(lists))
	for m := range lists {
		months = append(months, m)
	}
	slices.Sort(months)
	return strings.Join(months, ", ")
}

// storedMonth is one complete month and whether attention_lists holds its list as of the data now.
type storedMonth struct {
	Month, Previous string
	Stored          bool
}

// storedAttentionMonthsSQL checks the stored lists of settings (size floor, threshold) against
// their sources now (sql/views/needs_attention.sql, attention_list_months): every complete
// month, or one, newest first.
const storedAttentionMonthsSQL = `SELECT m.snapshot_month, coalesce(c.previous_month, ''), m.stored
	FROM attention_list_months(?, ?, only_month := nullif(?, '')) m JOIN complete_months c USING (snapshot_month)
	ORDER BY m.snapshot_month DESC`

// heldAttentionMonthsSQL is storedAttentionMonthsSQL for a warehouse whose stored lists are
// current (AttentionSettings.StoredCurrent): a month's list is read when it was stored, with
// the previous month it was stored against, without the checksums.
const heldAttentionMonthsSQL = `SELECT c.snapshot_month, coalesce(c.previous_month, ''), EXISTS (
		SELECT 1 FROM attention_list_sources l
		WHERE l.snapshot_month = c.snapshot_month AND l.floor_visits = CAST($1 AS DOUBLE) AND l.z_min = CAST($2 AS DOUBLE)
		  AND l.source_table = 'definition' AND l.source_month = coalesce(c.previous_month, ''))
	FROM complete_months c WHERE nullif($3, '') IS NULL OR c.snapshot_month = $3
	ORDER BY c.snapshot_month DESC`

// storedAttentionMonths lists every complete month (month "") or month alone, newest first,
// each saying whether its stored list for s can be read. It returns an error on a warehouse whose
// views predate the stored lists; the caller then computes.
func storedAttentionMonths(ctx context.Context, db *sql.DB, month string, s AttentionSettings) ([]storedMonth, error) {
	var out []storedMonth
	query := storedAttentionMonthsSQL
	if s.StoredCurrent {
		query = heldAttentionMonthsSQL
	}
	err := warehouse.QueryEach(ctx, db, query, []any{s.MinVisits, s.Threshold, month}, func(rows *sql.Rows) error {
		var m storedMonth
		if err := rows.Scan(&m.Month, &m.Previous, &m.Stored); err != nil {
			return err
		}
		out = append(out, m)
		return nil
	})
	return out, err
}

// storedAttentionSQL reads stored lists, in list order: rank and domain_rank are the whole
// list's even for one domain's rows (its place in the list).
const storedAttentionSQL = `SELECT snapshot_month, coalesce(previous_month, ''), domain, kind, coalesce(metric, ''), coalesce(channel, ''),
		value, previous_value, change_pct, change_points, z, severity, reason, score, rank, domain_rank
	FROM attention_lists
	WHERE floor_visits = ? AND z_min = ? AND list_contains(string_split(?, ','), snapshot_month) AND (? = '' OR domain = ?)
	ORDER BY snapshot_month, rank`

// readStoredAttention fills lists (by month; each found stored by storedAttentionMonths) from
// attention_lists, with domain's rows only when domain is not "".
func readStoredAttention(ctx context.Context, db *sql.DB, lists map[string]*Attention, domain string, s AttentionSettings) error {
	months := make([]string, 0, len(lists))
	for m := range lists {
		months = append(months, m)
	}
	return scanAttention(ctx, db, lists, storedAttentionSQL, float64(s.MinVisits), s.Threshold, strings.Join(months, ","), domain, domain)
}

// attentionRow is one row of needs_attention_all as attentionSQL selects it.
type attentionRow struct {
	Month, Previous, Domain string
	DomainRank              int
	Reason                  AttentionReason
}

func scanAttentionRow(rows *sql.Rows) (attentionRow, error) {
	var a attentionRow
	r := &a.Reason
	var value, prev, pct, points, z sql.NullFloat64
	if err := rows.Scan(&a.Month, &a.Previous, &a.Domain, &r.Kind, &r.Metric, &r.Channel, &value, &prev, &pct, &points, &z,
		&r.Severity, &r.Text, &r.Score, &r.Rank, &a.DomainRank); err != nil {
		return a, err
	}
	r.Value, r.Previous, r.ChangePct, r.ChangePoints, r.Z = nullable(value), nullable(prev), nullable(pct), nullable(points), nullable(z)
	return a, nil
}

// add appends row's reason to its domain (byDomain: the domains' indexes in a.Domains).
func (a *Attention) add(row attentionRow, byDomain map[string]int) {
	i, ok := byDomain[row.Domain]
	if !ok {
		i = len(a.Domains)
		byDomain[row.Domain] = i
		a.Domains = append(a.Domains, AttentionDomain{Domain: row.Domain, Rank: row.DomainRank})
	}
	a.Domains[i].Reasons = append(a.Domains[i].Reasons, row.Reason)
}

// domainListed tells whether domain has a row in month's list, computing only that domain's
// history (only_domain): the history step over every domain is most of the list's cost, and
// most domains `show` is asked about are not listed. A listed domain's place needs the whole
// list, so readAttention then reads it. On any error (a warehouse whose macro predates
// only_domain) it says listed, so the whole list is read and its error, if any, reported.
func domainListed(ctx context.Context, db *sql.DB, month, domain string, s AttentionSettings) bool {
	var n int
	err := db.QueryRowContext(ctx, `SELECT count(*) FROM needs_attention_all(?, ?, only_month := ?, only_domain := ?)`,
		s.MinVisits, s.Threshold, month, domain).Scan(&n)
	return err != nil || n > 0
}

// requireAttentionView fails with ErrNoAttentionView on a warehouse older than the view.
func requireAttentionView(ctx context.Context, db *sql.DB, month string) error {
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(DISTINCT function_name) FROM duckdb_functions()
		WHERE function_name IN ('needs_attention_all', 'needs_attention_in')`).Scan(&n); err != nil {
		return fmt.Errorf("needs attention: read the warehouse catalog: %w", err)
	}
	if n < 2 {
		return fmt.Errorf("needs attention of %s: %w", monthOrLatest(month), ErrNoAttentionView)
	}
	return nil
}

func nullable(v sql.NullFloat64) *float64 {
	if !v.Valid || math.IsNaN(v.Float64) {
		return nil
	}
	f := v.Float64
	return &f
}

func monthOrLatest(month string) string {
	if month == "" {
		return "the latest complete month"
	}
	return month
}

// ErrNoAttentionView reports a warehouse last written by a sitewatch older than the
// needs_attention view (views are created when a warehouse is opened for writing).
var ErrNoAttentionView = errors.New("the warehouse has no needs_attention view yet (it was last written by an older sitewatch); run `sitewatch run` or `sitewatch rebuild` once to upgrade it")

// AttentionLeadLines is how many domains the webhook's digest names; `sitewatch changes`
// shows up to MaxLinesPerSection, the report all.
const AttentionLeadLines = 5

// Line is the i-th domain (0-based) as one line, the same words on every surface:
// "3. faller.com: fell 18.0 % (2,000,000 → 1,640,000 visits) — its months usually move ±3.0 %",
// several reasons joined by "; ".
func (a *Attention) Line(i int) string {
	d := a.Domains[i]
	texts := make([]string, len(d.Reasons))
	for j, r := range d.Reasons {
		texts[j] = r.Text
	}
	return fmt.Sprintf("%d. %s: %s", d.Rank, d.Domain, strings.Join(texts, "; "))
}

// Lines returns the first max domains as lines (all when max <= 0) and how many are left.
func (a *Attention) Lines(max int) (lines []string, more int) {
	n := len(a.Domains)
	if max > 0 && n > max {
		n = max
	}
	for i := 0; i < n; i++ {
		lines = append(lines, a.Line(i))
	}
	return lines, len(a.Domains) - n
}

// Title is the list's one-line heading, e.g. "Needs attention in 2026-10: 8 domains".
func (a *Attention) Title() string {
	month := a.Month
	if month == "" {
		month = "the latest complete month"
	}
	if len(a.Domains) == 0 {
		return fmt.Sprintf("Needs attention in %s: nothing unusual", month)
	}
	return fmt.Sprintf("Needs attention in %s: %s", month, textout.Plural(len(a.Domains), "domain", "domains"))
}

// Rule states the ranking and its settings in one sentence for readers of every surface.
func (a *Attention) Rule() string {
	s := a.Settings.withDefaults()
	return fmt.Sprintf("A watchlist domain is listed when its visits fell to 0 (first, high), when this month's visits move at least %s of its usual "+
		"month-to-month swings (median and 1.4826 × MAD of its earlier monthly changes, at least ±2%%), or its rank, AI-referred visits or top channel "+
		"fell that many of the watchlist's swings since %s, and it had at least %s visits; or when its data went missing or failed a quality check. "+
		"Severity: high from %s swings, medium from %s. Most unusual first (view needs_attention; config attention.min_visits and attention.threshold).",
		strconv.FormatFloat(s.Threshold, 'f', -1, 64), orText(a.PreviousMonth, "the previous complete month"), numfmt.Thousands(s.MinVisits),
		strconv.FormatFloat(2*s.Threshold, 'f', -1, 64), strconv.FormatFloat(s.Threshold, 'f', -1, 64))
}

func orText(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// Text is the list as plain lines, for the webhook and a terminal: Title, then the first max
// domains (all when max <= 0) one per line, then how many more and where to see them.
func (a *Attention) Text(max int) string {
	lines, more := a.Lines(max)
	out := append([]string{a.Title()}, lines...)
	if more > 0 {
		out = append(out, fmt.Sprintf("… and %d more: %s", more, a.Query()))
	}
	return strings.Join(out, "\n")
}

// Query is the command that lists every row with the settings used.
func (a *Attention) Query() string {
	s := a.Settings.withDefaults()
	return fmt.Sprintf(`sitewatch query "SELECT * FROM needs_attention_in(for_month := '%s', min_visits := %d, threshold := %s)"`,
		a.Month, s.MinVisits, strconv.FormatFloat(s.Threshold, 'f', -1, 64))
}
