package report

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/font/liberation"
	"gonum.org/v1/plot/vg"
)

// The charts are written as SVG by hand rather than through gonum/plot: small multiples, value
// labels on bars and label columns sized to their longest label need exact control over every
// text's position, which plot's axes and legends do not give. Text is measured with the metrics
// of the font the page embeds (Liberation Sans, bundled with gonum/plot), so a label's box is
// known before the browser draws it and no label is cut off.

// chartFont is the sans-serif face of the Liberation fonts bundled with gonum/plot; fontFace
// embeds the same file in the page.
var chartFont = font.Font{Typeface: "Liberation", Variant: "Sans"}

// fonts holds the Liberation faces; a cache of our own, as gonum's DefaultCache is filled only
// when the plot package is linked.
var fonts = font.NewCache(liberation.Collection())

// textWidth returns the advance width of s at size (SVG user units = CSS px at scale 1).
func textWidth(s string, size float64) float64 {
	face := fonts.Lookup(chartFont, vg.Length(size))
	return float64(face.Width(s))
}

// svgDoc accumulates the elements of one SVG image whose user units are CSS pixels.
type svgDoc struct {
	w, h  float64
	label string // aria-label: what the chart shows
	b     strings.Builder
}

func newSVG(w, h float64, label string) *svgDoc { return &svgDoc{w: w, h: h, label: label} }

// text writes s at (x, y) (baseline); anchor is start, middle or end. The text is escaped.
func (s *svgDoc) text(x, y float64, size float64, anchor, fill, str string) {
	fmt.Fprintf(&s.b, `<text x="%.1f" y="%.1f" font-size="%g" text-anchor="%s" fill="%s">%s</text>`,
		x, y, size, anchor, fill, html.EscapeString(str))
}

// rect writes a filled rectangle with an optional tooltip.
func (s *svgDoc) rect(x, y, w, h float64, fill, tip string) {
	if w < 0 {
		x, w = x+w, -w
	}
	if tip == "" {
		fmt.Fprintf(&s.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`, x, y, w, h, fill)
		return
	}
	fmt.Fprintf(&s.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s</title></rect>`,
		x, y, w, h, fill, html.EscapeString(tip))
}

func (s *svgDoc) line(x1, y1, x2, y2 float64, stroke string, width float64) {
	fmt.Fprintf(&s.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%g"/>`,
		x1, y1, x2, y2, stroke, width)
}

func (s *svgDoc) polyline(pts [][2]float64, stroke string, width float64) {
	var b strings.Builder
	for i, p := range pts {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%.1f,%.1f", p[0], p[1])
	}
	fmt.Fprintf(&s.b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="%g" stroke-linejoin="round"/>`,
		b.String(), stroke, width)
}

func (s *svgDoc) circle(x, y, r float64, fill, stroke string) {
	fmt.Fprintf(&s.b, `<circle cx="%.1f" cy="%.1f" r="%g" fill="%s" stroke="%s" stroke-width="1.5"/>`, x, y, r, fill, stroke)
}

// maxScale bounds how far a fixed-geometry chart grows to fill a wide card; it never shrinks
// below its drawn size, as chart.html shows its narrow variant instead.
const maxScale = 1.15

// html returns the finished <svg> element, scaled to its box (viewBox). Every text in it went
// through html.EscapeString.
func (s *svgDoc) html() template.HTML {
	return template.HTML(fmt.Sprintf( // #nosec G203 -- built here, every text escaped
		`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" style="max-width:%.0fpx" role="img" aria-label="%s" font-family="Liberation Sans, Arial, sans-serif">%s</svg>`,
		s.w, s.h, s.w, s.h, s.w*maxScale, html.EscapeString(s.label), s.b.String()))
}

// The narrow variant of a chart is fluid: no viewBox, so user units stay CSS pixels and texts
// keep their size, and every horizontal position is a percentage of the chart's width (plus a
// pixel offset dx for texts), so it reflows to any width down to narrowMin without scaling.

// narrowMin is the narrowest chart box the fluid variants are laid out for: a 320 px phone's
// page less the page's and section's padding.
const narrowMin = 280.0

// pc formats a percentage position.
func pc(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) + "%" }

// textP writes s with its anchor at xPct percent of the width, shifted dx pixels.
func (s *svgDoc) textP(xPct, dx, y, size float64, anchor, fill, str string) {
	fmt.Fprintf(&s.b, `<text x="%s" dx="%.1f" y="%.1f" font-size="%g" text-anchor="%s" fill="%s">%s</text>`,
		pc(xPct), dx, y, size, anchor, fill, html.EscapeString(str))
}

// rectP writes a rectangle from xPct to xPct+wPct percent of the width.
func (s *svgDoc) rectP(xPct, y, wPct, h float64, fill, tip string) {
	if wPct < 0 {
		xPct, wPct = xPct+wPct, -wPct
	}
	fmt.Fprintf(&s.b, `<rect x="%s" y="%.1f" width="%s" height="%.1f" fill="%s">`, pc(xPct), y, pc(wPct), h, fill)
	if tip != "" {
		fmt.Fprintf(&s.b, `<title>%s</title>`, html.EscapeString(tip))
	}
	s.b.WriteString(`</rect>`)
}

