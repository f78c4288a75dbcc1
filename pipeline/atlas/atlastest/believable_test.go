package atlastest_test

import (
	"math"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/config"
	"sitewatch/schema"
)

// watchlist is the default domains.yaml watchlist: the demo's domains.
var watchlist = atlastest.DemoWatchlist

// TestDemoWatchlistIsDomainsYAML: DemoWatchlist is the repository's domains.yaml, normalized.
func TestDemoWatchlistIsDomainsYAML(t *testing.T) {
	cfg, err := config.Load(filepath.Join("..", "..", "..", "domains.yaml"), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range cfg.Domains {
		n, err := config.NormalizeDomain(d)
		if err != nil {
			t.Fatalf("domains.yaml: %s: %v", d, err)
		}
		got = append(got, n)
	}
	if !slices.Equal(got, atlastest.DemoWatchlist) {
		t.Errorf("domains.yaml lists %v, DemoWatchlist %v", got, atlastest.DemoWatchlist)
	}
}

func overview(t *testing.T, g *atlastest.Generator, d string) *schema.SiteOverview {
	t.Helper()
	o, err := schema.DecodeOverview(g.OverviewBody(d))
	if err != nil {
		t.Fatalf("%s: %v", d, err)
	}
	return o
}

// TestRankFollowsVisits checks one rank curve across all domains, famous and synthetic:
// more visits never give a worse global rank.
func TestRankFollowsVisits(t *testing.T) {
	g := atlastest.NewGenerator(1, testMonth)
	type point struct {
		domain string
		visits int64
		rank   int64
	}
	var points []point
	for _, d := range append(atlastest.Domains(1500), watchlist...) {
		o := overview(t, g, d)
		if h := o.Traffic.History; len(h) == 12 && o.Rankings.Global.Rank != nil {
			points = append(points, point{d, *h[11].Visits, *o.Rankings.Global.Rank})
		}
	}
	sort.Slice(points, func(i, j int) bool { // most visits first; equal visits: any order of ranks
		if points[i].visits != points[j].visits {
			return points[i].visits > points[j].visits
		}
		return points[i].rank < points[j].rank
	})
	for i := 1; i < len(points); i++ {
		if a, b := points[i-1], points[i]; a.rank > b.rank {
			t.Fatalf("%s has %d visits and rank %d, but %s with fewer visits (%d) ranks better (%d)", a.domain, a.visits, a.rank, b.domain, b.visits, b.rank)
		}
	}
	if len(points) < 1000 {
		t.Errorf("only %d domains with a rank and a history", len(points))
	}
}

// TestFamousSites checks magnitudes of the right order for well-known sites, and that no
// synthetic domain takes the top 100.
func TestFamousSites(t *testing.T) {
	g := atlastest.NewGenerator(1, testMonth)
	tests := []struct {
		domain             string
		bestRank, worstRnk int64
		minVisits, maxVis  float64
		country            string
	}{
		{"google.com", 1, 1, 5e10, 1.5e11, "US"},
		{"youtube.com", 2, 5, 1.5e10, 5e10, "US"},
		{"facebook.com", 2, 10, 5e9, 2e10, "US"},
		{"wikipedia.org", 3, 20, 2e9, 1e10, "US"},
		{"amazon.com", 5, 40, 1e9, 5e9, "US"},
		{"bbc.co.uk", 20, 100, 2e8, 1e9, "GB"},
		{"github.com", 20, 150, 2e8, 1e9, "US"},
		{"airbnb.com", 100, 1000, 5e7, 3e8, "US"},
	}
	for _, tt := range tests {
		t.Run(tt.domain, func(t *testing.T) {
			o := overview(t, g, tt.domain)
			rank, visits := *o.Rankings.Global.Rank, float64(*o.Traffic.History[11].Visits)
			if rank < tt.bestRank || rank > tt.worstRnk {
				t.Errorf("rank %d, want %d to %d", rank, tt.bestRank, tt.worstRnk)
			}
			if visits < tt.minVisits || visits > tt.maxVis {
				t.Errorf("visits %.3g, want %.3g to %.3g", visits, tt.minVisits, tt.maxVis)
			}
			if got := *o.Rankings.Country.CountryCode; got != tt.country {
				t.Errorf("top country %s, want %s", got, tt.country)
			}
			if *o.Website.Flags.IsSmallSite || o.Website.Description == nil {
				t.Errorf("a famous site is flagged small or has no description")
			}
		})
	}
	for _, d := range atlastest.Domains(3000) {
		if r := overview(t, g, d).Rankings.Global.Rank; r != nil && *r < 100 {
			t.Errorf("synthetic %s ranks %d, in the top 100", d, *r)
		}
	}
}

// TestHistoryIsSmooth checks that monthly visits move by trend, season and a little noise:
// no month jumps by more than a third, and over two years the series is not a straight
// line on a log scale (seasonality and noise leave residuals around the trend).
func TestHistoryIsSmooth(t *testing.T) {
	a, b := atlastest.NewGenerator(1, "2025-10"), atlastest.NewGenerator(1, testMonth)
	for _, d := range append(atlastest.Domains(300), watchlist...) {
		var logs []float64
		for _, g := range []*atlastest.Generator{a, b} {
			for _, p := range overview(t, g, d).Traffic.History {
				logs = append(logs, math.Log(float64(*p.Visits)))
			}
		}
		if len(logs) == 0 {
			continue
		}
		for i := 1; i < len(logs); i++ {
			if math.Abs(logs[i]-logs[i-1]) > math.Log(4.0/3) {
				t.Errorf("%s: visits jump from %.0f to %.0f in a month", d, math.Exp(logs[i-1]), math.Exp(logs[i]))
				break
			}
		}
		if rms := residualRMS(logs); rms < 0.005 {
			t.Errorf("%s: 24 months lie on a straight line (residual %.4f): no seasonality", d, rms)
		}
	}
}

// residualRMS is the root mean square of ys around their least-squares line.
func residualRMS(ys []float64) float64 {
	n := float64(len(ys))
	var sx, sy, sxx, sxy float64
	for i, y := range ys {
		x := float64(i)
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	slope := (n*sxy - sx*sy) / (n*sxx - sx*sx)
	icept := (sy - slope*sx) / n
	var ss float64
	for i, y := range ys {
		r := y - (icept + slope*float64(i))
		ss += r * r
	}
	return math.Sqrt(ss / n)
}

func setOf[T any](items []T, key func(T) string) map[string]bool {
	m := map[string]bool{}
	for _, it := range items {
		m[key(it)] = true
	}
	return m
}

// diff counts keys in b but not in a (new) and in a but not in b (gone).
func diff(a, b map[string]bool) (added, gone int) {
	for k := range b {
		if !a[k] {
			added++
		}
	}
	for k := range a {
		if !b[k] {
			gone++
		}
	}
	return added, gone
}

// TestMonthOverMonthChange checks that a "what changed" digest over the demo watchlist has
// content between two consecutive months (competitors appear or drop out, new AI platforms,
// keywords and top countries turn over), while most of each list stays as it was.
func TestMonthOverMonthChange(t *testing.T) {
	prev, cur := atlastest.NewGenerator(1, "2026-09"), atlastest.NewGenerator(1, testMonth)
	changed := map[string]int{}
	var kept, total int
	for _, d := range watchlist {
		sp, _ := schema.DecodeSimilar(prev.SimilarBody(d))
		sc, _ := schema.DecodeSimilar(cur.SimilarBody(d))
		compKey := func(s schema.SimilarSite) string { return s.Domain }
		a, b := setOf(sp.SimilarSites, compKey), setOf(sc.SimilarSites, compKey)
		if n, g := diff(a, b); n+g > 0 {
			changed["competitors"]++
		}
		for k := range a {
			total++
			if b[k] {
				kept++
			}
		}
		op, oc := overview(t, prev, d), overview(t, cur, d)
		if n, _ := diff(setOf(op.AIReferrals.Platforms, func(p schema.AIPlatform) string { return p.Name }),
			setOf(oc.AIReferrals.Platforms, func(p schema.AIPlatform) string { return p.Name })); n > 0 {
			changed["new AI platform"]++
		}
		kw := func(k schema.Keyword) string { return k.Keyword }
		if n, _ := diff(setOf(op.SEO.TopKeywords, kw), setOf(oc.SEO.TopKeywords, kw)); n > 0 {
			changed["new keyword"]++
		}
		geo := func(s schema.GeoShare) string { return s.CountryCode }
		if n, _ := diff(setOf(op.Traffic.GeographyShare, geo), setOf(oc.Traffic.GeographyShare, geo)); n > 0 {
			changed["new top country"]++
		}
		if !slices.Equal(shares(op), shares(oc)) {
			changed["channel mix"]++
		}
	}
	for _, what := range []string{"competitors", "new AI platform", "new keyword", "new top country", "channel mix"} {
		if changed[what] == 0 {
			t.Errorf("no %s change in the %d watchlist domains", what, len(watchlist))
		}
	}
	if changed["competitors"] > len(watchlist)*3/4 || kept*10 < total*8 {
		t.Errorf("competitor lists churn too much: %d of %d domains changed, %d of %d kept", changed["competitors"], len(watchlist), kept, total)
	}
	t.Logf("domains with a change: %v; competitors kept %d of %d", changed, kept, total)
}

func shares(o *schema.SiteOverview) []float64 {
	var out []float64
	for _, c := range o.Traffic.SourcesShare.Channels() {
		out = append(out, *c.Share)
	}
	return out
}

// TestTopPromptsDistinct: a domain's top prompts never repeat (the warehouse's duplicate-key
// quality check would flag every such domain).
func TestTopPromptsDistinct(t *testing.T) {
	g := atlastest.NewGenerator(1, testMonth)
	for _, d := range append(atlastest.Domains(500), watchlist...) {
		o := overview(t, g, d)
		if o.AIReferrals == nil {
			continue
		}
		seen := map[string]bool{}
		for _, p := range o.AIReferrals.TopPrompts {
			if seen[p] {
				t.Fatalf("%s lists the prompt %q twice", d, p)
			}
			seen[p] = true
		}
	}
}
