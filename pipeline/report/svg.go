package report

import (
	"fmt"
	"html"
	"html/template"
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

// maxScale bounds how far a chart grows to fill a wide card. A chart never shrinks below its
// own size on screen (min-width): its texts keep their 10-12 px, and a narrow screen scrolls
// the chart's wrapper sideways instead; print scales it to the page.
const maxScale = 1.15

// html returns the finished <svg> element. Every text in it went through html.EscapeString.
func (s *svgDoc) html() template.HTML {
	return template.HTML(fmt.Sprintf( // #nosec G203 -- built here, every text escaped
		`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" style="min-width:%.0fpx;max-width:%.0fpx" role="img" aria-label="%s" font-family="Liberation Sans, Arial, sans-serif">%s</svg>`,
		s.w, s.h, s.w, s.h, s.w, s.w*maxScale, html.EscapeString(s.label), s.b.String()))
}
