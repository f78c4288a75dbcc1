package report

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"sitewatch/pipeline/changes"
	"sitewatch/pipeline/discover"
)

// TestCompetitorsShowDiscoverCandidates: the competitors section lists discover's best domains
// not tracked yet, in its order, with the reason and the new/rising badge, and the watchlist's
// own domains stay marked in the competitors table (pipeline/discover's fixture: six.com
// listed by 6 watched domains, then newrise.com new and rising, static.com, solo.com).
func TestCompetitorsShowDiscoverCandidates(t *testing.T) {
	db := discoverFixture(t)
	html := render(t, db, "2026-10")
	at := strings.Index(html, `id="candidates"`)
	if at < 0 {
		t.Fatal("the report has no Worth tracking next list")
	}
	list := html[at:]
	list = list[:strings.Index(list, "</table>")]
	last := -1
	for _, d := range []string{"six.com", "newrise.com", "static.com", "solo.com"} {
		i := strings.Index(list, ">"+d)
		if i < last {
			t.Errorf("%s is out of discover's order (at %d, before %d)", d, i, last)
		}
		last = i
	}
	for _, want := range []string{"similar to 6 of your 7, as many as last month; 41.0M visits, rank #812", `newrise.com <span class="badge">new</span>`} {
		if !strings.Contains(list, want) {
			t.Errorf("the list lacks %q:\n%s", want, list)
		}
	}
	if strings.Contains(list, "rejected.com") || strings.Contains(list, "w1.com") {
		t.Errorf("the list holds a domain discover leaves out:\n%s", list)
	}
	if !strings.Contains(html, `w1.com <span class="badge">on watchlist</span>`) {
		t.Error("the competitors table no longer marks the watchlist's own domains")
	}
}

// TestWorthTrackingUsesTheConfiguredFloor: with discover.min_visits at 10M, "Worth tracking
// next" holds discover's own list at that floor (six.com 41M, solo.com 90M), not the 2M
// candidates the default floor of 5,000 lets in (newrise.com, static.com).
func TestWorthTrackingUsesTheConfiguredFloor(t *testing.T) {
	db := discoverFixture(t)
	ctx := context.Background()
	const floor = 10_000_000
	var page bytes.Buffer
	if err := WriteFiles(ctx, db, "2026-10", changes.AttentionSettings{}, Files{Page: &page, DiscoverMinVisits: floor}); err != nil {
		t.Fatal(err)
	}
	_, want, err := discover.Candidates(ctx, db, discover.Query{Snapshot: "2026-10", Top: maxCandidates, MinVisits: floor})
	if err != nil {
		t.Fatal(err)
	}
	html := page.String()
	if !strings.Contains(html, "with at least 10.0M visits a month") {
		t.Error("the list does not state its floor of 10.0M visits")
	}
	at := strings.Index(html, `id="candidates"`)
	if at < 0 {
		t.Fatal("the report has no Worth tracking next list")
	}
	list := html[at:]
	list = list[:strings.Index(list, "</table>")]
	var got []string
	for _, m := range regexp.MustCompile(`<td class="d">([a-z0-9.-]+)`).FindAllStringSubmatch(list, -1) {
		got = append(got, m[1])
	}
	var wantDomains []string
	for _, c := range want {
		wantDomains = append(wantDomains, c.Domain)
	}
	if strings.Join(got, " ") != strings.Join(wantDomains, " ") || strings.Join(got, " ") != "six.com solo.com" {
		t.Errorf("Worth tracking next lists %v; discover at the floor of %d lists %v, want six.com solo.com", got, floor, wantDomains)
	}
}

// TestCandidatesComeFromTheDigest: when the digest describes the snapshot, the page's
// candidates are its worth-tracking list, read once with maxCandidates lines, and equal to
// discover's own list (all four of the fixture's, more than the digest's default three).
func TestCandidatesComeFromTheDigest(t *testing.T) {
	db := discoverFixture(t)
	ctx := context.Background()
	d, err := load(ctx, db, "2026-10", settings{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Digest == nil || d.Digest.Month != "2026-10" {
		t.Fatalf("the fixture's 2026-10 has no digest (%s): the test needs one", d.DigestNote)
	}
	_, want, err := discover.Candidates(ctx, db, discover.Query{Snapshot: "2026-10", Top: maxCandidates})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) <= changes.WorthTrackingLines {
		t.Fatalf("discover lists %d candidates: the test needs more than %d", len(want), changes.WorthTrackingLines)
	}
	if got := fmt.Sprint(d.Candidates); got != fmt.Sprint(want) {
		t.Errorf("the page's candidates\n%s\nwant discover's\n%s", got, fmt.Sprint(want))
	}
	if &d.Candidates[0] != &d.Digest.WorthTracking[0] {
		t.Error("the page's candidates were read again, not taken from the digest")
	}
}

// discoverFixture is a warehouse holding discover's fixture (pipeline/discover/testdata).
func discoverFixture(t *testing.T) *sql.DB {
	t.Helper()
	db := openWarehouse(t)
	fixture, err := os.ReadFile("../discover/testdata/fixture.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(context.Background(), string(fixture)); err != nil {
		t.Fatal(err)
	}
	return db
}
