package report

import (
	"database/sql"
	"fmt"
	"html/template"
	"math"
	"sort"
	"strings"

	"sitewatch/pipeline/numfmt"
)

// sparkCard is one small multiple: a domain's traffic on its own scale, with its figures.
type sparkCard struct {
	Domain, Rank, Last, LastMonth, MoM, MoMTone, YoY, YoYTone string
	Analytics                                                 bool
	SVG                                                       template.HTML
}

func buildTraffic(d *data) []sparkCard {
	var cards []sparkCard
	for _, s := range topSites(d) {
		pts := d.History[s.Domain]
		c := sparkCard{Domain: s.Domain, Rank: rank(s.GlobalRank), Last: humanNull(s.LastVisits), MoM: numfmt.Dash, YoY: numfmt.Dash,
			Analytics: s.FromGA, SVG: sparkline(s.Domain, pts, s.LastMonth.AddDate(-1, 0, 0))}
		if !s.LastMonth.IsZero() {
			c.LastMonth = s.LastMonth.Format("Jan 2006")
		}
		if ch, ok := s.mom(); ok {
			c.MoM, c.MoMTone = numfmt.Change(ch), changeTone(ch)
		}
		c.YoY, c.YoYTone = s.yoyText()
		cards = append(cards, c)
	}
	return cards
}

// buildSize draws every domain's visits in the period as a dot on a log scale, with its
// global rank: a dot's position, unlike a bar's length, reads honestly on a log scale.
func buildSize(d *data) *chart {
	var rows []barRow
	have := false
	for _, s := range topSites(d) {
		r := barRow{Label: s.Domain, Text: "no visits figure"}
		if s.TotalVisits.Valid {
			have = true
			r.Value, r.Valid = s.TotalVisits.Float64, true
			r.Text = numfmt.Count(s.TotalVisits.Float64)
			if s.GlobalRank.Valid {
				r.Text += " · rank " + rank(s.GlobalRank)
			}
		}
		rows = append(rows, r)
	}
	if !have {
		return nil
	}
	return dotPlot("visits in the period per domain, log scale", rows)
}

// yoyCap keeps one domain that tripled from flattening every other bar.
const yoyCap = 1.0

func buildYoY(d *data) *chartSection {
	var rows []barRow
	capped, have := false, false
	for _, s := range yoyLeaders(d) {
		r := barRow{Label: s.Domain, Text: "no month a year earlier"}
		if t, _ := s.yoyText(); t != numfmt.Dash {
			r.Text = "year on year " + t
		}
		if ch, ok := s.yoy(); ok {
			have = true
			r.Value, r.Valid = ch, true
			r.Text = fmt.Sprintf("%s (%s → %s)", numfmt.Change(ch), numfmt.Count(s.YearAgoVisits.Float64), numfmt.Count(s.LastVisits.Float64))
			capped = capped || math.Abs(ch) > yoyCap
		}
		rows = append(rows, r)
	}
	if !have {
		return yoyPending(d)
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].Valid != rows[j].Valid {
			return rows[i].Valid
		}
		return rows[i].Value > rows[j].Value
	})
	note := "Visits in each domain's latest history month against the same month a year earlier (estimates)."
	if d.Totals.Loaded > topN {
		note += fmt.Sprintf(" Showing the %d of %d domains whose visits changed most year on year, in visits (the report's ranking rule); every domain's figure is in All domains below.", topN, d.Totals.Loaded)
	}
	if capped {
		note += " Bars stop at ±100%; the printed value is the true change."
	}
	return &chartSection{Note: note, SVG: divergingBars("year-on-year change of monthly visits per domain", rows, yoyCap)}
}

// channels is the order of traffic.sources_share's ten keys in the spec.
var channels = []string{"direct", "organic_search", "paid_search", "organic_social", "paid_social",
	"email", "referrals", "generative_ai", "affiliate", "display_ads"}

var channelNames = map[string]string{"direct": "Direct", "organic_search": "Organic search", "paid_search": "Paid search",
	"organic_social": "Organic social", "paid_social": "Paid social", "email": "Email", "referrals": "Referrals",
	"generative_ai": "Generative AI", "affiliate": "Affiliate", "display_ads": "Display ads"}

