package report

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"time"
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

// sparkline draws one domain's monthly visits on its own scale starting at 0: the latest month
// as a filled dot, the same month a year earlier as a hollow one, the first and last months
// and the peak labelled.
func sparkline(domain string, pts []point, yearAgo time.Time) template.HTML {
	const w, h, top, bottom, left, right = 260.0, 92.0, 18.0, 70.0, 6.0, 254.0
	s := newSVG(w, h, "monthly visits of "+domain)
	if len(pts) == 0 {
		s.text(w/2, h/2, valueSize, "middle", mutedColor, "no traffic history in this snapshot")
		return s.html()
	}
	peak := 0.0
	for _, p := range pts {
		peak = math.Max(peak, p.Visits)
	}
	if peak == 0 {
		peak = 1
	}
	first, last := monthIndex(pts[0].Month), monthIndex(pts[len(pts)-1].Month)
	x := func(t time.Time) float64 {
		if last == first {
			return (left + right) / 2
		}
		return left + (monthIndex(t)-first)/(last-first)*(right-left)
	}
	y := func(v float64) float64 { return bottom - v/peak*(bottom-top) }
	s.line(left, bottom, right, bottom, gridColor, 1)
	s.line(left, top, right, top, gridColor, 1)
	s.text(right, top-5, valueSize, "end", mutedColor, "peak "+human(peak))
	var line [][2]float64
	for _, p := range pts {
		line = append(line, [2]float64{x(p.Month), y(p.Visits)})
	}
	s.polyline(line, barColor, 1.8)
	for _, p := range pts {
		if p.Month.Equal(yearAgo) {
			s.circle(x(p.Month), y(p.Visits), 3.2, "#ffffff", mutedColor)
		}
	}
	lp := pts[len(pts)-1]
	s.circle(x(lp.Month), y(lp.Visits), 3.2, barColor, barColor)
	s.text(left, h-6, valueSize, "start", mutedColor, pts[0].Month.Format("Jan 2006"))
	s.text(right, h-6, valueSize, "end", mutedColor, lp.Month.Format("Jan 2006"))
	return s.html()
}

func monthIndex(t time.Time) float64 { return float64(t.Year()*12 + int(t.Month()) - 1) }

// barRow is one labelled bar of a single-series chart.
type barRow struct {
	Label string
	Value float64
	Valid bool
	Text  string // the value printed beside the bar
}

// logBars draws one horizontal bar per row on a log scale (values of different orders of
// magnitude stay comparable), gridlines at each power of ten, the value printed after each bar.
func logBars(title string, rows []barRow) template.HTML {
	lo, hi := math.Inf(1), 0.0
	labels, texts := make([]string, len(rows)), make([]string, len(rows))
	for i, r := range rows {
		labels[i], texts[i] = r.Label, r.Text
		if r.Valid && r.Value > 0 {
			lo, hi = math.Min(lo, r.Value), math.Max(hi, r.Value)
		}
	}
	if hi == 0 {
		lo, hi = 1, 10
	}
	e0, e1 := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if e1 == e0 {
		e1++
	}
	labelW := maxWidth(labels, labelSize) + gap
	valueW := maxWidth(texts, valueSize) + gap
	top := 24.0
	w := labelW + barsW + valueW + 4
	h := top + rowH*float64(len(rows)) + 4
	s := newSVG(w, h, title)
	xOf := func(v float64) float64 { return labelW + (math.Log10(v)-e0)/(e1-e0)*barsW }
	labelled := math.Inf(-1) // right end of the last axis label drawn
	for e := e0; e <= e1; e++ {
		x := labelW + (e-e0)/(e1-e0)*barsW
		s.line(x, top-4, x, h-4, gridColor, 1)
		label := human(math.Pow(10, e))
		tw := textWidth(label, valueSize)
		x0, anchor := x-tw/2, "middle"
		switch {
		case e == e0:
			x0, anchor = x, "start"
		case e == e1:
			x0, anchor = x-tw, "end"
		}
		if x0 < labelled+6 {
			continue // would touch the previous label: the gridline stays, unlabelled
		}
		s.text(x, top-9, valueSize, anchor, mutedColor, label)
		labelled = x0 + tw
	}
	for i, r := range rows {
		y := top + rowH*float64(i)
		s.text(labelW-gap, y+rowH/2+4, labelSize, "end", inkColor, r.Label)
		end := labelW
		if r.Valid && r.Value > 0 {
			end = math.Max(xOf(r.Value), labelW+2)
			s.rect(labelW, y+(rowH-barH)/2, end-labelW, barH, barColor, r.Label+": "+r.Text)
		}
		s.text(end+4, y+rowH/2+4, valueSize, "start", inkColor, r.Text)
	}
	return s.html()
}

// divergingBars draws signed changes (decimals, 0.25 = +25%) around a zero line, bars capped at
// ±capAt so one outlier does not flatten the rest; the printed value is always the true one.
func divergingBars(title string, rows []barRow, capAt float64) template.HTML {
	labels, texts := make([]string, len(rows)), make([]string, len(rows))
	span := 0.0
	for i, r := range rows {
		labels[i], texts[i] = r.Label, r.Text
		if r.Valid {
			span = math.Max(span, math.Min(math.Abs(r.Value), capAt))
		}
	}
	if span == 0 {
		span = 0.1
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
	s.text(zero-half, top-9, valueSize, "start", mutedColor, signedPct(-span))
	s.text(zero+half, top-9, valueSize, "end", mutedColor, signedPct(span))
	for i, r := range rows {
		y := top + rowH*float64(i)
		s.text(labelW-gap, y+rowH/2+4, labelSize, "end", inkColor, r.Label)
		if !r.Valid {
			s.text(zero+4, y+rowH/2+4, valueSize, "start", mutedColor, r.Text)
			continue
		}
		v := math.Max(-capAt, math.Min(capAt, r.Value))
		bw := v / span * half
		fill := upColor
		if v < 0 {
			fill = downColor
		}
		s.rect(zero, y+(rowH-barH)/2, bw, barH, fill, r.Label+": "+r.Text)
		if v >= 0 {
			s.text(zero+bw+4, y+rowH/2+4, valueSize, "start", inkColor, r.Text)
		} else {
			s.text(zero+bw-4, y+rowH/2+4, valueSize, "end", inkColor, r.Text)
		}
	}
	return s.html()
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
func stackedShares(title string, series []string, rows []stackRow) template.HTML {
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
		x, scale := labelW, 1.0
		if total := sum(r.Shares); total > 1 {
			scale = 1 / total // shares summing over 1 (API rounding) still fit the bar
		}
		for si, share := range r.Shares {
			if share <= 0 {
				continue
			}
			sw := share * scale * barsW
			fill := colorAt(si)
			s.rect(x, y+(rowH-barH-2)/2, sw, barH+2, fill, fmt.Sprintf("%s — %s: %s", r.Label, series[si], pct(share)))
			if v := pct(share); textWidth(v, valueSize-1)+6 <= sw {
				s.text(x+sw/2, y+rowH/2+4, valueSize-1, "middle", textOn(fill), v)
			}
			x += sw
		}
		if r.Note != "" {
			s.text(labelW+barsW+gap, y+rowH/2+4, valueSize, "start", inkColor, r.Note)
		}
	}
	return s.html()
}

func sum(vs []float64) float64 {
	t := 0.0
	for _, v := range vs {
		t += v
	}
	return t
}
