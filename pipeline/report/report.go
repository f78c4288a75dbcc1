// Package report writes the monthly HTML report of one snapshot: a single self-contained file
// (inline SVG charts and CSS, the chart font embedded as a data URI, no network; one short
// inline script only sorts and filters the All domains table, which reads without it) that
// leads with the month's headline numbers and what changed, then shows traffic per domain as
// small multiples, size and rank, year on year, channel mix, geography, keywords, AI referrals,
// competitors, and the runs, credits and data-quality findings behind the numbers, with a
// visible warning when the snapshot is incomplete. Per-domain sections show the topN most
// visited domains; the All domains table lists every one, so the page stays readable for 5 or
// 5,000 domains. Movers follow changes.RankingRule, stated in the footnote.
package report

import (
	"bytes"
	"context"
	"database/sql"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"

	"sitewatch/pipeline/changes"
)

//go:embed page.html.tmpl
var pageSource string

// pageTmpl is the page; panelLink is replaced on each render by the page's own (pageFor).
var pageTmpl = template.Must(template.New("report").Funcs(template.FuncMap{"panelLink": func(string) string { return "" }, "prose": prose}).Parse(pageSource))

// pageFor is the page template whose panelLink gives the id of a domain's panel (flagged or
// among the largest falls), "" for any other text: every mention of it then links there.
func pageFor(d *data) (*template.Template, error) {
	t, err := pageTmpl.Clone()
	if err != nil {
		return nil, fmt.Errorf("clone the page template: %w", err)
	}
	withPanel := map[string]bool{}
	for _, dom := range panelDomains(d) {
		withPanel[dom] = true
	}
	return t.Funcs(template.FuncMap{"panelLink": func(s string) string {
		if withPanel[s] {
			return panelID(s)
		}
		return ""
	}}), nil
}

// Write renders the report of snapshot (YYYY-MM) from the warehouse db to w. It returns an
// error when snapshot is malformed, when the warehouse holds no sites rows for it (the message
// lists the snapshots that exist), or when a query or the write fails. Nothing is written to w
// unless the whole page rendered. Errors carry no "report" prefix: the caller adds its own.
func Write(ctx context.Context, db *sql.DB, snapshot string, w io.Writer) error {
	return WriteWith(ctx, db, snapshot, changes.AttentionSettings{}, w) // attention.go
}

// page is what the template renders.
type page struct {
	Snapshot      string
	SnapshotDates string // the API's meta.snapshot_date values, "2026-02-01" or "2026-02-01 – 2026-02-03"
	Periods       string // traffic.period values
	FontFace      template.CSS
	ChartCSS      template.CSS // the container queries that pick each chart's layout
	Warning       *warning
	Contents      []tocEntry
	Headline      []card
	Attention     *attentionSection // attention.go: the first section after the headline
	Falls         *fallsSection     // falls.go: the month's largest falls, its own ranking
	Panels        []panel           // panels.go: each flagged or largest-fall domain's own place
	Changes       *changesSection
	Traffic       []sparkCard
	Size          *chart
	YoY           *chartSection
	Channels      *legendChart
	Geography     *geoTable
	Keywords      *keywordSection
	AI            *legendChart
	Competitors   *competitorSection
	Runs          *runSection
	Sites         []allRow
	Categories    []category   // the All domains filter's choices
	AllColumns    template.CSS // the All domains grid's column widths
	PhoneColumns  template.CSS // the same in phoneOrder
	AllLimit      int          // rows the All domains script shows of those matching (all without script)
	AllNote       string       // which domains the table holds, and where the rest are when it is cut
	TopNote       string       // which domains the per-domain sections show, "" when all
	Rule          string       // the ranking rule, stated in the footnote
	TopN          int
}

type tocEntry struct{ ID, Title string }

type chartSection struct {
	Note  string
	SVG   *chart
	Years *yearVsYear // this year against last year, where two years exist
}

// legendChart is a stacked chart with its legend drawn in HTML (swatch + name per series).
type legendChart struct {
	Note    string
	Legend  []legendEntry
	SVG     *chart
	Missing string // domains without data, listed so their absence is explicit
}

type legendEntry struct{ Name, Color string }

