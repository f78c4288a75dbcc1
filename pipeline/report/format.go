package report

import (
	"database/sql"
	"fmt"
	"math"
	"strconv"
	"strings"

	"sitewatch/pipeline/textout"
)

// The report's number style, one rule per kind of figure (docs/report.md, "Number style"):
//
//   - visits and other counts: 3 significant digits with one set of suffixes (950, 12.3k,
//     4.56M, 1.00B beside 30.4B); below 1,000 whole numbers, as no one visits a site 0.01 times;
//   - percent changes: one decimal with an explicit sign (+2.0%, −13.4%, +1,234.5%); a change
//     that rounds to 0.0% prints as 0.0% with no sign and no colour;
//   - shares (levels): one decimal, "<0.1%" for a non-zero share that would print as 0.0%;
//   - no data: dash ("—") everywhere, explained in the page's legend.

// dash is the one placeholder for a figure the warehouse does not hold.
const dash = "—"

// minus is the typographic minus the report prints for negative changes.
const minus = "−"

// human formats a count with 3 significant digits and a unit suffix: 950, 12.3k, 4.56M, 1.00B.
func human(n float64) string {
	if math.Abs(n) < 999.5 {
		return fmt.Sprintf("%.0f", math.Round(n))
	}
	units := []struct {
		div    float64
		suffix string
	}{{1e3, "k"}, {1e6, "M"}, {1e9, "B"}, {1e12, "T"}}
	for i, u := range units {
		v := n / u.div
		if math.Abs(v) < 999.5 || i == len(units)-1 {
			return sig3(v) + u.suffix
		}
	}
	return "" // unreachable: the last unit always returns
}

// sig3 formats v (|v| in [1, 1000)) with 3 significant digits after rounding: 9.996 -> "10.0".
func sig3(v float64) string {
	a := math.Abs(v)
	switch {
	case a < 9.995:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case a < 99.95:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

func humanNull(n sql.NullFloat64) string {
	if !n.Valid {
		return dash
	}
	return human(n.Float64)
}

func humanInt(n sql.NullInt64) string {
	if !n.Valid {
		return dash
	}
	return human(float64(n.Int64))
}

// pct formats a decimal share (0.123) as a level with one decimal: 12.3%, 0.4%, <0.1%, 0.0%.
func pct(share float64) string {
	p := math.Round(share*1000) / 10
	if p == 0 && share != 0 {
		if share < 0 {
			return ">" + minus + "0.1%"
		}
		return "<0.1%"
	}
	return strings.Replace(oneDecimal(p), "-", minus, 1) + "%"
}

// signedPct formats a decimal change (0.25) as "+25.0%", "−3.4%"; one that rounds to zero is
// "0.0%", without a sign.
func signedPct(change float64) string {
	p := math.Round(change*1000) / 10
	switch {
	case p > 0:
		return "+" + oneDecimal(p) + "%"
	case p < 0:
		return minus + oneDecimal(-p) + "%"
	}
	return "0.0%"
}

// changeTone is the colour class of a percent change as printed: "up", "down", or "" for a
// change that prints as 0.0%.
func changeTone(change float64) string {
	return tone(math.Round(change*1000) / 10)
}

// oneDecimal prints p with one decimal and thousands separators in the integer part.
func oneDecimal(p float64) string {
	s := strconv.FormatFloat(math.Abs(p), 'f', 1, 64)
	whole, frac, _ := strings.Cut(s, ".")
	n, err := strconv.ParseInt(whole, 10, 64)
	if err == nil {
		whole = textout.Thousands(n)
	}
	if p < 0 {
		return "-" + whole + "." + frac
	}
	return whole + "." + frac
}

// ratio formats a multiple (2.5, 0.004) with two significant digits below 10: "2.5×",
// "0.0041×", "37×"; never "0.00×".
func ratio(r float64) string {
	a := math.Abs(r)
	switch {
	case a == 0:
		return "0×"
	case a >= 10:
		return fmt.Sprintf("%.0f×", r)
	default:
		return trimZeros(strconvSig(r, 2)) + "×"
	}
}

// strconvSig formats v with n significant digits in plain (non-exponent) notation.
func strconvSig(v float64, n int) string {
	if v == 0 {
		return "0"
	}
	decimals := n - 1 - int(math.Floor(math.Log10(math.Abs(v))))
	if decimals < 0 {
		decimals = 0
	}
	return fmt.Sprintf("%.*f", decimals, v)
}

func trimZeros(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// count formats a number of domains, rows or checks with thousands separators.
func count(n int) string { return textout.Thousands(int64(n)) }

func rank(r sql.NullInt64) string {
	if !r.Valid {
		return dash
	}
	return "#" + textout.Thousands(r.Int64)
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return dash
	}
	return s
}
