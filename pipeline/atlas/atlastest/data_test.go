package atlastest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"sitewatch/internal/testenv"
	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/schema"
)

func TestDeterminism(t *testing.T) {
	d := atlastest.Domains(20)
	tests := []struct {
		name      string
		a, b      *atlastest.Generator
		wantEqual bool
	}{
		{"SameSeedAndMonth", atlastest.NewGenerator(7, "2026-03"), atlastest.NewGenerator(7, "2026-03"), true},
		{"OtherSeed", atlastest.NewGenerator(7, "2026-03"), atlastest.NewGenerator(8, "2026-03"), false},
		{"OtherMonth", atlastest.NewGenerator(7, "2026-03"), atlastest.NewGenerator(7, "2026-04"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, dom := range d {
				eqO := bytes.Equal(tt.a.OverviewBody(dom), tt.b.OverviewBody(dom))
				eqS := bytes.Equal(tt.a.SimilarBody(dom), tt.b.SimilarBody(dom))
				if tt.wantEqual && (!eqO || !eqS) {
					t.Fatalf("%s: bodies differ", dom)
				}
				if !tt.wantEqual && eqO {
					t.Fatalf("%s: overview bodies equal", dom)
				}
			}
		})
	}
	t.Run("OverServer", func(t *testing.T) {
		s1 := newServer(t, atlastest.Options{Rate: 1000, Seed: 3})
		s2 := newServer(t, atlastest.Options{Rate: 1000, Seed: 3})
		for _, p := range []string{"/atlas/site-overview?url=" + d[0], "/atlas/site-similar?url=" + d[1]} {
			a, b := get(t, s1, p, bearer...), get(t, s2, p, bearer...)
			if a.status != 200 || !bytes.Equal(a.body, b.body) {
				t.Errorf("%s: status %d, bodies equal %v", p, a.status, bytes.Equal(a.body, b.body))
			}
		}
	})
	t.Run("HistoryAgreesAcrossSnapshots", func(t *testing.T) {
		a, _ := schema.DecodeOverview(atlastest.NewGenerator(1, "2026-03").OverviewBody(d[2]))
		b, _ := schema.DecodeOverview(atlastest.NewGenerator(1, "2026-05").OverviewBody(d[2]))
		months := map[string]int64{}
		for _, p := range a.Traffic.History {
			months[p.Month] = *p.Visits
		}
		shared := 0
		for _, p := range b.Traffic.History {
			if v, ok := months[p.Month]; ok {
				shared++
				if v != *p.Visits {
					t.Errorf("%s: visits %d in one snapshot, %d in the next", p.Month, v, *p.Visits)
				}
			}
		}
		if shared != 10 {
			t.Errorf("shared months = %d, want 10", shared)
		}
	})
}

func TestDomains(t *testing.T) {
	d := atlastest.Domains(5000)
	seen := map[string]bool{}
	for i, x := range d {
		if seen[x] {
			t.Fatalf("Domains: %q repeated", x)
		}
		seen[x] = true
		if n, err := atlastest.NormalizeDomain(x); err != nil || n != x {
			t.Fatalf("Domains[%d] = %q is not a normalized domain: %q, %v", i, x, n, err)
		}
	}
	if short := atlastest.Domains(10); strings.Join(short, ",") != strings.Join(d[:10], ",") {
		t.Errorf("Domains(10) is not a prefix of Domains(5000)")
	}
}

var (
	dateRe  = regexp.MustCompile(`^\d{4}-\d{2}-01$`)
	monthRe = regexp.MustCompile(`^\d{4}-\d{2}$`)
)

// decimals reports whether x has at most n decimal places.
func decimals(x float64, n int) bool {
	p := math.Pow10(n)
	return math.Abs(x*p-math.Round(x*p)) < 1e-6
}

