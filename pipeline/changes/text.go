package changes

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"sitewatch/pipeline/numfmt"
	"sitewatch/pipeline/textout"
)

// MaxLinesPerSection bounds each list of WriteText; the rest is counted and pointed to its view.
const MaxLinesPerSection = 15

var metricTitles = map[string]string{
	MetricVisits:         "Visits",
	MetricGlobalRank:     "Global rank (1 = most visited)",
	MetricAIVisits:       "AI-referred visits",
	MetricAITrafficShare: "AI share of traffic",
	MetricChannelShare:   "Channel share",
}

// WriteText writes the digest for a terminal: movers per metric, then competitors, AI
// platforms, keywords and countries per domain, then the quality findings. Every list is
// bounded by MaxLinesPerSection and names the view holding the rest. It returns the first
// write error.
func (d *Digest) WriteText(w io.Writer) error {
	p := printer{Writer: textout.New(w), max: d.lines()}
	d.writeAttention(p)
	d.writeFalls(p)
	d.writeWorthTracking(p)
	p.Printf("What changed in %s\n", d.Month)
	if d.PreviousMonth == "" {
		p.Printf("  %s is the first complete month: nothing to compare yet.\n", d.Month)
	} else {
		which := "the complete month before"
		if d.Against != "" {
			which = "as asked (--against)"
		}
		p.Printf("  compared with %s, %s; %s loaded in both. Traffic figures are estimates.\n",
			d.PreviousMonth, which, textout.Plural(d.Domains, "domain", "domains"))
	}
	if len(d.Incomplete) > 0 {
		p.Printf("  Not complete yet (not compared): %s.\n", strings.Join(d.Incomplete, ", "))
	}
	if d.PreviousMonth != "" {
		d.writeMovers(p)
		d.writeCompetitors(p)
		d.writePlatforms(p)
		d.writeKeywords(p)
		d.writeCountries(p)
		p.Printf("\nOrder: %s\n", RankingRule)
	}
	d.writeQuality(p)
	return p.Err()
}

// writeAttention leads the digest with the month's needs-attention list.
func (d *Digest) writeAttention(p printer) {
	if d.Attention == nil {
		if d.AttentionNote != "" {
			p.Printf("Needs attention: %s\n\n", d.AttentionNote)
		}
		return
	}
	a := d.Attention
	p.Printf("%s\n", a.Title())
	lines, more := a.Lines(p.max)
	for _, l := range lines {
		p.Printf("  %s\n", l)
	}
	if more > 0 {
		p.Printf("  … and %s more: %s\n", numfmt.Thousands(int64(more)), a.Query())
	}
	p.Printf("  %s\n\n", a.Rule())
}

// lines is how many lines each list of WriteText shows: Top, else MaxLinesPerSection.
func (d *Digest) lines() int {
	if d.Top > 0 {
		return d.Top
	}
	return MaxLinesPerSection
}

// writeFalls is the month's largest falls in visits, steepest first, in the report's number
// style: its own ranking, apart from the needs-attention list.
func (d *Digest) writeFalls(p printer) {
	p.Printf("%s\n", FallsTitle(d.Month, d.attentionFloor()))
	if len(d.LargestFalls) == 0 {
		p.Printf("  %s\n\n", NoFalls)
		return
	}
	tab := textout.Table{Header: []string{"#", "domain", "change", "visits", "before", "lost"}, Right: []bool{true, false, true, true, true, true}}
	for _, f := range d.LargestFalls {
		tab.Add(strconv.Itoa(f.Rank), f.Domain, numfmt.Change(f.ChangePct/100), numfmt.Count(f.Visits), numfmt.Count(f.Previous), numfmt.Count(f.Lost))
	}
	p.Keep(tab.Write(p, "  "))
	p.Printf("\n")
}

func (d *Digest) attentionFloor() int64 {
	if d.Attention != nil {
		return d.Attention.Settings.MinVisits
	}
	return DefaultAttentionMinVisits
}

// writeWorthTracking is the short list of candidates not on the watchlist: never counted as
// domains needing attention.
func (d *Digest) writeWorthTracking(p printer) {
	p.Printf("Worth tracking: not on the watchlist, pointed at by its similar sites (sitewatch discover --add)\n")
	if len(d.WorthTracking) == 0 {
		p.Printf("  no candidate at or above the size floor (discover.min_visits)\n\n")
		return
	}
	for _, c := range d.WorthTracking {
		p.Printf("  %d. %s: %s\n", c.Rank, c.Domain, c.Reason)
	}
	p.Printf("\n")
}

