package report

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"

	"sitewatch/pipeline/numfmt"
)

// Geometry in CSS pixels (SVG user units).
const (
	labelSize = 12.0 // row labels
	valueSize = 11.0 // values on bars, axis labels
	rowH      = 22.0 // one bar row
	barH      = 14.0
	gap       = 8.0 // between a label column and its bars
	barsW     = 600.0
	// textSlack absorbs the browser's sub-pixel difference from the font metrics measured
	// here (Chromium drew "watchlist average" 0.6 px wider than its column).
	textSlack = 2.0
)

// palette is Tableau 10: distinguishable and colour-blind friendlier than most defaults.
var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
	"#ff9da7", "#9c755f", "#bab0ac"}

const (
	inkColor   = "#1d2330"
	mutedColor = "#5b6473"
	gridColor  = "#dde1e7"
	upColor    = "#2e7d32"
	downColor  = "#c62828"
	barColor   = "#4e79a7"
)

func colorAt(i int) string { return palette[i%len(palette)] }

// textOn returns black or white, whichever reads better on the fill colour hex (#rrggbb).
func textOn(hex string) string {
	v, err := strconv.ParseUint(hex[1:], 16, 32)
	if err != nil {
		return inkColor
	}
	r, g, b := float64(v>>16&0xff), float64(v>>8&0xff), float64(v&0xff)
	if 0.299*r+0.587*g+0.114*b > 150 {
		return inkColor
	}
	return "#ffffff"
}

// maxWidth is the widest of texts at size, plus textSlack when any has a width.
func maxWidth(texts []string, size float64) float64 {
	w := 0.0
	for _, t := range texts {
		w = math.Max(w, textWidth(t, size))
	}
	if w > 0 {
		w += textSlack
	}
	return w
}

// sparkMin is the narrowest small multiple the sparkline is laid out for.
const sparkMin = 240.0

