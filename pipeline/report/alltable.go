package report

import (
	"fmt"
	"html/template"
	"math"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"

	"sitewatch/pipeline/numfmt"
)

// allRow is one line of the "All domains" table: every loaded domain, however many. Each
// numeric cell carries its sort key (Key*, "" when the value is unknown) for the table's
// inline sort script; without script the table reads in the report's order (most visited
// first).
type allRow struct {
	Domain, Title, Category, Visits, MoM, MoMTone, YoY, YoYTone, Rank, RankChange, RankTone string
	AIVisits, Bounce, Pages, Duration, Source                                               string
	Attention, KeyAttention                                                                 string // "#3" and 3 when needs attention names it

	KeyVisits, KeyMoM, KeyYoY, KeyRank, KeyRankChange, KeyAI, KeyBounce, KeyPages, KeyDuration string
}

func buildSites(d *data) []allRow {
	sites := pageSites(d)
	flagged := attentionRanks(d)
	rows := make([]allRow, 0, len(sites))
	for _, s := range sites {
		r := allRow{Domain: s.Domain, Title: orDash(s.Title), Category: orDash(s.Category), Visits: humanNull(s.TotalVisits), Rank: rank(s.GlobalRank),
			RankChange: "—", AIVisits: humanInt(s.AITotal), Bounce: "—", Pages: "—", Duration: "—", MoM: "—", Source: "estimate"}
		if s.FromGA {
			r.Source = "analytics"
		}
		if n := flagged[s.Domain]; n > 0 {
			r.Attention, r.KeyAttention = "#"+strconv.Itoa(n), strconv.Itoa(n)
		}
		if s.TotalVisits.Valid {
			r.KeyVisits = strconv.FormatFloat(s.TotalVisits.Float64, 'f', -1, 64) // unrounded: the CSV carries it
		}
		if ch, ok := s.mom(); ok {
			r.MoM, r.MoMTone, r.KeyMoM = numfmt.Change(ch), changeTone(ch), key(ch)
		}
		r.YoY, r.YoYTone = s.yoyText()
		if ch, ok := s.yoy(); ok {
			r.KeyYoY = key(ch)
		}
		if s.GlobalRank.Valid {
			r.KeyRank = strconv.FormatInt(s.GlobalRank.Int64, 10)
		}
		rankChange(&r, s)
		if s.AITotal.Valid {
			r.KeyAI = strconv.FormatInt(s.AITotal.Int64, 10)
		}
		if s.BounceRate.Valid {
			r.Bounce, r.KeyBounce = numfmt.Share(s.BounceRate.Float64), key(s.BounceRate.Float64)
		}
		if s.PagesPerVis.Valid {
			r.Pages, r.KeyPages = numfmt.Plain(s.PagesPerVis.Float64, 2), key(s.PagesPerVis.Float64)
		}
		if s.DurationSec.Valid {
			r.Duration, r.KeyDuration = duration(s.DurationSec.Float64), key(s.DurationSec.Float64)
		}
		rows = append(rows, r)
	}
	return rows
}

// rankChange fills the places gained (▲) or lost (▼) since the previous snapshot.
func rankChange(r *allRow, s site) {
	if !s.GlobalRank.Valid || !s.PrevRank.Valid {
		return
	}
	delta := s.PrevRank.Int64 - s.GlobalRank.Int64
	r.KeyRankChange = strconv.FormatInt(delta, 10)
	switch {
	case delta > 0:
		r.RankChange, r.RankTone = "▲ "+numfmt.Thousands(delta), "up"
	case delta < 0:
		r.RankChange, r.RankTone = "▼ "+numfmt.Thousands(-delta), "down"
	default:
		r.RankChange = "="
	}
}

// key is a compact sort key: enough digits to order, few bytes for 5,000 rows.
func key(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// category is one top-level category of the All domains filter, with its number of domains.
type category struct {
	Name  string
	Count int
}

// categories are the top-level categories ("News & Media" of "News & Media > World") of the
// loaded domains, by name.
func categories(d *data) []category {
	out := make([]category, 0, len(d.Totals.Categories))
	for name, c := range d.Totals.Categories {
		out = append(out, category{name, c})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// allHeads are the All domains table's column headings, in order.
var allHeads = []string{"Domain", "Title", "Category", "Visits", "MoM", "YoY", "Global rank", "Rank change", "AI visits",
	"Bounce rate", "Pages / visit", "Avg. visit", "Traffic data", "Needs attention"}

// phoneOrder is the columns' order on a phone (DOM indexes): the domain, its needs-attention
// place and the figures first, title and category last, so Visits and MoM are on the first
// screen (the cells keep their DOM order; CSS order moves them).
var phoneOrder = []int{0, 13, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 1, 2}

// Cell geometry of the All domains table, in CSS px: 13 px text, 6 px padding each side, a
// 1 px border, the sort arrow a heading gets, and a title or category's widest before it is
// cut short with an ellipsis (whole on hover or tap, and in the CSV).
const (
	tableText  = 13.0
	cellExtra  = 2*6 + 1 + textSlack
	arrowW     = 14.0
	maxTextCol = 182.0
)

// boldFont is the headings' face. 3 is golang.org/x/image/font.WeightBold, named here by value
// so the report does not import x/image for one constant (TestBoldFontMeasured pins it).
var boldFont = font.Font{Typeface: "Liberation", Variant: "Sans", Weight: 3}

// allColumns measures each column of the All domains table with the page's font and returns
// the grid template every row shares: the widest cell or heading, so no cell is clipped
// (titles and categories stop at maxTextCol, cut short with an ellipsis).
func allColumns(rows []allRow) (wide, phone template.CSS) {
	widths := make([]float64, len(allHeads))
	bold := fonts.Lookup(boldFont, vg.Length(tableText))
	for i, h := range allHeads {
		widths[i] = float64(bold.Width(h)) + arrowW
	}
	face := fonts.Lookup(chartFont, vg.Length(tableText))
	seen := make([]map[string]bool, len(allHeads))
	for i := range seen {
		seen[i] = map[string]bool{}
	}
	for _, r := range rows {
		for i, v := range r.cells() {
			if seen[i][v] {
				continue
			}
			seen[i][v] = true
			widths[i] = math.Max(widths[i], float64(face.Width(v)))
		}
	}
	cols := make([]string, len(widths))
	for i, w := range widths {
		if i == 1 || i == 2 {
			w = math.Min(w, maxTextCol)
		}
		cols[i] = fmt.Sprintf("%.0fpx", math.Ceil(w+cellExtra))
	}
	onPhone := make([]string, len(cols))
	for i, c := range phoneOrder {
		onPhone[i] = cols[c]
	}
	// #nosec G203 -- numbers and "px" only
	return template.CSS(strings.Join(cols, " ")), template.CSS(strings.Join(onPhone, " "))
}

// cells are a row's texts in column order.
func (r allRow) cells() []string {
	return []string{r.Domain, r.Title, r.Category, r.Visits, r.MoM, r.YoY, r.Rank, r.RankChange, r.AIVisits, r.Bounce, r.Pages, r.Duration, r.Source, r.Attention}
}

// allLimit is how many matching rows the All domains script shows before "Show all": a sort
// or filter then lays out a few hundred rows, not 5,000 (each row is a reinserted grid row).
const allLimit = 250
