package report

import (
	"context"
	"os"
	"strings"
	"testing"
)

// TestCompetitorsShowDiscoverCandidates: the competitors section lists discover's best domains
// not tracked yet, in its order, with the reason and the new/rising badge, and the watchlist's
// own domains stay marked in the competitors table (pipeline/discover's fixture: six.com
// listed by 6 watched domains, then newrise.com new and rising, static.com, solo.com).
func TestCompetitorsShowDiscoverCandidates(t *testing.T) {
	db := openWarehouse(t)
	fixture, err := os.ReadFile("../discover/testdata/fixture.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(context.Background(), string(fixture)); err != nil {
		t.Fatal(err)
	}
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