func TestOverviewInvariants(t *testing.T) {
	g := atlastest.NewGenerator(1, testMonth)
	edges := map[string]int{}
	type point struct {
		visits int64
		rank   int64
	}
	var points []point
	for _, d := range atlastest.Domains(600) {
		o, err := schema.DecodeOverview(g.OverviewBody(d))
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		if o.Meta.Request.URL != d || o.Website.Domain != d || *o.Meta.SnapshotDate != testMonth+"-01" || *o.Traffic.Period != testMonth || *o.Meta.DataCoverage != "complete" {
			t.Errorf("%s: meta %+v period %v", d, o.Meta, *o.Traffic.Period)
		}
		if s := *o.Website.Category.Slug; s != strings.ToLower(s) || !strings.Contains(*o.Website.Category.Name, " > ") && strings.Contains(s, "/") {
			t.Errorf("%s: category %q / %q", d, s, *o.Website.Category.Name)
		}
		if len(o.Rankings.GlobalCategory) == 0 || string(o.Rankings.GlobalCategory) != "null" {
			t.Errorf("%s: global_category = %s, want null", d, o.Rankings.GlobalCategory)
		}
		// History: 12 months oldest first ending at the snapshot month (or empty).
		h := o.Traffic.History
		if len(h) == 0 {
			edges["empty history"]++
		} else {
			if len(h) != 12 || h[11].Month != testMonth+"-01" {
				t.Fatalf("%s: history of %d months ending %s", d, len(h), h[len(h)-1].Month)
			}
			for i, p := range h {
				m, err := time.Parse("2006-01-02", p.Month)
				if err != nil || !dateRe.MatchString(p.Month) || *p.Visits <= 0 {
					t.Fatalf("%s: history[%d] = %s %d", d, i, p.Month, *p.Visits)
				}
				if i > 0 {
					prev, _ := time.Parse("2006-01-02", h[i-1].Month)
					if prev.AddDate(0, 1, 0) != m {
						t.Fatalf("%s: history not consecutive oldest first at %d", d, i)
					}
				}
			}
			if r := o.Rankings.Global.Rank; r != nil {
				points = append(points, point{*h[11].Visits, *r})
			}
		}
		if o.Rankings.Global.Rank == nil {
			edges["null rank"]++
		}
		if o.Website.Description == nil {
			edges["null description"]++
		}
		// Sources: ten shares in [0,1], 4 decimals, summing to 1.
		var sum float64
		for _, c := range o.Traffic.SourcesShare.Channels() {
			if c.Share == nil || *c.Share < 0 || *c.Share > 1 || !decimals(*c.Share, 4) {
				t.Fatalf("%s: share %s = %v", d, c.Channel, c.Share)
			}
			sum += *c.Share
		}
		if math.Abs(sum-1) > 1e-9 {
			t.Errorf("%s: sources sum to %.12f", d, sum)
		}
		// Geography: decimals summing to at most 1, known alpha-2 codes.
		var geo float64
		for _, gs := range o.Traffic.GeographyShare {
			if len(gs.CountryCode) != 2 || *gs.Share <= 0 || *gs.Share > 1 {
				t.Errorf("%s: geography %+v", d, gs)
			}
			geo += *gs.Share
		}
		if geo > 1+1e-9 {
			t.Errorf("%s: geography sums to %v", d, geo)
		}
		if len(o.Traffic.GeographyShare) == 0 {
			edges["empty geography"]++
		}
		e := o.Traffic.Engagement
		if *e.BounceRate <= 0 || *e.BounceRate >= 1 || *e.PagesPerVisit < 1 || *e.AverageVisitDurationSeconds <= 0 {
			t.Errorf("%s: engagement %+v", d, e)
		}
		if len(o.SEO.TopKeywords) == 0 {
			edges["empty keywords"]++
		}
		for _, k := range o.SEO.TopKeywords {
			if k.Keyword == "" || *k.SearchVolume <= 0 || k.EstimatedValueUSD == nil || *k.EstimatedValueUSD < 0 {
				t.Errorf("%s: keyword %+v", d, k)
			}
			if k.CPCUSD == nil {
				edges["null cpc"]++
			}
		}
		// AI referrals: shares on 0-100 summing to ~100, ranks 1..n, history YYYY-MM.
		ai := o.AIReferrals
		if *ai.GlobalTrafficShare != *o.Traffic.SourcesShare.GenerativeAI {
			t.Errorf("%s: ai global share %v != generative_ai %v", d, *ai.GlobalTrafficShare, *o.Traffic.SourcesShare.GenerativeAI)
		}
		var pct float64
		for i, p := range ai.Platforms {
			if *p.Rank != int64(i+1) || *p.Share < 0 || *p.Share > 100 || !strings.Contains(p.Name, ".") {
				t.Errorf("%s: platform %d %+v", d, i, p)
			}
			pct += *p.Share
			if len(p.History) == 0 {
				edges["empty platform history"]++
			}
			for _, m := range p.History {
				if !monthRe.MatchString(m.Month) || *m.Share < 0 || *m.Share > 100 {
					t.Errorf("%s: platform history %+v", d, m)
				}
			}
		}
		if len(ai.Platforms) > 0 && math.Abs(pct-100) > 0.05 {
			t.Errorf("%s: platform shares sum to %v", d, pct)
		}
		if len(ai.Platforms) == 0 {
			edges["no platforms"]++
		}
		if len(ai.TopPrompts) == 0 {
			edges["no prompts"]++
		}
		if *o.Website.Flags.IsFromGoogleAnalytics != *o.Traffic.IsDataFromGA {
			t.Errorf("%s: GA flags disagree", d)
		}
	}
	// Zipf-like: visits fall with rank.
	sort.Slice(points, func(i, j int) bool { return points[i].rank < points[j].rank })
	for i := 1; i < len(points); i++ {
		if points[i].rank > points[i-1].rank && points[i].visits > points[i-1].visits {
			t.Errorf("rank %d has %d visits, more than rank %d with %d", points[i].rank, points[i].visits, points[i-1].rank, points[i-1].visits)
			break
		}
	}
	for _, e := range []string{"null rank", "null description", "empty geography", "empty keywords", "null cpc", "empty platform history", "no platforms", "no prompts", "empty history"} {
		if edges[e] == 0 {
			t.Errorf("edge %q never occurs in 600 domains", e)
		}
	}
	t.Logf("edges over 600 domains: %v", edges)
}