func buildChannels(d *data) *legendChart {
	if len(d.Channels) == 0 {
		return nil
	}
	byDomain := map[string]map[string]float64{}
	avg := map[string]float64{}
	for _, c := range d.Channels {
		if byDomain[c.Domain] == nil {
			byDomain[c.Domain] = map[string]float64{}
		}
		byDomain[c.Domain][c.Channel] = c.Share
		avg[c.Channel] = c.Avg
	}
	used := significantChannels(avg, byDomain, topSites(d))
	series := names(used, channelNames)
	withOther := len(used) < len(allChannels(avg))
	if withOther {
		series = append(series, otherChannels)
	}
	rows := []stackRow{shareRow("watchlist average", avg, used, withOther)}
	var missing []string
	for _, s := range topSites(d) {
		if byDomain[s.Domain] == nil {
			missing = append(missing, s.Domain)
			continue
		}
		rows = append(rows, shareRow(s.Domain, byDomain[s.Domain], used, withOther))
	}
	note := "Share of each domain's visits by traffic source (estimates). Bars are 100% of the channels the API lists; the first row is the unweighted average over all loaded domains (view channel_mix). A segment wide enough prints its share; every segment also has it as a tooltip (shown by a mouse pointer resting on it, not on touch screens)."
	if withOther {
		note += fmt.Sprintf(" Channels under %s on average and under %s for every domain shown are summed as “%s”.", numfmt.Share(minChannelAvg), numfmt.Share(minChannelShare), otherChannels)
	}
	lc := &legendChart{Note: note, SVG: stackedShares("channel mix per domain", series, rows)}
	lc.Legend = legend(series)
	lc.Missing = someNames(missing)
	return lc
}

// A channel is drawn by name when it averages minChannelAvg over the watchlist or reaches
// minChannelShare of one domain shown; the others are summed as otherChannels, so the bars
// show the channels that matter instead of slivers.
const (
	minChannelAvg   = 0.02
	minChannelShare = 0.10
	otherChannels   = "Other channels"
)

// allChannels are the channels with a share somewhere: spec order, then unknown ones.
func allChannels(avg map[string]float64) []string {
	var out []string
	for _, ch := range append(channels, extraKeys(avg, channels)...) {
		if avg[ch] > 0 {
			out = append(out, ch)
		}
	}
	return out
}

func significantChannels(avg map[string]float64, byDomain map[string]map[string]float64, shown []site) []string {
	var out []string
	for _, ch := range allChannels(avg) {
		keep := avg[ch] >= minChannelAvg
		for _, s := range shown {
			keep = keep || byDomain[s.Domain][ch] >= minChannelShare
		}
		if keep {
			out = append(out, ch)
		}
	}
	return out
}

// shareRow is one bar: the shares of keys, then, withOther, the rest of the listed shares as
// one segment.
func shareRow(label string, shares map[string]float64, keys []string, withOther bool) stackRow {
	r := stackRow{Label: label}
	for _, k := range keys {
		r.Shares = append(r.Shares, shares[k])
	}
	if withOther {
		rest := 0.0
		for k, v := range shares {
			if !contains(keys, k) {
				rest += v
			}
		}
		r.Shares = append(r.Shares, rest)
	}
	return r
}

