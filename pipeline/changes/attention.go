package changes

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"sitewatch/pipeline/textout"
)

// Reason kinds of the needs_attention view (sql/views/needs_attention.sql).
const (
	KindVisitsFell     = "visits_fell"
	KindVisitsRose     = "visits_rose"
	KindSteepFall      = "steep_fall"
	KindRankLost       = "rank_lost"
	KindAIVisitsFell   = "ai_visits_fell"
	KindTopChannelFell = "top_channel_fell"
	KindDataMissing    = "data_missing"
	KindQualityFailed  = "quality_failed"
	// KindRisingCandidate lists a domain not on the watchlist (discover_candidates).
	KindRisingCandidate = "rising_candidate"
)

// AttentionKinds lists every reason kind, in the order the docs and /metrics list them.
var AttentionKinds = []string{KindVisitsFell, KindVisitsRose, KindSteepFall, KindRankLost, KindAIVisitsFell, KindTopChannelFell, KindDataMissing, KindQualityFailed, KindRisingCandidate}

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

// AttentionReason is one row of needs_attention: why a domain is listed.
type AttentionReason struct {
	Kind     string   // one of AttentionKinds
	Text     string   // the reason in words
	Severity string   // high | medium
	Score    float64  // what the list is ordered by
	Change   *float64 // the move as a number (see the view's change column); nil when none
	Rank     int      // the row's position in the list, 1 = first
}

// AttentionDomain is one listed domain with its reasons, best-ranked first.
type AttentionDomain struct {
	Domain  string
	Rank    int      // the domain's position, 1 = first (needs_attention.domain_rank)
	Visits  *float64 // visits in the month, nil when missing
	Reasons []AttentionReason
}

// Attention is the needs-attention list of one month: the one ranking that `sitewatch
// changes`, the report's first section, the webhook's complete digest and /metrics lead with.
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

// ReadAttention reads the needs-attention list of month (YYYY-MM; "" = the latest complete
// month) with settings s (zero fields: the defaults) from the table macro behind the
// needs_attention view. It returns an empty list when the warehouse has no complete month and
// month is "", and an error naming the month when month is malformed or the query fails (an
// older warehouse without the view: run `sitewatch run` or `sitewatch rebuild` once).
func ReadAttention(ctx context.Context, db *sql.DB, month string, s AttentionSettings) (*Attention, error) {
	if month != "" && !monthRE.MatchString(month) {
		return nil, fmt.Errorf("needs attention: month %q is not YYYY-MM (e.g. 2026-01)", month)
	}
	s = s.withDefaults()
	a := &Attention{Month: month, Settings: s}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM duckdb_functions() WHERE function_name = 'needs_attention_in'`).Scan(&n); err != nil {
		return nil, fmt.Errorf("needs attention: read the warehouse catalog: %w", err)
	}
	if n == 0 {
		return nil, fmt.Errorf("needs attention of %s: %w", monthOrLatest(month), ErrNoAttentionView)
	}
	var forMonth any
	if month != "" {
		forMonth = month
	}
	rows, err := db.QueryContext(ctx, `SELECT snapshot_month, coalesce(previous_month, ''), domain, reason_kind, reason,
		severity, score, change, rank, domain_rank, visits
		FROM needs_attention_in(for_month := ?, min_visits := ?, threshold := ?) ORDER BY rank`, forMonth, s.MinVisits, s.Threshold)
	if err != nil {
		return nil, fmt.Errorf("needs attention of %s: %w", monthOrLatest(month), err)
	}
	defer func() { _ = rows.Close() }()
	byDomain := map[string]int{}
	for rows.Next() {
		var r AttentionReason
		var domain string
		var change, visits sql.NullFloat64
		var domainRank int
		if err := rows.Scan(&a.Month, &a.PreviousMonth, &domain, &r.Kind, &r.Text, &r.Severity, &r.Score, &change, &r.Rank, &domainRank, &visits); err != nil {
			return nil, fmt.Errorf("needs attention of %s: %w", monthOrLatest(month), err)
		}
		r.Change = nullable(change)
		i, ok := byDomain[domain]
		if !ok {
			i = len(a.Domains)
			byDomain[domain] = i
			a.Domains = append(a.Domains, AttentionDomain{Domain: domain, Rank: domainRank, Visits: nullable(visits)})
		}
		a.Domains[i].Reasons = append(a.Domains[i].Reasons, r)
		if a.Domains[i].Visits == nil {
			a.Domains[i].Visits = nullable(visits)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("needs attention of %s: %w", monthOrLatest(month), err)
	}
	return a, nil
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
	return fmt.Sprintf("A domain is listed when this month's visits move at least %s of its usual month-to-month swings "+
		"(median and 1.4826 × MAD of its earlier monthly changes, at least ±2 %%), or its rank, AI-referred visits or top channel "+
		"fell that many of the watchlist's swings since %s, and it had at least %s visits; or it is one of the 3 steepest falls (2 %% or more) "+
		"among the larger half of the watchlist; or its data went missing or failed a quality check. "+
		"Also up to 3 rising domains not on the watchlist that its similar sites point at (discover_candidates). "+
		"Most unusual first (view needs_attention; config attention.min_visits and attention.threshold).",
		strconv.FormatFloat(s.Threshold, 'f', -1, 64), orText(a.PreviousMonth, "the previous complete month"), thousands(float64(s.MinVisits)))
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
