package atlastest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"sitewatch/pipeline/atlas/atlastest"
)

// The field tables of the specification (sections 2.1 to 2.3), transcribed by hand: every
// JSON path with its type. This is deliberately independent of both the simulator's wire
// structs and the client's schema package, so a wrong JSON tag on either side shows here.
//
// Types: string, integer, number, boolean, object, array (of objects, the [] paths below
// describe the items), strings (array of string), null. "|null" marks a value the spec says
// may be null. Arrays may be empty and objects' metrics may be missing for a domain
// ("Some metrics may be missing, null or empty arrays"), so a path need not appear in
// every body, but over a sample of domains every path must appear at least once and no
// body may contain a path that is not listed.

var specOverview = map[string]string{
	"status":                                 "string",
	"meta":                                   "object",
	"meta.request":                           "object",
	"meta.request.url":                       "string",
	"meta.snapshot_date":                     "string",
	"meta.data_coverage":                     "string",
	"website":                                "object",
	"website.domain":                         "string",
	"website.title":                          "string",
	"website.description":                    "string|null",
	"website.category":                       "object",
	"website.category.slug":                  "string",
	"website.category.name":                  "string",
	"website.images":                         "object",
	"website.images.favicon_url":             "string",
	"website.images.screenshot_desktop_url":  "string",
	"website.images.screenshot_mobile_url":   "string",
	"website.flags":                          "object",
	"website.flags.is_small_site":            "boolean",
	"website.flags.is_from_google_analytics": "boolean",
	"rankings":                               "object",
	"rankings.global":                        "object",
	"rankings.global.rank":                   "integer|null",
	"rankings.country":                       "object",
	"rankings.country.country_code":          "string",
	"rankings.country.rank":                  "integer",
	"rankings.category":                      "object",
	"rankings.category.category_slug":        "string",
	"rankings.category.rank":                 "integer",
	"rankings.global_category":               "object|null",
	"traffic":                                "object",
	"traffic.is_data_from_ga":                "boolean",
	"traffic.history":                        "array",
	"traffic.history[].month":                "string",
	"traffic.history[].visits":               "integer",
	"traffic.engagement":                     "object",
	"traffic.engagement.pages_per_visit":     "number",
	"traffic.engagement.bounce_rate":         "number",
	"traffic.engagement.average_visit_duration_seconds": "number",
	"traffic.sources_share":                             "object",
	"traffic.sources_share.direct":                      "number",
	"traffic.sources_share.organic_search":              "number",
	"traffic.sources_share.paid_search":                 "number",
	"traffic.sources_share.organic_social":              "number",
	"traffic.sources_share.paid_social":                 "number",
	"traffic.sources_share.email":                       "number",
	"traffic.sources_share.referrals":                   "number",
	"traffic.sources_share.generative_ai":               "number",
	"traffic.sources_share.affiliate":                   "number",
	"traffic.sources_share.display_ads":                 "number",
	"traffic.geography_share":                           "array",
	"traffic.geography_share[].country_code":            "string",
	"traffic.geography_share[].share":                   "number",
	"traffic.period":                                    "string",
	"seo":                                               "object",
	"seo.top_keywords":                                  "array",
	"seo.top_keywords[].keyword":                        "string",
	"seo.top_keywords[].search_volume":                  "integer",
	"seo.top_keywords[].cpc_usd":                        "number|null",
	"seo.top_keywords[].estimated_value_usd":            "number",
	"ai_referrals":                                      "object",
	"ai_referrals.total_visits":                         "integer",
	"ai_referrals.global_traffic_share":                 "number",
	"ai_referrals.platforms":                            "array",
	"ai_referrals.platforms[].name":                     "string",
	"ai_referrals.platforms[].rank":                     "integer",
	"ai_referrals.platforms[].share":                    "number",
	"ai_referrals.platforms[].history":                  "array",
	"ai_referrals.platforms[].history[].month":          "string",
	"ai_referrals.platforms[].history[].share":          "number",
	"ai_referrals.top_prompts":                          "strings",
}