// sparkline draws one domain's monthly visits over its whole history, fluid in width, scaled
// from its lowest to its highest month (both labelled, so a few-percent move shows and reads
// as one): the latest month a filled dot, the same month a year earlier a hollow dot with that
// month on the axis, and every month's value on hover and tap.
func sparkline(domain string, pts []point, yearAgo time.Time) template.HTML {
	const h, top, plotH, x0, x1 = 112.0, 20.0, 60.0, 2.0, 98.0
	s := newSVG(0, h, "monthly visits of "+domain)
	if len(pts) == 0 {
		s.textP(50, 0, h/2, valueSize, "middle", mutedColor, "no traffic history in this snapshot")
		return s.fluidHTML()
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range pts {
		lo, hi = math.Min(lo, p.Visits), math.Max(hi, p.Visits)
	}
	pad := (hi - lo) * 0.06
	if pad == 0 {
		pad = math.Max(hi*0.05, 1)
	}
	fy := func(v float64) float64 { return (v - lo + pad) / (hi - lo + 2*pad) }
	py := func(v float64) float64 { return top + (1-fy(v))*plotH }
	first, last := monthIndex(pts[0].Month), monthIndex(pts[len(pts)-1].Month)
	fx := func(t time.Time) float64 {
		if last == first {
			return 0.5
		}
		return (monthIndex(t) - first) / (last - first)
	}
	xp := func(t time.Time) float64 { return x0 + fx(t)*(x1-x0) }
	s.lineP(0, py(hi), 100, py(hi), gridColor, 1)
	s.lineP(0, py(lo), 100, py(lo), gridColor, 1)
	s.textP(0, 0, py(hi)-4, valueSize, "start", mutedColor, "high "+numfmt.Count(hi))
	s.textP(0, 0, py(lo)+13, valueSize, "start", mutedColor, lowLabel(lo, hi))
	line := make([][2]float64, len(pts))
	for i, p := range pts {
		line[i] = [2]float64{fx(p.Month), fy(p.Visits)}
	}
	s.plotLines(x0, x1, top, plotH, []plotLine{{Points: line, Color: barColor, Width: 1.8}})
	bandW := x1 - x0
	if len(pts) > 1 {
		bandW /= float64(len(pts) - 1)
	}
	for _, p := range pts {
		s.band(math.Max(0, xp(p.Month)-bandW/2), top-6, bandW, plotH+12, p.Month.Format("Jan 2006")+": "+numfmt.Count(p.Visits))
	}
	for _, p := range pts {
		if p.Month.Equal(yearAgo) {
			s.circleP(xp(p.Month), py(p.Visits), 3.2, "#ffffff", mutedColor, "a year earlier, "+p.Month.Format("Jan 2006")+": "+numfmt.Count(p.Visits))
		}
	}
	lp := pts[len(pts)-1]
	s.circleP(xp(lp.Month), py(lp.Visits), 3.2, barColor, barColor, "latest, "+lp.Month.Format("Jan 2006")+": "+numfmt.Count(lp.Visits))
	sparkAxis(s, h-4, pts[0].Month, lp.Month, yearAgo, xp)
	return s.fluidHTML()
}

// lowLabel marks a chart scaled from its own low to its own high with how far apart they are,
// "low 1.10M (−7.4% of the high)", so a box a ±7 % domain fills does not read as a collapse.
func lowLabel(lo, hi float64) string {
	l := "low " + numfmt.Count(lo)
	if hi > 0 && lo < hi {
		l += " (" + numfmt.Change(lo/hi-1) + " of the high)"
	}
	return l
}

// sparkAxis labels the first and latest months, and the month a year earlier whenever it
// falls inside the history: under its hollow dot, or, when that would crowd the first or the
// latest label at the narrowest width, on a line of its own below them, starting (or, in the
// right half, ending) at the dot, the chart one line taller. A chart never draws a year-ago
// dot without its month.
func sparkAxis(s *svgDoc, y float64, first, last, yearAgo time.Time, xp func(time.Time) float64) {
	f, l := first.Format("Jan 2006"), last.Format("Jan 2006")
	s.textP(0, 0, y, valueSize, "start", mutedColor, f)
	if !last.Equal(first) {
		s.textP(100, 0, y, valueSize, "end", mutedColor, l)
	}
	if yearAgo.Before(first) || !yearAgo.Before(last) || yearAgo.Equal(first) {
		return
	}
	ya := yearAgo.Format("Jan 2006")
	x := xp(yearAgo)
	mid, half := x/100*sparkMin, textWidth(ya, valueSize)/2
	if mid-half >= textWidth(f, valueSize)+6 && mid+half <= sparkMin-textWidth(l, valueSize)-6 {
		s.textP(x, 0, y, valueSize, "middle", mutedColor, ya)
		return
	}
	s.h += axisLineH
	if x < 50 {
		s.textP(x, -2, y+axisLineH, valueSize, "start", mutedColor, "↑ "+ya)
		return
	}
	s.textP(x, 2, y+axisLineH, valueSize, "end", mutedColor, ya+" ↑")
}

// axisLineH is the height of a second line of axis labels.
const axisLineH = 13.0

func monthIndex(t time.Time) float64 { return float64(t.Year()*12 + int(t.Month()) - 1) }

// barRow is one labelled value of a single-series chart.
type barRow struct {
	Label string
	Value float64
	Valid bool
	Text  string // the value printed beside the mark
}

// Narrow layouts put each row's label (and, when both fit in narrowMin, its value) on a line
// above its mark.
const (
	lineH     = 15.0 // one text line of a narrow row
	markLineH = 16.0 // the line holding a narrow row's bar or dot
	rowGap    = 6.0
)

// narrowHead writes a row's label at the left and text at the right edge on one line, or on
// two when they would not fit side by side in narrowMin; it returns the y below them.
func narrowHead(s *svgDoc, y float64, label, text string, textFill string) float64 {
	// 1 px in from each edge: a glyph such as w or j reaches left of its origin.
	s.textP(0, 1, y+12, labelSize, "start", inkColor, label)
	if text == "" {
		return y + lineH
	}
	if textWidth(label, labelSize)+textWidth(text, valueSize)+gap+textSlack > narrowMin {
		y += lineH
	}
	s.textP(100, -1, y+12, valueSize, "end", textFill, text)
	return y + lineH
}

// logAxis is a log scale over the valid positive values of rows: decades e0 to e1.
type logAxis struct{ e0, e1 float64 }

func newLogAxis(rows []barRow) logAxis {
	lo, hi := math.Inf(1), 0.0
	for _, r := range rows {
		if r.Valid && r.Value > 0 {
			lo, hi = math.Min(lo, r.Value), math.Max(hi, r.Value)
		}
	}
	if hi == 0 {
		lo, hi = 1, 10
	}
	a := logAxis{math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))}
	if a.e1 == a.e0 {
		a.e1++
	}
	return a
}