// Headline is one or two lines for a chat message or webhook: the months compared, the
// biggest visits mover, the counts of new competitors, AI platforms, keywords and top-5
// countries, and the quality verdict.
func (d *Digest) Headline() string {
	var first string
	if d.PreviousMonth == "" {
		first = fmt.Sprintf("sitewatch %s: first complete month, nothing to compare yet.", d.Month)
	} else {
		parts := []string{}
		if m, ok := d.topMover(MetricVisits); ok {
			parts = append(parts, fmt.Sprintf("biggest mover %s visits %s", m.Domain, ratioText(m.ChangeRatio, m.Change)))
		}
		parts = append(parts,
			textout.Plural(d.count(d.competitorChanges(), "new"), "new competitor", "new competitors"),
			textout.Plural(d.count(d.platformChanges(), "new"), "new AI platform", "new AI platforms"),
			textout.Plural(d.count(d.keywordChanges(), "new"), "new keyword", "new keywords"),
			textout.Plural(d.count(d.countryChanges(), "entered"), "country into a top 5", "countries into a top 5"))
		first = fmt.Sprintf("sitewatch %s vs %s: %s.", d.Month, d.PreviousMonth, strings.Join(parts, ", "))
	}
	return first + "\n" + d.qualityVerdict()
}

func (d *Digest) topMover(metric string) (Mover, bool) {
	for _, m := range d.Movers {
		if m.Metric == metric {
			return m, true
		}
	}
	return Mover{}, false
}

func (d *Digest) competitorChanges() []string {
	return changeKinds(d.Competitors, func(c CompetitorChange) string { return c.Change })
}
func (d *Digest) platformChanges() []string {
	return changeKinds(d.AIPlatforms, func(c PlatformChange) string { return c.Change })
}
func (d *Digest) keywordChanges() []string {
	return changeKinds(d.Keywords, func(c KeywordChange) string { return c.Change })
}
func (d *Digest) countryChanges() []string {
	return changeKinds(d.Countries, func(c CountryChange) string { return c.Change })
}

func changeKinds[T any](items []T, kind func(T) string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = kind(it)
	}
	return out
}

func (d *Digest) count(kinds []string, kind string) int {
	n := 0
	for _, k := range kinds {
		if k == kind {
			n++
		}
	}
	return n
}

func (d *Digest) qualityVerdict() string {
	if !d.QualityChecked {
		return fmt.Sprintf("Data quality of %s: not checked yet.", d.Month)
	}
	errs, warns := 0, 0
	for _, q := range d.Quality {
		errs += q.Errors
		warns += q.Warnings
	}
	if errs == 0 && warns == 0 {
		return fmt.Sprintf("Data quality of %s: all %d checks passed.", d.Month, len(d.Quality))
	}
	return fmt.Sprintf("Data quality of %s: %s, %s (%d checks).", d.Month,
		textout.Plural(errs, "error", "errors"), textout.Plural(warns, "warning", "warnings"), len(d.Quality))
}

func (d *Digest) writeMovers(p printer) {
	p.Printf("\nBiggest movers\n")
	if len(d.Movers) == 0 {
		p.Printf("  no metric changed\n")
		return
	}
	metric := ""
	tw := p.table()
	for _, m := range d.Movers {
		if m.Metric != metric {
			metric = m.Metric
			_, _ = fmt.Fprintf(tw, "  %s\n", metricTitles[metric])
		}
		name := m.Domain
		if m.Channel != "" {
			name += " " + m.Channel
		}
		_, _ = fmt.Fprintf(tw, "    %s\t%s\t→ %s\t%s\n", name, value(m.Metric, m.Previous), value(m.Metric, m.Current), moveText(m))
	}
	p.flush(tw)
}

func (d *Digest) writeCompetitors(p printer) {
	p.Printf("\nCompetitors that appeared or dropped out\n")
	lines := make([]string, 0, len(d.Competitors))
	for _, c := range d.Competitors {
		detail := []string{}
		if c.GlobalRank != nil {
			detail = append(detail, numfmt.Rank(*c.GlobalRank))
		}
		if c.TotalVisits != nil {
			detail = append(detail, numfmt.Count(*c.TotalVisits)+" visits")
		}
		if c.OnWatchlist {
			detail = append(detail, "on the watchlist")
		}
		lines = append(lines, fmt.Sprintf("  %s\t%s\t%s\t%s", c.Domain, c.Change, c.Competitor, strings.Join(detail, ", ")))
	}
	p.list(lines, "changes_competitors", d.Month)
}

func (d *Digest) writePlatforms(p printer) {
	p.Printf("\nAI platforms that appeared or dropped out\n")
	lines := make([]string, 0, len(d.AIPlatforms))
	for _, a := range d.AIPlatforms {
		detail := ""
		if a.Rank != nil && a.SharePct != nil {
			detail = numfmt.Rank(*a.Rank) + ", " + numfmt.Share(*a.SharePct/100) + " of AI visits"
		}
		lines = append(lines, fmt.Sprintf("  %s\t%s\t%s\t%s", a.Domain, a.Change, a.Platform, detail))
	}
	p.list(lines, "changes_ai_platforms", d.Month)
}