func (s *svgDoc) lineP(x1Pct, y1, x2Pct, y2 float64, stroke string, width float64) {
	fmt.Fprintf(&s.b, `<line x1="%s" y1="%.1f" x2="%s" y2="%.1f" stroke="%s" stroke-width="%g"/>`,
		pc(x1Pct), y1, pc(x2Pct), y2, stroke, width)
}

func (s *svgDoc) circleP(xPct, y, r float64, fill, stroke, tip string) {
	fmt.Fprintf(&s.b, `<circle cx="%s" cy="%.1f" r="%g" fill="%s" stroke="%s" stroke-width="1.5">`, pc(xPct), y, r, fill, stroke)
	if tip != "" {
		fmt.Fprintf(&s.b, `<title>%s</title>`, html.EscapeString(tip))
	}
	s.b.WriteString(`</circle>`)
}

// fluidHTML returns the narrow variant: 100% wide, s.h pixels tall, never scaled.
func (s *svgDoc) fluidHTML() template.HTML {
	return template.HTML(fmt.Sprintf( // #nosec G203 -- built here, every text escaped
		`<svg xmlns="http://www.w3.org/2000/svg" width="100%%" height="%.0f" style="height:%.0fpx" role="img" aria-label="%s" font-family="Liberation Sans, Arial, sans-serif">%s</svg>`,
		s.h, s.h, html.EscapeString(s.label), s.b.String()))
}

// chart is one chart in two layouts: Wide, drawn at a fixed geometry and scaled up to
// maxScale, shows when the chart's box is at least its drawn width; Narrow, fluid, shows
// otherwise. A container query picks one, so no chart is ever wider than its screen and no
// text is drawn smaller than it was laid out.
type chart struct {
	Wide, Narrow template.HTML
	WideMin      int // the box width (CSS px) from which Wide shows
}

func newChart(wide, narrow *svgDoc) *chart {
	return &chart{Wide: wide.html(), Narrow: narrow.fluidHTML(), WideMin: int(math.Ceil(wide.w/10) * 10)}
}

// HTML is the chart's markup; its class names the breakpoint chartCSS writes a rule for.
func (c *chart) HTML() template.HTML {
	if c == nil {
		return ""
	}
	return template.HTML(fmt.Sprintf(`<div class="chart cq%d"><div class="wide">%s</div><div class="narrow">%s</div></div>`, // #nosec G203 -- both parts built here
		c.WideMin, c.Wide, c.Narrow))
}

// chartCSS writes one container-query rule per breakpoint the page's charts use.
func chartCSS(charts ...*chart) template.CSS {
	seen := map[int]bool{}
	var b strings.Builder
	for _, c := range charts {
		if c == nil || seen[c.WideMin] {
			continue
		}
		seen[c.WideMin] = true
		fmt.Fprintf(&b, "@container (min-width:%dpx){.cq%d>.wide{display:block}.cq%d>.narrow{display:none}}\n", c.WideMin, c.WideMin, c.WideMin)
	}
	return template.CSS(b.String()) // #nosec G203 -- numbers only
}

// plotLines writes a nested, stretched SVG spanning x0Pct..x1Pct of the width and y..y+h
// pixels, holding lines whose points are fractions (0–1, y up); the strokes keep their width
// however the box stretches (vector-effect). dashed lines are drawn dashed.
func (s *svgDoc) plotLines(x0Pct, x1Pct, y, h float64, lines []plotLine) {
	fmt.Fprintf(&s.b, `<svg x="%s" y="%.1f" width="%s" height="%.1f" viewBox="0 0 1000 1000" preserveAspectRatio="none" overflow="visible">`,
		pc(x0Pct), y, pc(x1Pct-x0Pct), h)
	for _, l := range lines {
		var b strings.Builder
		for i, p := range l.Points {
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%.1f,%.1f", p[0]*1000, (1-p[1])*1000)
		}
		dash := ""
		if l.Dashed {
			dash = ` stroke-dasharray="4 3"`
		}
		fmt.Fprintf(&s.b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="%g" stroke-linejoin="round" vector-effect="non-scaling-stroke"%s/>`,
			b.String(), l.Color, l.Width, dash)
	}
	s.b.WriteString(`</svg>`)
}

// plotLine is one line of plotLines.
type plotLine struct {
	Points [][2]float64
	Color  string
	Width  float64
	Dashed bool
}

// band writes an invisible column from xPct to xPct+wPct percent over y..y+h that shows tip on
// hover (<title>) and carries it as data-t for the page's tap handler.
func (s *svgDoc) band(xPct, y, wPct, h float64, tip string) {
	t := html.EscapeString(tip)
	fmt.Fprintf(&s.b, `<rect class="tip" x="%s" y="%.1f" width="%s" height="%.1f" fill="transparent" data-t="%s"><title>%s</title></rect>`,
		pc(xPct), y, pc(wPct), h, t, t)
}