// frac is v's position on the axis, 0 to 1.
func (a logAxis) frac(v float64) float64 { return (math.Log10(v) - a.e0) / (a.e1 - a.e0) }

// ticks are the decades to label, every step-th so that at most maxTicks are drawn.
func (a logAxis) ticks(maxTicks int) []float64 {
	step := math.Ceil((a.e1 - a.e0 + 1) / float64(maxTicks))
	var out []float64
	for e := a.e0; e <= a.e1; e += step {
		out = append(out, e)
	}
	return out
}

// axisCount labels a round axis value without trailing zeros: 1k, 100M, 10B.
func axisCount(v float64) string {
	h := numfmt.Count(v)
	unit := strings.TrimLeft(h, "0123456789.")
	return numfmt.TrimZeros(strings.TrimSuffix(h, unit)) + unit
}

// dotPlot draws one dot per row on a log scale: a dot's position, not a bar's length, carries
// the value, so values of different orders of magnitude compare honestly. The value is
// printed in its own column (wide) or at the right of the row's label (narrow).
func dotPlot(title string, rows []barRow) *chart {
	ax := newLogAxis(rows)
	return newChart(dotPlotWide(title, rows, ax), dotPlotNarrow(title, rows, ax))
}

func dotPlotWide(title string, rows []barRow, ax logAxis) *svgDoc {
	const plotW = 480.0
	labels, texts := make([]string, len(rows)), make([]string, len(rows))
	for i, r := range rows {
		labels[i], texts[i] = r.Label, r.Text
	}
	labelW := maxWidth(labels, labelSize) + gap
	valueW := maxWidth(texts, valueSize)
	top, pad := 24.0, 6.0
	w := labelW + pad + plotW + pad + gap + valueW + 2
	h := top + rowH*float64(len(rows)) + 4
	s := newSVG(w, h, title)
	x := func(f float64) float64 { return labelW + pad + f*plotW }
	for _, e := range ax.ticks(12) {
		xe := x((e - ax.e0) / (ax.e1 - ax.e0))
		s.line(xe, top-4, xe, h-4, gridColor, 1)
		anchor := "middle"
		switch e {
		case ax.e0:
			anchor = "start"
		case ax.e1:
			anchor = "end"
		}
		s.text(xe, top-9, valueSize, anchor, mutedColor, axisCount(math.Pow(10, e)))
	}
	for i, r := range rows {
		y := top + rowH*float64(i) + rowH/2
		s.text(labelW-gap, y+4, labelSize, "end", inkColor, r.Label)
		s.line(x(0), y, x(1), y, gridColor, 1)
		if r.Valid && r.Value > 0 {
			s.circle(x(ax.frac(r.Value)), y, 4.5, barColor, barColor)
		}
		s.text(x(1)+pad+gap, y+4, valueSize, "start", inkColor, r.Text)
	}
	return s
}

