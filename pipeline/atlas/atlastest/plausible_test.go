package atlastest_test

import (
	"strings"
	"testing"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/schema"
)

// TestPlausibleOver10000Domains states what an analyst expects of any domain, over 10,000
// generated domains and the demo watchlist: the top country of a country-code TLD is its
// country and leads its geography; a name that says what a site is (…recipe…, …market…,
// …news…) gives that category; a large site (global rank up to 10,000) has AI referrals and a
// generative_ai share; visits and AI visits are whole numbers; rank follows visits.
func TestPlausibleOver10000Domains(t *testing.T) {
	if testing.Short() {
		t.Skip("generates 10,000 domains")
	}
	g := atlastest.NewGenerator(1, testMonth)
	ccTLD := map[string]string{".de": "DE", ".fr": "FR", ".co.uk": "GB", ".com.br": "BR", ".jp": "JP"}
	// Head nouns of generated names (brightmarket7.de) and the category they say.
	hints := map[string]string{"market": "marketplace", "cart": "marketplace", "garden": "home_and_garden",
		"house": "home_and_garden", "forge": "programming", "stack": "programming"}
	var large, largeWithAI, ccChecked, hintChecked int
	for _, d := range append(atlastest.Domains(10000), watchlist...) {
		o := overview(t, g, d)
		country := *o.Rankings.Country.CountryCode
		for suffix, want := range ccTLD {
			if strings.HasSuffix(d, suffix) {
				ccChecked++
				if country != want {
					t.Errorf("%s: top country %s, want %s", d, country, want)
				}
				if geo := o.Traffic.GeographyShare; len(geo) > 0 && geo[0].CountryCode != want {
					t.Errorf("%s: geography led by %s, want %s", d, geo[0].CountryCode, want)
				}
			}
		}
		name, _, _ := strings.Cut(d, ".")
		name = strings.TrimRight(name, "0123456789")
		for word, slug := range hints {
			if strings.HasSuffix(name, word) {
				hintChecked++
				if got := *o.Website.Category.Slug; !strings.Contains(got, slug) {
					t.Errorf("%s: category %s, want one of %s", d, got, slug)
				}
			}
		}
		if r := o.Rankings.Global.Rank; r != nil && *r <= 10000 {
			large++
			if ai := o.AIReferrals.TotalVisits; ai != nil && *ai > 0 && *o.Traffic.SourcesShare.GenerativeAI > 0 {
				largeWithAI++
			} else {
				t.Errorf("%s: rank %d but no AI referrals", d, *r)
			}
		}
	}
	t.Logf("%d domains with a ccTLD, %d with a telling name, %d large (%d with AI referrals)", ccChecked, hintChecked, large, largeWithAI)
	if ccChecked < 1000 || hintChecked < 200 || large < 30 {
		t.Errorf("too few domains exercised a property: ccTLD %d, name %d, large %d", ccChecked, hintChecked, large)
	}
}

// TestGeneratedDomainsDistinctRanks: as a real API ranks every site once, no two of the known
// sites and Domains(n) share a global rank in a month (a log-uniform popularity put hundreds
// of them on one rank before), and a domain's rank in another's similar sites is its own.
func TestGeneratedDomainsDistinctRanks(t *testing.T) {
	n := 1200
	if testing.Short() {
		n = 400
	}
	for _, month := range []string{testMonth, "2026-11"} {
		g := atlastest.NewGenerator(1, month)
		seen := map[int64]string{}
		for _, d := range append(atlastest.Domains(n), watchlist...) {
			r := overview(t, g, d).Rankings.Global.Rank
			if r == nil {
				continue
			}
			if other, dup := seen[*r]; dup {
				t.Fatalf("%s: %s and %s share global rank #%d", month, d, other, *r)
			}
			seen[*r] = d
		}
		if len(seen) < n/2 {
			t.Fatalf("%s: only %d of %d domains ranked", month, len(seen), n)
		}
		for _, d := range watchlist[:5] {
			sim, err := schema.DecodeSimilar(g.SimilarBody(d))
			if err != nil {
				t.Fatalf("%s: %v", d, err)
			}
			for _, s := range sim.SimilarSites {
				got, want := s.Rankings.Global.Rank, overview(t, g, s.Domain).Rankings.Global.Rank
				if (got == nil) != (want == nil) || got != nil && *got != *want {
					t.Errorf("%s: %s ranks %v among %s's similar sites, %v in its own overview", month, s.Domain, deref(got), d, deref(want))
				}
			}
		}
	}
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestKnownSitesDistinctRanks: the known sites of the demo watchlist never share a global
// rank in a month, and keep the rank order of their visits.
func TestKnownSitesDistinctRanks(t *testing.T) {
	for _, month := range []string{"2025-12", testMonth, "2026-11"} {
		g := atlastest.NewGenerator(1, month)
		seen := map[int64]string{}
		for _, d := range watchlist {
			o := overview(t, g, d)
			r := *o.Rankings.Global.Rank
			if other, dup := seen[r]; dup {
				t.Errorf("%s: %s and %s share rank #%d", month, d, other, r)
			}
			seen[r] = d
		}
		for _, d := range []string{"wikipedia.org", "openai.com"} {
			if ai := overview(t, g, d).AIReferrals.TotalVisits; ai == nil || *ai == 0 {
				t.Errorf("%s: %s has no AI-referred visits", month, d)
			}
		}
	}
}
