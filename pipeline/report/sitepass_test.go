package report

import (
	"database/sql"
	"flag"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"sitewatch/pipeline/changes"
)

var passSeed = flag.Uint64("report.seed", 0, "TestSitePassKeepsEveryLeader: replay this seed only")

// TestSitePassKeepsEveryLeader: past allInPage domains the pass keeps only the rows the page
// names, yet every section reads as it would over every row: the same risers, rank moves,
// year-on-year leaders, headline, table and panels (a largest fall past the page's rows among them), with leaders drawn from beyond the page's rows
// and ties in weight (randomized; the seed is printed, -report.seed replays one).
func TestSitePassKeepsEveryLeader(t *testing.T) {
	seeds := []uint64{1, 2, 3}
	if *passSeed != 0 {
		seeds = []uint64{*passSeed}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			t.Logf("seed %d (replay: -report.seed %d)", seed, seed)
			all := randomSites(rand.New(rand.NewPCG(seed, 0)), allInPage+400)
			kept, every := passOver(t, all), everyRow(t, all)
			if len(kept.Sites) >= len(every.Sites) {
				t.Fatalf("the pass kept %d of %d rows: nothing left out", len(kept.Sites), len(every.Sites))
			}
			k, e := buildChanges(kept), buildChanges(every)
			for _, c := range []struct {
				what      string
				got, want any
			}{
				{"risers", k.Risers, e.Risers}, {"rank moves", k.RankMoves, e.RankMoves},
				{"year-on-year leaders", domains(yoyLeaders(kept)), domains(yoyLeaders(every))},
				{"headline", headline(kept), headline(every)},
				{"table", buildSites(kept), buildSites(every)},
				{"panels", buildPanels(kept), buildPanels(every)},
			} {
				if !reflect.DeepEqual(c.got, c.want) {
					t.Errorf("%s over the kept rows:\n%v\nover every row:\n%v", c.what, c.got, c.want)
				}
			}
			if beyond := leadersBeyondPage(every); beyond == 0 {
				t.Errorf("no leader lies beyond the page's %d rows: the test shows nothing", allInPage)
			}
		})
	}
}

// randomSites are n sites, most visited first, with histories and ranks drawn so that
// leaders fall anywhere, some past the page's rows, and some weights tie.
func randomSites(r *rand.Rand, n int) []site {
	month := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	out := make([]site, n)
	for i := range out {
		visits := float64(n-i) * 1000
		s := site{Domain: fmt.Sprintf("d%05d.com", i), TotalVisits: sql.NullFloat64{Float64: visits, Valid: true},
			Category: []string{"News > World", "Shopping", ""}[r.IntN(3)], SnapshotDate: "2026-10-0" + fmt.Sprint(1+r.IntN(3)),
			LastMonth: month.AddDate(0, -r.IntN(2), 0), LastVisits: sql.NullFloat64{Float64: visits, Valid: true}}
		if r.IntN(10) > 0 {
			s.PrevVisits = sql.NullFloat64{Float64: visits + float64(r.IntN(2000)-1000)*float64(1+r.IntN(50)), Valid: true}
		}
		if r.IntN(3) > 0 {
			s.YearAgoVisits = sql.NullFloat64{Float64: visits * float64(r.IntN(5)), Valid: true}
		}
		// Leaders past the page's rows, each of one ranking only: risers tie at 100,000 gained.
		switch past := i >= allInPage && i < n-150; {
		case past && r.IntN(20) == 0:
			s.PrevVisits, s.YearAgoVisits = sql.NullFloat64{Float64: visits - 100_000, Valid: true}, sql.NullFloat64{}
		case past && r.IntN(20) == 0:
			s.YearAgoVisits = sql.NullFloat64{Float64: visits * 1000, Valid: true}
		}
		if r.IntN(4) > 0 {
			s.GlobalRank = sql.NullInt64{Int64: int64(1 + r.IntN(n)), Valid: true}
			s.PrevRank = sql.NullInt64{Int64: int64(1 + r.IntN(n)), Valid: true}
		}
		if r.IntN(2) > 0 {
			s.AITotal = sql.NullInt64{Int64: int64(r.IntN(5000)), Valid: true}
		}
		out[i] = s
	}
	return out
}

// passOver is the data a report keeps: all through a sitePass.
func passOver(t *testing.T, all []site) *data {
	t.Helper()
	d := &data{Snapshot: "2026-10", Attention: &changes.Attention{Domains: []changes.AttentionDomain{{Domain: all[len(all)-1].Domain}}},
		Falls: []changes.Fall{{Rank: 1, Domain: all[len(all)-2].Domain, ChangePct: -50}}}
	pass, err := newSitePass(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		if err := pass.add(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := pass.finish(); err != nil {
		t.Fatal(err)
	}
	return d
}

// everyRow is passOver's data holding every row, as the report did before the pass.
func everyRow(t *testing.T, all []site) *data {
	t.Helper()
	d := passOver(t, all)
	d.Sites = make([]site, len(all))
	for i, s := range all {
		s.Place = i
		d.Sites[i] = s
	}
	return d
}

func domains(ss []site) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.Domain
	}
	return out
}

// leadersBeyondPage counts the leaders of the rankings placed past the page's rows.
func leadersBeyondPage(d *data) int {
	n := 0
	up := risers(d)
	for _, ss := range [][]site{up[:min(moversShown, len(up))], yoyLeaders(d)} {
		for _, s := range ss {
			if s.Place >= allInPage {
				n++
			}
		}
	}
	return n
}