func dotPlotNarrow(title string, rows []barRow, ax logAxis) *svgDoc {
	// A dot at 0% or 100% would be cut in half: the plot spans 2% to 98%.
	xp := func(f float64) float64 { return 2 + 96*f }
	s := newSVG(0, 0, title)
	y := 16.0
	ticks := ax.ticks(int(narrowMin / 56))
	for _, e := range ticks {
		f := (e - ax.e0) / (ax.e1 - ax.e0)
		anchor := "middle"
		switch {
		case e == ticks[0]:
			anchor = "start"
		case f == 1:
			anchor = "end"
		}
		s.textP(xp(f), 0, 11, valueSize, anchor, mutedColor, axisCount(math.Pow(10, e)))
	}
	for _, r := range rows {
		y = narrowHead(s, y, r.Label, r.Text, inkColor)
		mid := y + markLineH/2
		s.lineP(0, mid, 100, mid, gridColor, 1)
		for _, e := range ticks { // gridlines cross the dots' line only, never a label
			xe := xp((e - ax.e0) / (ax.e1 - ax.e0))
			s.lineP(xe, y, xe, y+markLineH, gridColor, 1)
		}
		if r.Valid && r.Value > 0 {
			s.circleP(xp(ax.frac(r.Value)), mid, 4.5, barColor, barColor, r.Label+": "+r.Text)
		}
		y += markLineH + rowGap
	}
	s.h = y
	return s
}

// divergingBars draws signed changes (decimals, 0.25 = +25%) around a zero line, bars capped at
// ±capAt so one outlier does not flatten the rest; the printed value is always the true one.
func divergingBars(title string, rows []barRow, capAt float64) *chart {
	span := 0.0
	for _, r := range rows {
		if r.Valid {
			span = math.Max(span, math.Min(math.Abs(r.Value), capAt))
		}
	}
	if span == 0 {
		span = 0.1
	}
	return newChart(divergingWide(title, rows, capAt, span), divergingNarrow(title, rows, capAt, span))
}

func divergingWide(title string, rows []barRow, capAt, span float64) *svgDoc {
	labels, texts := make([]string, len(rows)), make([]string, len(rows))
	for i, r := range rows {
		labels[i], texts[i] = r.Label, r.Text
	}
	labelW := maxWidth(labels, labelSize) + gap
	valueW := maxWidth(texts, valueSize) + gap
	half := barsW / 2
	zero := labelW + valueW + half
	top := 24.0
	w := zero + half + valueW + 4
	h := top + rowH*float64(len(rows)) + 4
	s := newSVG(w, h, title)
	s.line(zero, top-4, zero, h-4, mutedColor, 1)
	s.text(zero, top-9, valueSize, "middle", mutedColor, "0%")
	s.text(zero-half, top-9, valueSize, "start", mutedColor, numfmt.Change(-span))
	s.text(zero+half, top-9, valueSize, "end", mutedColor, numfmt.Change(span))
	for i, r := range rows {
		y := top + rowH*float64(i)
		s.text(labelW-gap, y+rowH/2+4, labelSize, "end", inkColor, r.Label)
		if !r.Valid {
			s.text(zero+4, y+rowH/2+4, valueSize, "start", mutedColor, r.Text)
			continue
		}
		v := math.Max(-capAt, math.Min(capAt, r.Value))
		bw := v / span * half
		s.rect(zero, y+(rowH-barH)/2, bw, barH, changeFill(v), r.Label+": "+r.Text)
		if v >= 0 {
			s.text(zero+bw+4, y+rowH/2+4, valueSize, "start", inkColor, r.Text)
		} else {
			s.text(zero+bw-4, y+rowH/2+4, valueSize, "end", inkColor, r.Text)
		}
	}
	return s
}

func changeFill(v float64) string {
	if v < 0 {
		return downColor
	}
	return upColor
}