func TestSimilarInvariants(t *testing.T) {
	g := atlastest.NewGenerator(1, testMonth)
	edges := map[string]int{}
	for _, d := range atlastest.Domains(400) {
		body := g.SimilarBody(d)
		var raw map[string]any
		if err := json.Unmarshal(body, &raw); err != nil {
			t.Fatal(err)
		}
		if _, ok := raw["source_site"]; ok {
			t.Fatalf("%s: body has source_site", d)
		}
		meta := raw["meta"].(map[string]any)
		for _, k := range []string{"snapshot_date", "total_results"} {
			if _, ok := meta[k]; ok {
				t.Fatalf("%s: meta has %s", d, k)
			}
		}
		for _, it := range raw["similar_sites"].([]any) {
			for _, k := range []string{"rank", "similarity_score"} {
				if _, ok := it.(map[string]any)[k]; ok {
					t.Fatalf("%s: similar site has %s", d, k)
				}
			}
		}
		s, err := schema.DecodeSimilar(body)
		if err != nil {
			t.Fatal(err)
		}
		if s.Meta.Website != d || s.Website.Domain != d || s.Meta.Request.URL != d {
			t.Errorf("%s: meta %+v", d, s.Meta)
		}
		if s.Website.Tags != nil {
			edges["tags"]++
		}
		if sl := *s.Website.Category.Slug; sl != strings.ToLower(sl) {
			edges["mixed-case slug"]++
		}
		if *s.Traffic.TotalVisits != math.Trunc(*s.Traffic.TotalVisits) {
			edges["decimal visits"]++
		}
		if *s.Rankings.Country.CountryName == "" {
			t.Errorf("%s: empty country name", d)
		}
		if len(s.SimilarSites) == 0 {
			edges["no similar"]++
		}
		for _, it := range s.SimilarSites {
			if it.Domain == d {
				t.Errorf("%s lists itself as similar", d)
			}
			if _, err := atlastest.NormalizeDomain(it.Domain); err != nil {
				t.Errorf("similar domain %q invalid: %v", it.Domain, err)
			}
			if it.Description == nil {
				edges["null similar description"]++
			}
			if it.Rankings.Category.CategorySlug == nil {
				edges["null category slug"]++
			}
			if it.Rankings.Global.Rank == nil {
				edges["null similar rank"]++
			}
			if *it.Traffic.TotalVisits <= 0 || it.Images.FaviconURL == nil {
				t.Errorf("%s: similar %+v", d, it)
			}
		}
	}
	for _, e := range []string{"tags", "mixed-case slug", "decimal visits", "no similar", "null similar description", "null category slug", "null similar rank"} {
		if edges[e] == 0 {
			t.Errorf("edge %q never occurs in 400 domains", e)
		}
	}
	t.Logf("edges over 400 domains: %v", edges)
}

