package report

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"strconv"

	"sitewatch/pipeline/changes"
)

// allInPage is how many domains the All domains table holds in the page: the most visited,
// plus any domain needs attention names beyond them. 5,000 rows keep the page under 5 MB and a
// sort within budget (docs/report.md); a longer watchlist's every row is in the CSV written
// beside the page (WriteFiles), and in the warehouse.
const allInPage = 5000

// Files are what WriteFiles writes: the page, and every domain's row as CSV beside it.
type Files struct {
	Page io.Writer
	// CSV receives every loaded domain's row (nil: none written); CSVName is its file name as
	// the page names it, e.g. "report-2026-10-domains.csv".
	CSV     io.Writer
	CSVName string
	// DiscoverMinVisits is the config's discover.min_visits: the size floor of "Worth tracking
	// next", as discover and changes read it (0: discover's default).
	DiscoverMinVisits int64
}

// WriteFiles is WriteWith writing f.Page, and every domain's All domains row to f.CSV: the
// columns of the table, figures unrounded (changes as ratios: 0.025 = +2.5 %), written row by
// row as the sites query passes (sitepass.go), so no list of every domain is held. Its errors
// are WriteWith's and the CSV's write errors.
func WriteFiles(ctx context.Context, db *sql.DB, snapshot string, s changes.AttentionSettings, f Files) error {
	d, err := loadWith(ctx, db, snapshot, settings{Attention: s, DiscoverMinVisits: f.DiscoverMinVisits}, loadOptions{CSV: f.CSV, CSVName: f.CSVName})
	if err != nil {
		return err
	}
	return writePage(d, f.Page)
}

// csvHeads are the CSV's columns: the table's.
var csvHeads = allHeads

// csvRow is one domain's row: texts guarded against spreadsheet formulas, figures unrounded,
// "" where the warehouse holds none.
func csvRow(s *site, flagged int) []string {
	source := "estimate"
	if s.FromGA {
		source = "analytics"
	}
	mom, momOK := s.mom()
	yoy, yoyOK := s.yoy()
	rankChange := sql.NullInt64{}
	if s.GlobalRank.Valid && s.PrevRank.Valid {
		rankChange = sql.NullInt64{Int64: s.PrevRank.Int64 - s.GlobalRank.Int64, Valid: true}
	}
	attention := ""
	if flagged > 0 {
		attention = strconv.Itoa(flagged)
	}
	return []string{
		formulaSafe(s.Domain), formulaSafe(s.Title), formulaSafe(s.Category),
		nullFloat(s.TotalVisits), optFloat(mom, momOK), optFloat(yoy, yoyOK),
		nullInt(s.GlobalRank), nullInt(rankChange), nullInt(s.AITotal),
		nullFloat(s.BounceRate), nullFloat(s.PagesPerVis), nullFloat(s.DurationSec), source, attention,
	}
}

// formulaSafe keeps a spreadsheet from running a title as a formula, as the page's CSV does.
func formulaSafe(s string) string {
	if s != "" && (s[0] == '=' || s[0] == '+' || s[0] == '-' || s[0] == '@') {
		return "'" + s
	}
	return s
}

func nullFloat(v sql.NullFloat64) string { return optFloat(v.Float64, v.Valid) }

func optFloat(v float64, ok bool) string {
	if !ok {
		return ""
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func nullInt(v sql.NullInt64) string {
	if !v.Valid {
		return ""
	}
	return strconv.FormatInt(v.Int64, 10)
}

// attentionRanks maps each domain needs attention names to its place in the list (1 first),
// every one of them (the CSV carries them all), not only those the page draws.
func attentionRanks(d *data) map[string]int {
	out := map[string]int{}
	if d.Attention == nil {
		return out
	}
	for i, a := range d.Attention.Domains {
		out[a.Domain] = i + 1
	}
	return out
}

// drawnFlagged is the set of flaggedDomains: the needs-attention domains the page draws.
func drawnFlagged(d *data) map[string]bool {
	out := map[string]bool{}
	for _, dom := range flaggedDomains(d) {
		out[dom] = true
	}
	return out
}

// pageSites are the domains the All domains table holds in the page: the allInPage most
// visited and every domain needs attention names that the page draws (flaggedInPage), in the
// report's order (most visited first).
func pageSites(d *data) []site {
	flagged := drawnFlagged(d)
	out := make([]site, 0, min(len(d.Sites), allInPage+len(flagged)))
	for _, s := range d.Sites {
		if s.Place < allInPage || flagged[s.Domain] {
			out = append(out, s)
		}
	}
	return out
}

// allNote says which domains the All domains table holds: every one, or the most visited and
// where every row is (the CSV beside the page, else the query that lists them).
func allNote(d *data, inPage int) string {
	if inPage >= d.Totals.Loaded {
		return fmt.Sprintf("Every loaded domain (%s), most visited first.", count(d.Totals.Loaded))
	}
	where := fmt.Sprintf(`sitewatch query "SELECT * FROM sites WHERE snapshot_month = '%s'"`, d.Snapshot)
	if d.CSVName != "" {
		where = d.CSVName + ", written beside this file (same columns, unrounded, one line per domain)"
	}
	flagged := "every domain needs attention names"
	if flaggedOmitted(d) > 0 {
		flagged = fmt.Sprintf("the first %s domains needs attention names", count(flaggedInPage))
	}
	return fmt.Sprintf("The %s most visited of the %s loaded domains, and %s (%s rows), most visited first: a page stays quick to open and sort. Every domain's row is in %s.",
		count(allInPage), count(d.Totals.Loaded), flagged, count(inPage), where)
}
