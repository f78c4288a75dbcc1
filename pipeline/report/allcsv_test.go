package report

import (
	"bytes"
	"database/sql"
	"encoding/csv"
	"fmt"
	"strings"
	"testing"

	"sitewatch/pipeline/changes"
)

// TestAllDomainsCutKeepsFlagged: past allInPage domains the page's table holds the most
// visited and every domain needs attention names, says how many of how many, and names the
// CSV; the CSV holds every domain with unrounded figures and its needs-attention place.
func TestAllDomainsCutKeepsFlagged(t *testing.T) {
	n := allInPage + 7
	d := &data{Snapshot: "2026-10", CSVName: "report-2026-10-domains.csv"}
	name := func(i int) string { return fmt.Sprintf("d%05d.com", i) }
	last := name(n - 1)
	d.Attention = &changes.Attention{Domains: []changes.AttentionDomain{{Domain: last}, {Domain: name(0)}}}
	buf := passSites(t, d, n, name)
	if len(d.Sites) != allInPage+1 || d.Totals.Loaded != n {
		t.Errorf("the pass kept %d rows of %d loaded, want the %d the page names of %d", len(d.Sites), d.Totals.Loaded, allInPage+1, n)
	}
	got := pageSites(d)
	if len(got) != allInPage+1 || got[len(got)-1].Domain != last {
		t.Fatalf("page holds %d rows ending %s, want %d ending with the flagged %s", len(got), got[len(got)-1].Domain, allInPage+1, last)
	}
	note := allNote(d, len(got))
	for _, want := range []string{"5,000 most visited of the 5,007", "5,001 rows", "report-2026-10-domains.csv"} {
		if !strings.Contains(note, want) {
			t.Errorf("note %q lacks %q", note, want)
		}
	}
	rows, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(buf.String(), "\ufeff"))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != n+1 {
		t.Fatalf("CSV has %d rows, want %d and a header", len(rows)-1, n)
	}
	if h, r := rows[0][len(rows[0])-1], rows[n][len(rows[n])-1]; h != "Needs attention" || r != "1" {
		t.Errorf("the last domain's needs-attention column: %s = %q, want 1", h, r)
	}
	if v := rows[1][3]; v != fmt.Sprint(n) {
		t.Errorf("first domain's visits %q, want %d unrounded", v, n)
	}
}

func TestCSVGuardsFormulas(t *testing.T) {
	for in, want := range map[string]string{"=1+1": "'=1+1", "@x": "'@x", "-3": "'-3", "plain": "plain", "": ""} {
		if got := formulaSafe(in); got != want {
			t.Errorf("formulaSafe(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestFlaggedDrawnUpToTheCap: past flaggedInPage domains needing attention (a 1,000,000-domain
// watchlist flagged 11,151: 46.6 MB of panels), the page draws the first flaggedInPage (their
// lines, panels and All domains rows) and counts the rest; the CSV still carries every
// domain's place in the list.
func TestFlaggedDrawnUpToTheCap(t *testing.T) {
	const extra = 100
	n := allInPage + flaggedInPage + 2*extra
	name := func(i int) string { return fmt.Sprintf("d%06d.com", i) }
	d := &data{Snapshot: "2026-10", CSVName: "report-2026-10-domains.csv"}
	att := &changes.Attention{Month: "2026-10"}
	for i := range flaggedInPage + extra { // the least visited domains, most unusual first
		att.Domains = append(att.Domains, changes.AttentionDomain{Rank: i + 1, Domain: name(n - 1 - i),
			Reasons: []changes.AttentionReason{{Severity: "high", Text: "visits fell to 0"}}})
	}
	d.Attention = att
	buf := passSites(t, d, n, name)
	drawn := name(n - flaggedInPage)       // the last one drawn
	omitted := name(n - flaggedInPage - 1) // the first one not drawn
	if got := panelDomains(d); len(got) != flaggedInPage || got[len(got)-1] != drawn {
		t.Errorf("%d panels, the last %s; want %d, the last %s", len(got), got[len(got)-1], flaggedInPage, drawn)
	}
	page := pageSites(d)
	if len(page) != allInPage+flaggedInPage {
		t.Errorf("All domains holds %d rows in the page, want %d", len(page), allInPage+flaggedInPage)
	}
	for _, s := range page {
		if s.Domain == omitted {
			t.Errorf("All domains holds %s, which the page does not draw", omitted)
		}
	}
	if note := allNote(d, len(page)); !strings.Contains(note, "the first 1,200 domains needs attention names") {
		t.Errorf("All domains' note %q does not say it holds only the first 1,200 flagged", note)
	}
	s := buildAttention(att)
	if lines := len(s.Lead) + len(s.More); lines != flaggedInPage || s.Omitted != "100" {
		t.Errorf("needs attention draws %d lines and counts %q more, want %d and 100", lines, s.Omitted, flaggedInPage)
	}
	var html bytes.Buffer
	if err := writePage(d, &html); err != nil {
		t.Fatal(err)
	}
	if line := `id="attention-omitted">And 100 more domains need attention`; !strings.Contains(html.String(), line) {
		t.Errorf("the page does not say how many flagged domains it leaves out (%s)", line)
	}
	rows, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(buf.String(), "\ufeff"))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if got := rows[n-flaggedInPage][len(rows[0])-1]; got != fmt.Sprint(flaggedInPage+1) {
		t.Errorf("the CSV's needs-attention place of %s (not drawn) is %q, want %d", omitted, got, flaggedInPage+1)
	}
}

// passSites runs the report's site pass over n domains named name(0…n-1), the first the most
// visited, and returns the CSV it wrote.
func passSites(t *testing.T, d *data, n int, name func(int) string) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	pass, err := newSitePass(d, &buf)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := pass.add(site{Domain: name(i), TotalVisits: sql.NullFloat64{Float64: float64(n - i), Valid: true}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := pass.finish(); err != nil {
		t.Fatal(err)
	}
	return &buf
}