var specSimilar = map[string]string{
	"status":                                          "string",
	"meta":                                            "object",
	"meta.request":                                    "object",
	"meta.request.url":                                "string",
	"meta.website":                                    "string",
	"meta.data_coverage":                              "string",
	"website":                                         "object",
	"website.domain":                                  "string",
	"website.title":                                   "string",
	"website.description":                             "string|null",
	"website.category":                                "object",
	"website.category.slug":                           "string",
	"website.category.name":                           "string",
	"website.images":                                  "object",
	"website.images.favicon_url":                      "string",
	"website.images.screenshot_desktop_url":           "string",
	"website.images.screenshot_mobile_url":            "string",
	"website.flags":                                   "object",
	"website.flags.is_small_site":                     "boolean",
	"website.flags.is_from_google_analytics":          "boolean",
	"website.tags":                                    "strings",
	"rankings":                                        "object",
	"rankings.global":                                 "object",
	"rankings.global.rank":                            "integer|null",
	"rankings.country":                                "object",
	"rankings.country.country_code":                   "string",
	"rankings.country.country_name":                   "string",
	"rankings.country.rank":                           "integer",
	"rankings.category":                               "object",
	"rankings.category.category_slug":                 "string|null",
	"rankings.category.rank":                          "integer",
	"traffic":                                         "object",
	"traffic.total_visits":                            "number",
	"similar_sites":                                   "array",
	"similar_sites[].domain":                          "string",
	"similar_sites[].title":                           "string",
	"similar_sites[].description":                     "string|null",
	"similar_sites[].rankings":                        "object",
	"similar_sites[].rankings.global":                 "object",
	"similar_sites[].rankings.global.rank":            "integer|null",
	"similar_sites[].rankings.country":                "object",
	"similar_sites[].rankings.country.country_code":   "string",
	"similar_sites[].rankings.country.country_name":   "string",
	"similar_sites[].rankings.country.rank":           "integer",
	"similar_sites[].rankings.category":               "object",
	"similar_sites[].rankings.category.category_slug": "string|null",
	"similar_sites[].rankings.category.rank":          "integer",
	"similar_sites[].traffic":                         "object",
	"similar_sites[].traffic.total_visits":            "number",
	"similar_sites[].images":                          "object",
	"similar_sites[].images.favicon_url":              "string",
	"similar_sites[].images.screenshot_desktop_url":   "string",
	"similar_sites[].images.screenshot_mobile_url":    "string",
}

var specCountries = map[string]string{
	"status":              "string",
	"meta":                "object",
	"meta.count":          "integer",
	"meta.standard":       "string",
	"countries":           "array",
	"countries[].name":    "string",
	"countries[].alpha2":  "string",
	"countries[].alpha3":  "string",
	"countries[].numeric": "string",
}

// jsonType names the JSON type of a decoded value (UseNumber): integer for a number
// without fraction or exponent.
func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number:
		if strings.ContainsAny(x.String(), ".eE") {
			return "number"
		}
		return "integer"
	case map[string]any:
		return "object"
	case []any:
		for _, e := range x {
			if _, ok := e.(string); !ok {
				return "array"
			}
		}
		return "strings|array" // an empty array or an array of strings
	}
	return fmt.Sprintf("%T", v)
}

// typeAllowed reports whether a value of type got fits the spec type want.
func typeAllowed(got, want string) bool {
	for _, w := range strings.Split(want, "|") {
		switch {
		case got == w,
			w == "number" && got == "integer", // a decimal may happen to be whole
			got == "strings|array" && (w == "strings" || w == "array"):
			return true
		}
	}
	return false
}

// walk records every path of v in seen, reporting type mismatches and unknown paths. The
// keys of objects inside an array are named path[].key, as in the spec tables.
func walk(t *testing.T, what, path string, v any, spec map[string]string, seen map[string]bool) {
	t.Helper()
	if path != "" {
		want, ok := spec[path]
		if !ok {
			t.Errorf("%s: path %s is not in the specification", what, path)
			return
		}
		if got := jsonType(v); !typeAllowed(got, want) {
			t.Errorf("%s: %s is %s, the specification says %s", what, path, got, want)
		}
		seen[path] = true
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			walk(t, what, strings.TrimPrefix(path+"."+k, "."), e, spec, seen)
		}
	case []any:
		for _, e := range x {
			if item, ok := e.(map[string]any); ok {
				for k, f := range item {
					walk(t, what, path+"[]."+k, f, spec, seen)
				}
			}
		}
	}
}

// checkBody decodes body and checks it against spec, adding the paths it has to seen.
func checkBody(t *testing.T, what string, body []byte, spec map[string]string, seen map[string]bool) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	walk(t, what, "", v, spec, seen)
}

func TestBodiesMatchSpec(t *testing.T) {
	g := atlastest.NewGenerator(1, testMonth)
	domains := append(atlastest.Domains(300), "google.com", "bbc.co.uk", "github.com")
	tests := []struct {
		name string
		spec map[string]string
		body func(string) []byte
	}{
		{"Overview", specOverview, g.OverviewBody},
		{"Similar", specSimilar, g.SimilarBody},
		{"Countries", specCountries, func(string) []byte { return g.CountriesBody() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen := map[string]bool{}
			for _, d := range domains {
				checkBody(t, tt.name+" "+d, tt.body(d), tt.spec, seen)
				if t.Failed() {
					return
				}
			}
			var never []string
			for p := range tt.spec {
				if !seen[p] {
					never = append(never, p)
				}
			}
			sort.Strings(never)
			if len(never) > 0 {
				t.Errorf("paths of the specification never sent over %d domains: %v", len(domains), never)
			}
		})
	}
	t.Run("NoFieldTheSpecRulesOut", func(t *testing.T) {
		for _, p := range []string{"source_site", "meta.snapshot_date", "meta.total_results", "similar_sites[].rank", "similar_sites[].similarity_score"} {
			if _, ok := specSimilar[p]; ok {
				t.Errorf("the similar-sites table lists %s, which the spec says the response omits", p)
			}
		}
	})
}
