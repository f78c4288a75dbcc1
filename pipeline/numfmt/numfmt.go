// Package numfmt is sitewatch's one number style, the same on every surface that shows a figure
// to a person (the HTML report, the terminal tables of changes, show, discover and status, the
// webhook's prose): one rule per kind of figure (docs/report.md, "Number style").
//
//   - counts (visits, AI visits, credits as a size): 3 significant digits with one set of
//     suffixes and no space before it: 950, 12.3k, 4.56M, 1.00B beside 30.4B; whole numbers
//     below 1,000, as no one visits a site 0.01 times (Count);
//   - exact counts (domains, rows, credits spent): thousands separators, 1,234,567 (Thousands);
//   - ranks: "#" and thousands separators, #314,815 (Rank);
//   - percent changes: one decimal with an explicit sign, the sign a typographic minus, no space
//     before "%": +2.0%, −13.4%, +1,234.5%; one that rounds to zero prints 0.0% with no sign
//     (Change);
//   - changes of a share, in percentage points: +1.2 pts, −0.4 pts (Points);
//   - shares (levels): one decimal, "<0.1%" for a non-zero share that would print as 0.0%
//     (Share);
//   - multiples: two significant digits below 10, whole with thousands separators above:
//     2.5×, 0.0041×, 37×, 1,824,396× (Ratio);
//   - no data: Dash ("—").
//
// A figure never holds a space, so a line never breaks inside it (the "%" cannot wrap onto a
// line of its own on a phone); Points joins its unit with a no-break space for the same reason.
package numfmt

import (
	"math"
	"strconv"
	"strings"
)

// Dash is the one placeholder for a figure the warehouse does not hold.
const Dash = "—"

// Minus is the typographic minus printed for negative figures (U+2212).
const Minus = "−"

// nbsp joins a figure to a unit written as a word, so the two never sit on different lines.
const nbsp = "\u00a0"

// Count formats a count with 3 significant digits and a unit suffix: 950, 12.3k, 4.56M, 1.00B.
// Below 1,000 it prints the whole number; a negative count gets the typographic minus.
func Count(n float64) string {
	if math.Abs(n) < 999.5 {
		return signed(strconv.FormatFloat(math.Abs(math.Round(n)), 'f', 0, 64), n)
	}
	units := []struct {
		div    float64
		suffix string
	}{{1e3, "k"}, {1e6, "M"}, {1e9, "B"}, {1e12, "T"}}
	for i, u := range units {
		v := n / u.div
		if math.Abs(v) < 999.5 || i == len(units)-1 {
			return signed(sig3(math.Abs(v)), n) + u.suffix
		}
	}
	return "" // unreachable: the last unit always returns
}

// sig3 formats v (in [1, 1000)) with 3 significant digits after rounding: 9.996 -> "10.0".
func sig3(v float64) string {
	switch {
	case v < 9.995:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case v < 99.95:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return Thousands(int64(math.Round(v)))
}

// signed puts the typographic minus before s when n is negative and s is not all zeros.
func signed(s string, n float64) string {
	if n < 0 && strings.Trim(s, "0.,") != "" {
		return Minus + s
	}
	return s
}

// Thousands writes n with comma thousands separators: 1,234,567; negative with the
// typographic minus.
func Thousands(n int64) string {
	neg := n < 0
	u := uint64(n)
	if neg {
		u = uint64(-(n + 1)) + 1 // math.MinInt64 has no positive int64
	}
	s := strconv.FormatUint(u, 10)
	var b strings.Builder
	if neg {
		b.WriteString(Minus)
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Rank formats a global, country or category rank: #1, #314,815.
func Rank(r int64) string { return "#" + Thousands(r) }

// Share formats a decimal share (0.123) as a level with one decimal: 12.3%, 0.4%, <0.1%, 0.0%.
func Share(share float64) string {
	p := math.Round(share*1000) / 10
	if p == 0 && share != 0 {
		if share < 0 {
			return ">" + Minus + "0.1%"
		}
		return "<0.1%"
	}
	return signed(oneDecimal(math.Abs(p)), p) + "%"
}

// Change formats a decimal change (0.25) as "+25.0%", "−3.4%"; one that rounds to zero is
// "0.0%", without a sign. A fall to nothing is −100.0%.
func Change(change float64) string {
	return withSign(oneDecimal(math.Abs(roundTenth(change*100))), roundTenth(change*100)) + "%"
}

// Points formats a change of a share (0.012: the share rose by 1.2 percentage points) as
// "+1.2 pts", "−0.4 pts", "0.0 pts", the unit joined by a no-break space.
func Points(delta float64) string {
	return withSign(oneDecimal(math.Abs(roundTenth(delta*100))), roundTenth(delta*100)) + nbsp + "pts"
}

// ChangeDirection is +1, −1 or 0 as the change prints with one decimal in percent (Change):
// a change that prints as 0.0% has no direction, so no colour.
func ChangeDirection(change float64) int {
	p := roundTenth(change * 100)
	switch {
	case p > 0:
		return 1
	case p < 0:
		return -1
	}
	return 0
}

func roundTenth(p float64) float64 { return math.Round(p*10) / 10 }

// withSign prefixes the magnitude s with "+" or the typographic minus by the sign of p.
func withSign(s string, p float64) string {
	switch {
	case p > 0:
		return "+" + s
	case p < 0:
		return Minus + s
	}
	return s
}

// oneDecimal prints p (≥ 0) with one decimal and thousands separators in the integer part.
func oneDecimal(p float64) string {
	s := strconv.FormatFloat(p, 'f', 1, 64)
	whole, frac, _ := strings.Cut(s, ".")
	if n, err := strconv.ParseInt(whole, 10, 64); err == nil {
		whole = Thousands(n)
	}
	return whole + "." + frac
}

// Ratio formats a multiple with two significant digits below 10 ("2.5×", "0.0041×", never
// "0.00×") and as a whole number with thousands separators from 10 up ("37×", "1,824,396×").
func Ratio(r float64) string {
	a := math.Abs(r)
	switch {
	case a == 0:
		return "0×"
	case a >= 10:
		return signed(Thousands(int64(math.Round(a))), r) + "×"
	}
	return signed(TrimZeros(sig(a, 2)), r) + "×"
}

// sig formats v (> 0) with n significant digits in plain (non-exponent) notation.
func sig(v float64, n int) string {
	decimals := n - 1 - int(math.Floor(math.Log10(v)))
	if decimals < 0 {
		decimals = 0
	}
	return strconv.FormatFloat(v, 'f', decimals, 64)
}

// TrimZeros drops the trailing zeros after a decimal point, and the point when nothing follows:
// "1.50" → "1.5", "2.00" → "2"; a string without a point is returned as is.
func TrimZeros(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// Plain formats v with at most decimals decimals and no trailing zeros: Plain(2.50, 2) is
// "2.5", Plain(3, 2) "3" (pages per visit and other small measures that are not counts).
func Plain(v float64, decimals int) string {
	return signed(TrimZeros(strconv.FormatFloat(math.Abs(v), 'f', decimals, 64)), v)
}