func extraKeys(m map[string]float64, known []string) []string {
	var out []string
	for k := range m {
		if !contains(known, k) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func names(keys []string, pretty map[string]string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k
		if p, ok := pretty[k]; ok {
			out[i] = p
		}
	}
	return out
}

func legend(series []string) []legendEntry {
	out := make([]legendEntry, len(series))
	for i, s := range series {
		out[i] = legendEntry{Name: s, Color: colorAt(i)}
	}
	return out
}

// maxAIPlatforms are drawn by name; the rest are summed as "other platforms".
const maxAIPlatforms = 7

func buildAI(d *data) *legendChart {
	total := d.AITotals
	if len(total) == 0 {
		return nil
	}
	platforms := make([]string, 0, len(total))
	for p := range total {
		platforms = append(platforms, p)
	}
	sort.Slice(platforms, func(i, j int) bool {
		if total[platforms[i]] != total[platforms[j]] {
			return total[platforms[i]] > total[platforms[j]]
		}
		return platforms[i] < platforms[j]
	})
	shown := platforms
	if len(shown) > maxAIPlatforms {
		shown = platforms[:maxAIPlatforms]
	}
	series := append([]string{}, shown...)
	if len(platforms) > len(shown) {
		series = append(series, "other platforms")
	}
	var rows []stackRow
	var missing []string
	for _, s := range topSites(d) {
		as := d.AI[s.Domain]
		if len(as) == 0 {
			missing = append(missing, s.Domain)
			continue
		}
		r := stackRow{Label: s.Domain, Shares: make([]float64, len(series)), Note: aiNote(s)}
		for _, a := range as {
			i := indexOf(shown, a.Platform)
			if i < 0 {
				i = len(series) - 1
			}
			r.Shares[i] += a.SharePct / 100
		}
		rows = append(rows, r)
	}
	return &legendChart{
		Note: "Each bar is 100% of the domain's AI-assistant referrals, split by platform (the API's percent shares). Beside it: AI-referred visits in the period and their share of the domain's visits. All estimates.",
		SVG:  stackedShares("AI referrals per domain by platform", series, rows), Legend: legend(series),
		Missing: someNames(missing),
	}
}

func aiNote(s site) string {
	if !s.AITotal.Valid {
		return "AI visits not stated"
	}
	n := numfmt.Count(float64(s.AITotal.Int64)) + " AI visits"
	if s.TotalVisits.Valid && s.TotalVisits.Float64 > 0 {
		n += " · " + numfmt.Share(float64(s.AITotal.Int64)/s.TotalVisits.Float64) + " of visits"
	}
	return n
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// geoTable is a heat table: one row per domain, one column per leading country.
type geoTable struct {
	Countries []string // column heads
	Rows      []geoRow
	Missing   string
}

type geoRow struct {
	Domain string
	Cells  []geoCell
	Other  string // listed shares outside the columns
}

type geoCell struct {
	Text  string
	Style template.CSS
}

const maxGeoColumns = 8

func buildGeography(d *data) *geoTable {
	if len(d.CountryWeight) == 0 {
		return nil
	}
	codes := make([]string, 0, len(d.CountryWeight))
	for _, c := range d.CountryWeight {
		codes = append(codes, c.Code)
	}
	name := map[string]string{}
	for _, c := range d.CountryWeight {
		name[c.Code] = c.Name
	}
	g := &geoTable{}
	for _, c := range codes {
		g.Countries = append(g.Countries, name[c])
	}
	var missing []string
	for _, s := range topSites(d) {
		cs := d.Countries[s.Domain]
		if len(cs) == 0 {
			missing = append(missing, s.Domain)
			continue
		}
		g.Rows = append(g.Rows, geoRow{Domain: s.Domain, Cells: geoCells(cs, codes), Other: geoOther(cs, codes)})
	}
	g.Missing = someNames(missing)
	return g
}

func geoCells(cs []countryShare, codes []string) []geoCell {
	cells := make([]geoCell, len(codes))
	for i, code := range codes {
		cells[i] = geoCell{Text: "—"}
		for _, c := range cs {
			if c.Code == code {
				alpha := math.Min(1, c.Share) * 0.85
				ink := inkColor
				if alpha > 0.5 {
					ink = "#ffffff"
				}
				cells[i] = geoCell{Text: numfmt.Share(c.Share), Style: template.CSS(fmt.Sprintf("background:rgba(78,121,167,%.2f);color:%s", alpha, ink))}
			}
		}
	}
	return cells
}

func geoOther(cs []countryShare, codes []string) string {
	var names []string
	for _, c := range cs {
		if !contains(codes, c.Code) {
			names = append(names, c.Name+" "+numfmt.Share(c.Share))
		}
	}
	if len(names) == 0 {
		return "—"
	}
	if len(names) > 3 {
		names = append(names[:3], fmt.Sprintf("%d more", len(names)-3))
	}
	return strings.Join(names, ", ")
}

type keywordSection struct {
	Rows     []keywordRow // one per domain
	Valuable []valuableKeyword
	Overlaps []overlapRow
}

type keywordRow struct {
	Domain   string
	Keywords []keywordChip
}

type keywordChip struct{ Keyword, Detail string }

type valuableKeyword struct{ Keyword, Domain, Volume, CPC, Value string }

type overlapRow struct{ Pair, Count, Keywords string }

func buildKeywords(d *data) *keywordSection {
	k := &keywordSection{}
	var all []keyword
	for _, s := range topSites(d) {
		kws := d.Keywords[s.Domain]
		if len(kws) == 0 {
			continue
		}
		row := keywordRow{Domain: s.Domain}
		for _, kw := range kws {
			row.Keywords = append(row.Keywords, keywordChip{Keyword: kw.Keyword, Detail: humanInt(kw.Volume) + " searches"})
			all = append(all, kw)
		}
		k.Rows = append(k.Rows, row)
	}
	if len(k.Rows) == 0 {
		return nil
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Value.Float64 > all[j].Value.Float64 })
	for i, kw := range all {
		if i == 10 || !kw.Value.Valid {
			break
		}
		k.Valuable = append(k.Valuable, valuableKeyword{Keyword: kw.Keyword, Domain: kw.Domain, Volume: humanInt(kw.Volume),
			CPC: usd(kw.CPC), Value: usd(kw.Value)})
	}
	for i, o := range d.Overlaps {
		if i == 10 {
			break
		}
		k.Overlaps = append(k.Overlaps, overlapRow{Pair: o.Domain + " ↔ " + o.Other, Count: fmt.Sprint(len(o.Keywords)),
			Keywords: strings.Join(o.Keywords, ", ")})
	}
	return k
}

func usd(v sql.NullFloat64) string {
	if !v.Valid {
		return "—"
	}
	f := v.Float64
	if f >= 1000 {
		return "$" + numfmt.Count(f)
	}
	return "$" + fmt.Sprintf("%.2f", f)
}

// competitorSection lists each competitor once, however many watchlist domains list it: the
// names the watchlist does not track yet first, then the watchlist's own domains, marked.
type competitorSection struct {
	Chart    *chart
	Rows     []compRow // the first maxCompetitors
	Folded   []compRow // the next ones, up to maxFolded, in a <details> of the page
	New, On  int       // competitors not on the watchlist, and on it
	Omitted  int       // beyond maxCompetitors+maxFolded: only in the view competitors
	Listings int       // domains that list at least one competitor
	// Candidates are discover's best domains not tracked yet (candidates.go).
	Candidates []candidateRow
	// CandidateFloor is their size floor in words, "5.00k" (discover.min_visits).
	CandidateFloor string
}

type compRow struct {
	Competitor, ListedBy, Visits, Rank, Ratio string
	OnWatchlist                               bool
}

// maxCompetitors are charted and listed open; up to maxFolded more are listed folded, so a
// mailed file holds the full list of any watchlist the page's size budget allows.
const (
	maxCompetitors = 20
	maxFolded      = 1000
)

func buildCompetitors(d *data) *competitorSection {
	t := d.Competitors
	if t == nil || len(t.Aggs) == 0 {
		return nil
	}
	sec := &competitorSection{Listings: t.Listings, New: t.New, On: t.On, Omitted: max(0, t.New+t.On-len(t.Aggs))}
	var bars []barRow
	for i, a := range t.Aggs {
		if i < maxCompetitors {
			sec.Rows = append(sec.Rows, a.row())
			bars = append(bars, a.bar())
		} else {
			sec.Folded = append(sec.Folded, a.row())
		}
	}
	sec.Chart = dotPlot("competitors by visits, log scale", bars)
	return sec
}

func (a *compAgg) bar() barRow {
	label := a.name
	if a.on {
		label += " (on watchlist)"
	}
	b := barRow{Label: label, Text: "visits " + numfmt.Dash}
	if a.hasVis {
		b.Value, b.Valid, b.Text = a.visits, true, numfmt.Count(a.visits)
	}
	b.Text += fmt.Sprintf(" · listed by %d", a.listed)
	return b
}

func (a *compAgg) row() compRow {
	r := compRow{Competitor: a.name, ListedBy: namesOf(a.listedBy, a.listed), Visits: numfmt.Dash, Rank: numfmt.Dash, Ratio: numfmt.Dash, OnWatchlist: a.on}
	if a.hasVis {
		r.Visits = numfmt.Count(a.visits)
	}
	if a.rank > 0 {
		r.Rank = "#" + numfmt.Thousands(a.rank)
	}
	if a.ratioLo.Valid {
		r.Ratio = numfmt.Ratio(a.ratioLo.Float64)
		if hi := numfmt.Ratio(a.ratioHi.Float64); hi != r.Ratio {
			r.Ratio += " – " + hi
		}
	}
	return r
}