func divergingNarrow(title string, rows []barRow, capAt, span float64) *svgDoc {
	s := newSVG(0, 0, title)
	s.textP(0, 0, 11, valueSize, "start", mutedColor, numfmt.Change(-span))
	s.textP(50, 0, 11, valueSize, "middle", mutedColor, "0%")
	s.textP(100, 0, 11, valueSize, "end", mutedColor, numfmt.Change(span))
	y := 16.0
	start := y
	for _, r := range rows {
		fill := inkColor
		if !r.Valid {
			fill = mutedColor
		}
		y = narrowHead(s, y, r.Label, r.Text, fill)
		if r.Valid {
			v := math.Max(-capAt, math.Min(capAt, r.Value))
			s.rectP(50, y+2, v/span*50, markLineH-4, changeFill(v), r.Label+": "+r.Text)
		}
		y += markLineH + rowGap
	}
	s.lineP(50, start-2, 50, y, mutedColor, 1)
	s.h = y
	return s
}

// stackRow is one bar of a 100% stacked chart: shares (0–1) per series, and a note printed
// after the bar.
type stackRow struct {
	Label  string
	Shares []float64
	Note   string
}

// stackedShares draws each row as a bar of width 100% split by series; a segment wide enough
// for its value shows it, every segment has a tooltip, and the legend is drawn by the page.
func stackedShares(title string, series []string, rows []stackRow) *chart {
	return newChart(stackedWide(title, series, rows), stackedNarrow(title, series, rows))
}

// scaledShares are a row's shares scaled to sum to at most 1 (API rounding can exceed it).
func scaledShares(r stackRow) []float64 {
	scale := 1.0
	if total := sum(r.Shares); total > 1 {
		scale = 1 / total
	}
	out := make([]float64, len(r.Shares))
	for i, v := range r.Shares {
		out[i] = v * scale
	}
	return out
}

func stackedWide(title string, series []string, rows []stackRow) *svgDoc {
	labels, notes := make([]string, len(rows)), make([]string, len(rows))
	for i, r := range rows {
		labels[i], notes[i] = r.Label, r.Note
	}
	labelW := maxWidth(labels, labelSize) + gap
	noteW := maxWidth(notes, valueSize)
	if noteW > 0 {
		noteW += gap
	}
	top := 6.0
	w := labelW + barsW + noteW + 4
	h := top + rowH*float64(len(rows)) + 4
	s := newSVG(w, h, title)
	for i, r := range rows {
		y := top + rowH*float64(i)
		s.text(labelW-gap, y+rowH/2+4, labelSize, "end", inkColor, r.Label)
		x := labelW
		for si, share := range scaledShares(r) {
			if share <= 0 {
				continue
			}
			sw := share * barsW
			fill := colorAt(si)
			s.rect(x, y+(rowH-barH-2)/2, sw, barH+2, fill, fmt.Sprintf("%s — %s: %s", r.Label, series[si], numfmt.Share(r.Shares[si])))
			if v := numfmt.Share(r.Shares[si]); textWidth(v, valueSize-1)+6 <= sw {
				s.text(x+sw/2, y+rowH/2+4, valueSize-1, "middle", textOn(fill), v)
			}
			x += sw
		}
		if r.Note != "" {
			s.text(labelW+barsW+gap, y+rowH/2+4, valueSize, "start", inkColor, r.Note)
		}
	}
	return s
}

func stackedNarrow(title string, series []string, rows []stackRow) *svgDoc {
	s := newSVG(0, 0, title)
	y := 2.0
	for _, r := range rows {
		y = narrowHead(s, y, r.Label, r.Note, mutedColor)
		x := 0.0
		for si, share := range scaledShares(r) {
			if share <= 0 {
				continue
			}
			fill := colorAt(si)
			s.rectP(x*100, y+1, share*100, markLineH, fill, fmt.Sprintf("%s — %s: %s", r.Label, series[si], numfmt.Share(r.Shares[si])))
			// Printed only where the segment holds it at the narrowest width laid out for.
			if v := numfmt.Share(r.Shares[si]); textWidth(v, valueSize-1)+6 <= share*narrowMin {
				s.textP((x+share/2)*100, 0, y+markLineH/2+5, valueSize-1, "middle", textOn(fill), v)
			}
			x += share
		}
		y += markLineH + 2 + rowGap
	}
	s.h = y
	return s
}
func sum(vs []float64) float64 {
	t := 0.0
	for _, v := range vs {
		t += v
	}
	return t
}