func build(d *data) (*page, error) {
	ff, err := fontFace()
	if err != nil {
		return nil, err
	}
	p := &page{Snapshot: d.Snapshot, FontFace: ff}
	p.SnapshotDates, p.Periods = spanText(d.Totals.FirstDate, d.Totals.LastDate), spanText(d.Totals.FirstPeriod, d.Totals.LastPeriod)
	p.Warning = completeness(d)
	p.Headline = headline(d)
	p.Attention = attentionOf(d)
	p.Falls = buildFalls(d)
	p.Panels = buildPanels(d)
	p.Changes = buildChanges(d)
	p.Traffic = buildTraffic(d)
	p.Size = buildSize(d)
	p.YoY = buildYoY(d)
	if p.YoY != nil {
		p.YoY.Years = buildYearVsYear(d)
	}
	p.Channels = buildChannels(d)
	p.Geography = buildGeography(d)
	p.Keywords = buildKeywords(d)
	p.AI = buildAI(d)
	p.Competitors = buildCompetitors(d)
	if p.Competitors != nil {
		p.Competitors.Candidates = candidateRows(d.Candidates) // candidates.go
		p.Competitors.CandidateFloor = d.settings.candidateFloor()
	}
	p.Runs = buildRuns(d)
	p.Sites = buildSites(d)
	p.Categories = categories(d)
	p.AllColumns, p.PhoneColumns = allColumns(p.Sites)
	p.AllLimit, p.AllNote = allLimit, allNote(d, len(p.Sites))
	p.TopNote = cutNote(d, "the most visited domains")
	p.Rule, p.TopN = changes.RankingRule, topN
	p.Contents = contents(p)
	p.ChartCSS = chartCSS(p.charts()...)
	return p, nil
}

// charts are every chart of the page that has a wide and a narrow layout.
func (p *page) charts() []*chart {
	out := []*chart{p.Size}
	for _, s := range []*chartSection{p.YoY} {
		if s != nil {
			out = append(out, s.SVG)
		}
	}
	for _, l := range []*legendChart{p.Channels, p.AI} {
		if l != nil {
			out = append(out, l.SVG)
		}
	}
	if p.Competitors != nil {
		out = append(out, p.Competitors.Chart)
	}
	return out
}

// contents lists the sections the page has, in page order.
func contents(p *page) []tocEntry {
	toc := []tocEntry{{"summary", "Headline numbers"}}
	if p.Attention != nil {
		toc = append(toc, tocEntry{"attention", "Needs attention"})
	}
	if p.Falls != nil {
		toc = append(toc, tocEntry{"falls", "Largest falls"})
	}
	if len(p.Panels) > 0 {
		toc = append(toc, tocEntry{"flagged", "Flagged domains"})
	}
	toc = append(toc, tocEntry{"changes", "What changed"})
	add := func(present bool, id, title string) {
		if present {
			toc = append(toc, tocEntry{id, title})
		}
	}
	add(len(p.Traffic) > 0, "traffic", "Traffic per domain")
	add(p.Size != nil, "size", "Size and rank")
	add(p.YoY != nil, "yoy", "Year on year")
	add(p.Channels != nil, "channels", "Channel mix")
	add(p.Geography != nil, "geography", "Geography")
	add(p.Keywords != nil, "keywords", "Keywords")
	add(p.AI != nil, "ai", "AI referrals")
	add(p.Competitors != nil, "competitors", "Competitors")
	toc = append(toc, tocEntry{"runs", "Runs, credits and data quality"}, tocEntry{"watchlist", "All domains"})
	return toc
}

// fontFace returns a CSS @font-face rule carrying the charts' font (Liberation Sans, bundled
// with gonum/plot) as a data URI, so text renders with the metrics the charts were laid out
// with, on a machine without that font and without network.
func fontFace() (template.CSS, error) {
	face := fonts.Lookup(chartFont, 12)
	if face.Face == nil {
		return "", fmt.Errorf("chart font %s %s not found in the bundled Liberation fonts", chartFont.Typeface, chartFont.Variant)
	}
	var raw bytes.Buffer
	if _, err := face.Face.WriteSourceTo(nil, &raw); err != nil {
		return "", fmt.Errorf("read chart font: %w", err)
	}
	return template.CSS(`@font-face{font-family:"Liberation Sans";font-weight:normal;font-style:normal;src:url(data:font/ttf;base64,` +
		base64.StdEncoding.EncodeToString(raw.Bytes()) + `) format("truetype");}`), nil
}
