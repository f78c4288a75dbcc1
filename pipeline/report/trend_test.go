package report

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// multipleOf returns the small multiple of domain in html.
func multipleOf(t *testing.T, html, domain string) string {
	t.Helper()
	at := strings.Index(html, `<div class="name">`+domain)
	if at < 0 {
		t.Fatalf("no small multiple of %s", domain)
	}
	card := html[at:]
	if end := strings.Index(card[1:], `<div class="multiple">`); end > 0 {
		card = card[:end+1]
	}
	return card
}

// TestTrendWholeHistory: the rich warehouse holds 26 months (two snapshots of 25 months, one
// month apart); each trend line draws all of them, not the 12 of old, labels its extremes,
// draws the hollow year-ago dot the caption promises with that month on the axis, and carries
// every month's value for hover and tap.
func TestTrendWholeHistory(t *testing.T) {
	db := openWarehouse(t)
	loadRich(t, db)
	html := render(t, db, "2026-02")
	card := multipleOf(t, html, "google.com")
	if n := strings.Count(card, `data-t="`); n != 26 {
		t.Errorf("google.com's trend has %d months to point at, want the 26 the warehouse holds", n)
	}
	for _, want := range []string{
		`data-t="Dec 2023: `, `data-t="Jan 2026: 21.5B"`, // first and latest month, values in the report's style
		">Dec 2023</text>", ">Jan 2026</text>", ">Jan 2025</text>", // the axis: first, latest and the year-ago month
		`fill="#ffffff" stroke="#5b6473" stroke-width="1.5"><title>a year earlier, Jan 2025: `, // the hollow dot
		">high 57.8B</text>", ">low 19.7B (−66.0% of the high)</text>", // labelled extremes and their spread: the scale is low to high, not 0 to peak
		`vector-effect="non-scaling-stroke"`,
		`<div class="readout" aria-live="polite"></div>`,
	} {
		if !strings.Contains(card, want) {
			t.Errorf("google.com's trend lacks %q: %s", want, regexp.MustCompile(`>low [^<]*<`).FindString(card))
		}
	}
	yoy := html[strings.Index(html, `<section id="yoy">`):]
	yoy = yoy[:strings.Index(yoy, "</section>")]
	if !strings.Contains(yoy, "This year against last year") || strings.Count(yoy, `data-t="`) != 12 {
		t.Errorf("the year-on-year section lacks this year against last year with 12 months to point at")
	}
	if !regexp.MustCompile(`data-t="Jan 2026: [\d.]+B · Jan 2025: [\d.]+B \([+−][\d.]+%\), 28 domains"`).MatchString(yoy) {
		t.Errorf("this year against last year does not give both months' visits and the change for Jan 2026")
	}
}

// TestCompetitorsNewFirst: competitors not on the watchlist lead, most-listed first; the
// watchlist's own domains follow, marked; the rows beyond the first 20 are in the file, folded.
func TestCompetitorsNewFirst(t *testing.T) {
	db := openWarehouse(t)
	loadRich(t, db)
	html := render(t, db, "2026-02")
	sec := html[strings.Index(html, `<section id="competitors">`):]
	sec = sec[:strings.Index(sec, "</section>")]
	rows := regexp.MustCompile(`<tr><td class="d">([^<]+?)( <span class="badge">on watchlist</span>)?</td>`).FindAllStringSubmatch(sec, -1)
	// 28 × 2 rivals of one domain each, common-rival.example listed by all 28, and the 28
	// watchlist domains, each listed by its neighbour.
	if len(rows) != 85 {
		t.Fatalf("competitor rows: %d, want 85 (20 open, 65 folded)", len(rows))
	}
	if rows[0][1] != "common-rival.example" {
		t.Errorf("first competitor %q, want common-rival.example (not on the watchlist, listed by 28)", rows[0][1])
	}
	firstOn := -1
	for i, r := range rows {
		on := r[2] != ""
		if on != contains(richDomains, r[1]) {
			t.Errorf("%s marked on watchlist = %v", r[1], on)
		}
		if on && firstOn < 0 {
			firstOn = i
		}
		if !on && firstOn >= 0 {
			t.Errorf("%s (not on the watchlist) comes after the watchlist's %s", r[1], rows[firstOn][1])
		}
	}
	if firstOn != 57 {
		t.Errorf("the first watchlist domain is row %d, want 57: after the 57 names not tracked yet", firstOn)
	}
	if !strings.Contains(sec, `<details id="competitors-all"><summary>The next 65 competitors</summary>`) || strings.Contains(sec, "sitewatch changes") {
		t.Errorf("the competitors beyond 20 are not folded in the file")
	}
}

// TestChangesFoldedInFile: when more than 8 domains gained a competitor, What changed lists
// the first 8 and folds the other 20 in the file, every one of them, instead of pointing a
// reader of a mailed report to `sitewatch changes`.
func TestChangesFoldedInFile(t *testing.T) {
	db := openWarehouse(t)
	loadRich(t, db)
	for i, d := range richDomains {
		insert(t, db, `INSERT INTO similar_sites (snapshot_month, domain, position, similar_domain, global_rank, total_visits)
			VALUES (?, ?, ?, ?, ?, ?)`, []any{"2026-02", d, 5, fmt.Sprintf("newcomer-%d.example", i), 900, 1000.0})
	}
	html := render(t, db, "2026-02")
	sec := html[strings.Index(html, `<section id="changes">`):]
	sec = sec[:strings.Index(sec, "</section>")]
	if !strings.Contains(sec, "<details><summary>The other 20 domains</summary>") {
		t.Fatalf("the 20 domains beyond the first 8 are not folded in the file")
	}
	if strings.Contains(sec, "more domains: <code>sitewatch changes</code>") {
		t.Errorf("What changed still points to the CLI for a list the file can hold")
	}
	for i := range richDomains {
		if !strings.Contains(sec, fmt.Sprintf("newcomer-%d.example", i)) {
			t.Errorf("newcomer-%d.example is in neither the open nor the folded list", i)
		}
	}
}

// TestSparkAxisLabelsYearAgoWhenCrowded: a history of 14 or 15 months puts the year-ago month
// next to the first, one of 100 puts it next to the latest; each chart still names the month
// of its hollow dot (on a second axis line), and only those that need it grow. At 13 months the
// year-ago month is the first, labelled as such.
func TestSparkAxisLabelsYearAgoWhenCrowded(t *testing.T) {
	months := func(n int) []point {
		start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
		pts := make([]point, n)
		for i := range pts {
			pts[i] = point{Month: start.AddDate(0, i, 0), Visits: float64(1000 + 10*i)}
		}
		return pts
	}
	for _, tc := range []struct {
		name    string
		pts     []point
		crowded bool
	}{
		{"13 months", months(13), false},
		{"14 months", months(14), true},
		{"15 months", months(15), true},
		{"25 months", months(25), false},
		{"100 months", months(100), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			last := tc.pts[len(tc.pts)-1].Month
			yearAgo := last.AddDate(-1, 0, 0)
			svg := string(sparkline("x.com", tc.pts, yearAgo))
			label := regexp.MustCompile(`>(↑ )?` + yearAgo.Format("Jan 2006") + `( ↑)?</text>`)
			if !label.MatchString(svg) {
				t.Errorf("the year-ago month %s is not on the axis:\n%s", yearAgo.Format("Jan 2006"), svg)
			}
			if got := strings.Contains(svg, `height="125"`); got != tc.crowded {
				t.Errorf("second axis line = %v, want %v:\n%s", got, tc.crowded, svg)
			}
		})
	}
}
