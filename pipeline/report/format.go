package report

import (
	"database/sql"
	"strings"

	"sitewatch/pipeline/numfmt"
)

// The report's number style is numfmt's (docs/report.md, "Number style"); this file only
// adapts the warehouse's nullable columns to it, a missing figure printing numfmt.Dash.

func humanNull(n sql.NullFloat64) string {
	if !n.Valid {
		return numfmt.Dash
	}
	return numfmt.Count(n.Float64)
}

func humanInt(n sql.NullInt64) string {
	if !n.Valid {
		return numfmt.Dash
	}
	return numfmt.Count(float64(n.Int64))
}

// changeTone is the colour class of a percent change as printed: "up", "down", or "" for a
// change that prints as 0.0%.
func changeTone(change float64) string {
	return tone(float64(numfmt.ChangeDirection(change)))
}

// count formats a number of domains, rows or checks with thousands separators.
func count(n int) string { return numfmt.Thousands(int64(n)) }

func rank(r sql.NullInt64) string {
	if !r.Valid {
		return numfmt.Dash
	}
	return numfmt.Rank(r.Int64)
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return numfmt.Dash
	}
	return s
}
