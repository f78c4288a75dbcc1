package report

import (
	"database/sql"
	"fmt"
	"math"
	"strings"

	"sitewatch/pipeline/textout"
)

// human formats a count compactly: 950, 12.3k, 4.56M, 7.8B. Visits below 1,000 are whole
// numbers: the API may send decimals (164.01), but no one visits a site 0.01 times.
func human(n float64) string {
	a := math.Abs(n)
	switch {
	case a >= 1e9:
		return trimZeros(fmt.Sprintf("%.2f", n/1e9)) + "B"
	case a >= 1e6:
		return trimZeros(fmt.Sprintf("%.2f", n/1e6)) + "M"
	case a >= 1e3:
		return trimZeros(fmt.Sprintf("%.1f", n/1e3)) + "k"
	default:
		return fmt.Sprintf("%.0f", math.Round(n))
	}
}

func humanNull(n sql.NullFloat64) string {
	if !n.Valid {
		return "—"
	}
	return human(n.Float64)
}

func humanInt(n sql.NullInt64) string {
	if !n.Valid {
		return "—"
	}
	return human(float64(n.Int64))
}

// pct formats a decimal share (0.123) as a percentage with precision that never shows a
// non-zero share as 0: 12.3%, 0.42%, 0.0031%.
func pct(share float64) string {
	p := share * 100
	a := math.Abs(p)
	switch {
	case a == 0:
		return "0%"
	case a >= 10:
		return trimZeros(fmt.Sprintf("%.1f", p)) + "%"
	case a >= 1:
		return trimZeros(fmt.Sprintf("%.1f", p)) + "%"
	default:
		return trimZeros(strconvSig(p, 2)) + "%"
	}
}

// signedPct formats a decimal change (0.25) as "+25%"; below 1% it keeps two significant digits.
func signedPct(change float64) string {
	s := pct(change)
	if change > 0 {
		s = "+" + s
	}
	return strings.Replace(s, "-", "−", 1)
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

func rank(r sql.NullInt64) string {
	if !r.Valid {
		return "—"
	}
	return "#" + textout.Thousands(r.Int64)
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "—"
	}
	return s
}
