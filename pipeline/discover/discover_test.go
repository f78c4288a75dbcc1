package discover

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sitewatch/pipeline/warehouse"
)

// openFixture builds a real warehouse in a temporary directory and loads testdata/fixture.sql
// (two complete months with known answers; the file's header lists them).
func openFixture(t *testing.T) *sql.DB {
	t.Helper()
	ctx := context.Background()
	wh, err := warehouse.Open(ctx, warehouse.Options{DuckDBPath: filepath.Join(t.TempDir(), "w.duckdb")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = wh.Close() })
	fixture, err := os.ReadFile("testdata/fixture.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wh.DB().ExecContext(ctx, string(fixture)); err != nil {
		t.Fatalf("load fixture: %v", err)
	}
	return wh.DB()
}

func domainsOf(cs []Candidate) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Domain
	}
	return out
}

func TestCandidatesRanking(t *testing.T) {
	db := openFixture(t)
	month, got, err := Candidates(context.Background(), db, Query{})
	if err != nil {
		t.Fatal(err)
	}
	if month != "2026-10" {
		t.Errorf("month = %s, want the latest complete month 2026-10", month)
	}
	want := []string{"six.com", "newrise.com", "static.com", "solo.com"}
	if !slices.Equal(domainsOf(got), want) {
		t.Fatalf("candidates = %v, want %v", domainsOf(got), want)
	}
	six, rise, static := got[0], got[1], got[2]
	if six.WatchedBy != 6 || six.WatchedTotal != 7 || six.New || six.Rising {
		t.Errorf("six.com = %+v, want listed by 6 of 7, static", six)
	}
	if !rise.New || !rise.Rising || static.New || static.Rising || rise.Reach != static.Reach {
		t.Errorf("newrise %+v vs static %+v: want the same reach, only newrise new and rising", rise, static)
	}
	for want, c := range map[string]Candidate{
		"similar to 6 of your 7, as many as last month; 41.0M visits, rank #812": six,
		"similar to 2 of your 7, new this month; 2.00M visits, rank #5,000":      rise,
		"similar to 1 of your 7, as many as last month; 90.0M visits, rank #300": got[3],
	} {
		if c.Reason != want {
			t.Errorf("%s reason = %q, want %q", c.Domain, c.Reason, want)
		}
	}
}

func TestCandidatesLeaveOutWatchlistAndTop(t *testing.T) {
	db := openFixture(t)
	_, got, err := Candidates(context.Background(), db, Query{Snapshot: "2026-10", Top: 2, Watchlist: []string{"six.com"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"newrise.com", "static.com"}; !slices.Equal(domainsOf(got), want) {
		t.Errorf("candidates = %v, want %v (six.com is on the watchlist, top 2)", domainsOf(got), want)
	}
	if got[0].Rank != 1 || got[1].Rank != 2 {
		t.Errorf("ranks %d, %d: want renumbered 1, 2", got[0].Rank, got[1].Rank)
	}
}

func TestCandidatesFirstMonthHasNoNews(t *testing.T) {
	db := openFixture(t)
	_, got, err := Candidates(context.Background(), db, Query{Snapshot: "2026-09"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range got {
		if c.New || c.Rising || strings.Contains(c.Reason, "last month") {
			t.Errorf("%s in the first month held: %+v; want neither new nor rising", c.Domain, c)
		}
	}
}

func TestCandidatesMonthNotHeld(t *testing.T) {
	db := openFixture(t)
	_, _, err := Candidates(context.Background(), db, Query{Snapshot: "2025-01"})
	if !errors.Is(err, ErrNoData) {
		t.Errorf("err = %v, want ErrNoData", err)
	}
}

// TestCandidatesSizeFloor: tinyhigh.com (147 visits a month) has the best reach of all but is
// below the default floor, so the default list leaves it out; a floor of 0 (NoFloor) puts it
// first, and a floor above static.com's 2 M visits leaves only the larger candidates.
func TestCandidatesSizeFloor(t *testing.T) {
	db := openFixture(t)
	ctx := context.Background()
	for _, c := range []struct {
		floor int64
		want  []string
	}{
		{0, []string{"six.com", "newrise.com", "static.com", "solo.com"}},
		{NoFloor, []string{"tinyhigh.com", "six.com", "newrise.com", "static.com", "solo.com"}},
		{5_000_000, []string{"six.com", "solo.com"}},
	} {
		_, got, err := Candidates(ctx, db, Query{Snapshot: "2026-10", MinVisits: c.floor})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(domainsOf(got), c.want) {
			t.Errorf("floor %d: candidates = %v, want %v", c.floor, domainsOf(got), c.want)
		}
	}
}