func TestSimilarSitesAgreeWithTheirOverview(t *testing.T) {
	g := atlastest.NewGenerator(1, testMonth)
	s, _ := schema.DecodeSimilar(g.SimilarBody("example.com"))
	for _, it := range s.SimilarSites {
		o, _ := schema.DecodeOverview(g.OverviewBody(it.Domain))
		if fmtI64(o.Rankings.Global.Rank) != fmtI64(it.Rankings.Global.Rank) {
			t.Errorf("%s: rank %s in similar, %s in overview", it.Domain, fmtI64(it.Rankings.Global.Rank), fmtI64(o.Rankings.Global.Rank))
		}
		if len(o.Traffic.History) == 12 && math.Abs(float64(*o.Traffic.History[11].Visits)-*it.Traffic.TotalVisits) >= 1 {
			t.Errorf("%s: visits %v in similar, %d in overview", it.Domain, *it.Traffic.TotalVisits, *o.Traffic.History[11].Visits)
		}
	}
}

func fmtI64(p *int64) string {
	if p == nil {
		return "null"
	}
	b, _ := json.Marshal(*p)
	return string(b)
}

func TestCountries(t *testing.T) {
	body := atlastest.NewGenerator(1, "").CountriesBody()
	var raw struct {
		Status    string           `json:"status"`
		Meta      map[string]any   `json:"meta"`
		Countries []map[string]any `json:"countries"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatal(err)
	}
	if raw.Status != "success" || raw.Meta["count"] != float64(249) || raw.Meta["standard"] != "ISO 3166-1" || len(raw.Countries) != 249 {
		t.Fatalf("status %q meta %v countries %d", raw.Status, raw.Meta, len(raw.Countries))
	}
	num := regexp.MustCompile(`^\d{3}$`)
	for _, c := range raw.Countries {
		wantKeys(t, "country", c, "name", "alpha2", "alpha3", "numeric")
		if !num.MatchString(c["numeric"].(string)) || len(c["alpha2"].(string)) != 2 || len(c["alpha3"].(string)) != 3 {
			t.Errorf("country %v", c)
		}
	}
	if !bytes.Contains(body, []byte(`{"name":"Afghanistan","alpha2":"AF","alpha3":"AFG","numeric":"004"}`)) {
		t.Errorf("Afghanistan's numeric code lost its leading zeros")
	}
}

// TestCountriesMatchIsoCodes re-derives the embedded file from Debian's iso-codes when it is
// installed (apt-get install iso-codes).
func TestCountriesMatchIsoCodes(t *testing.T) {
	const path = "/usr/share/iso-codes/json/iso_3166-1.json"
	b, err := os.ReadFile(path)
	if err != nil {
		testenv.Missing(t, "iso-codes not installed (Debian package iso-codes): %v", err)
	}
	var src struct {
		List []struct {
			Name    string `json:"name"`
			Alpha2  string `json:"alpha_2"`
			Alpha3  string `json:"alpha_3"`
			Numeric string `json:"numeric"`
		} `json:"3166-1"`
	}
	if err := json.Unmarshal(b, &src); err != nil {
		t.Fatal(err)
	}
	c, _ := schema.DecodeCountries(atlastest.NewGenerator(1, "").CountriesBody())
	got := map[string]schema.Country{}
	for _, x := range c.Countries {
		got[x.Alpha2] = x
	}
	if len(got) != len(src.List) {
		t.Errorf("embedded %d countries, iso-codes has %d", len(got), len(src.List))
	}
	for _, s := range src.List {
		if g := got[s.Alpha2]; g.Name != s.Name || g.Alpha3 != s.Alpha3 || g.Numeric != s.Numeric {
			t.Errorf("%s: embedded %+v, iso-codes %+v", s.Alpha2, g, s)
		}
	}
}

// TestGeneratesEverywhere generates both bodies for many domains, seeds and months: no panic,
// and every body decodes.
func TestGeneratesEverywhere(t *testing.T) {
	n := 600
	if testing.Short() {
		n = 100
	}
	domains := atlastest.Domains(n)
	for _, seed := range []int64{1, 2, 3, 42, -7} {
		for _, month := range []string{"2024-01", "2025-06", testMonth} {
			t.Run(fmt.Sprintf("seed%d/%s", seed, month), func(t *testing.T) {
				g := atlastest.NewGenerator(seed, month)
				for _, d := range domains {
					if _, err := schema.DecodeOverview(g.OverviewBody(d)); err != nil {
						t.Fatalf("%s overview: %v", d, err)
					}
					if _, err := schema.DecodeSimilar(g.SimilarBody(d)); err != nil {
						t.Fatalf("%s similar: %v", d, err)
					}
				}
			})
		}
	}
}