func (d *Digest) writeKeywords(p printer) {
	p.Printf("\nTop keywords that appeared or dropped out\n")
	lines := make([]string, 0, len(d.Keywords))
	for _, k := range d.Keywords {
		detail := numfmt.Rank(int64(k.Position))
		if k.SearchVolume != nil {
			detail += ", " + numfmt.Count(float64(*k.SearchVolume)) + " searches/month"
		}
		lines = append(lines, fmt.Sprintf("  %s\t%s\t%q\t%s", k.Domain, k.Change, k.Keyword, detail))
	}
	p.list(lines, "changes_keywords", d.Month)
}

func (d *Digest) writeCountries(p printer) {
	p.Printf("\nCountries entering or leaving a top 5\n")
	lines := make([]string, 0, len(d.Countries))
	for _, c := range d.Countries {
		name := c.CountryCode
		if c.CountryName != "" {
			name = c.CountryName + " (" + c.CountryCode + ")"
		}
		lines = append(lines, fmt.Sprintf("  %s\t%s\t%s\t%s → %s", c.Domain, c.Change, name,
			positionShare(c.PreviousPosition, c.PreviousShare), positionShare(c.Position, c.Share)))
	}
	p.list(lines, "changes_top_countries", d.Month)
}

func (d *Digest) writeQuality(p printer) {
	p.Printf("\n%s\n", d.qualityVerdict())
	if !d.QualityChecked {
		return
	}
	lines := make([]string, 0, len(d.QualityIssues))
	for _, f := range d.QualityIssues {
		lines = append(lines, fmt.Sprintf("  %s\t%s\t%s\t%s\tobserved %s, expected %s",
			f.Severity, f.Check, f.Table, orDash(f.Domain), f.Observed, f.Expected))
	}
	if len(lines) > 0 {
		p.list(lines, "quality_checks", d.Month)
	}
}

// printer is the digest's text writer: a textout.Writer with the sections' helpers.
type printer struct {
	*textout.Writer
	max int // lines a list shows
}

func (p printer) table() *tabwriter.Writer { return tabwriter.NewWriter(p, 0, 0, 2, ' ', 0) }

func (p printer) flush(tw *tabwriter.Writer) { p.Keep(tw.Flush()) }

// list prints up to MaxLinesPerSection tab-separated lines aligned, then how many more there
// are and the query that shows them all.
func (p printer) list(lines []string, view, month string) {
	if len(lines) == 0 {
		p.Printf("  none\n")
		return
	}
	tw := p.table()
	for i, l := range lines {
		if i == p.max {
			break
		}
		_, _ = fmt.Fprintln(tw, l)
	}
	p.flush(tw)
	if more := len(lines) - p.max; more > 0 {
		p.Printf("  … and %s more: sitewatch query \"SELECT * FROM %s WHERE snapshot_month = '%s'\"\n", numfmt.Thousands(int64(more)), view, month)
	}
}

// value renders a metric value in its unit, in the report's number style (numfmt): ranks
// "#314,815", shares "37.5%", visits "21.5k".
func value(metric string, v float64) string {
	switch metric {
	case MetricGlobalRank:
		return numfmt.Rank(int64(math.Round(v)))
	case MetricAITrafficShare, MetricChannelShare:
		return numfmt.Share(v)
	default:
		return numfmt.Count(v)
	}
}

func moveText(m Mover) string {
	switch m.Metric {
	case MetricGlobalRank:
		places := numfmt.Thousands(int64(math.Abs(m.Change))) + " places"
		if math.Abs(m.Change) == 1 {
			places = "1 place"
		}
		if m.Change < 0 {
			return "up " + places
		}
		return "down " + places
	case MetricAITrafficShare, MetricChannelShare:
		return numfmt.Points(m.Change)
	default:
		return ratioText(m.ChangeRatio, m.Change)
	}
}

// ratioText is a relative change in percent ("+25.0%", "−50.0%"), or the change in visits
// when the base was 0 ("+1.20k (from 0)"), in the report's number style.
func ratioText(ratio *float64, change float64) string {
	if ratio == nil {
		sign := ""
		if change > 0 {
			sign = "+"
		}
		return sign + numfmt.Count(change) + " (from 0)"
	}
	return numfmt.Change(*ratio)
}

func positionShare(pos *int64, share *float64) string {
	if pos == nil {
		return "not listed"
	}
	if share == nil {
		return numfmt.Rank(*pos)
	}
	return numfmt.Rank(*pos) + " (" + numfmt.Share(*share) + ")"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
