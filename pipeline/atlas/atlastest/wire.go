package atlastest

import "encoding/json"

// The simulator's own wire structs, written from the specification's field tables (sections
// 2.1 to 2.3), not shared with the client's decoder in package schema: a wrong JSON tag on
// either side then shows up as a disagreement in tests instead of changing both at once.
// TestBodiesMatchSpec checks generated bodies against the spec's field list on decoded
// JSON, independently of these structs.

// overviewBody is the site overview response (spec 2.1).
type overviewBody struct {
	Status      string          `json:"status"`
	Meta        overviewMeta    `json:"meta"`
	Website     websiteBody     `json:"website"`
	Rankings    rankingsBody    `json:"rankings"`
	Traffic     trafficBody     `json:"traffic"`
	SEO         seoBody         `json:"seo"`
	AIReferrals aiReferralsBody `json:"ai_referrals"`
}

type requestEcho struct {
	URL string `json:"url"`
}

type overviewMeta struct {
	Request      requestEcho `json:"request"`
	SnapshotDate string      `json:"snapshot_date"` // YYYY-MM-01 of the data month
	DataCoverage string      `json:"data_coverage"`
}

// websiteBody is the website object of both operations; Tags only in similar sites.
type websiteBody struct {
	Domain      string       `json:"domain"`
	Title       string       `json:"title"`
	Description *string      `json:"description"`
	Category    categoryBody `json:"category"`
	Images      imagesBody   `json:"images"`
	Flags       flagsBody    `json:"flags"`
	Tags        []string     `json:"tags,omitempty"`
}

type categoryBody struct {
	Slug string `json:"slug"`
	Name string `json:"name"`
}

type imagesBody struct {
	FaviconURL           string `json:"favicon_url"`
	ScreenshotDesktopURL string `json:"screenshot_desktop_url"`
	ScreenshotMobileURL  string `json:"screenshot_mobile_url"`
}

type flagsBody struct {
	IsSmallSite           bool `json:"is_small_site"`
	IsFromGoogleAnalytics bool `json:"is_from_google_analytics"`
}

// rankingsBody is the rankings object; GlobalCategory is written (as null) by the overview
// only, CountryName by similar sites only.
type rankingsBody struct {
	Global         globalRank      `json:"global"`
	Country        countryRank     `json:"country"`
	Category       categoryRank    `json:"category"`
	GlobalCategory json.RawMessage `json:"global_category,omitempty"`
}

type globalRank struct {
	Rank *int64 `json:"rank"`
}

type countryRank struct {
	CountryCode string `json:"country_code"`
	CountryName string `json:"country_name,omitempty"`
	Rank        int64  `json:"rank"`
}

type categoryRank struct {
	CategorySlug *string `json:"category_slug"`
	Rank         int64   `json:"rank"`
}

type trafficBody struct {
	IsDataFromGA   bool             `json:"is_data_from_ga"`
	History        []historyPoint   `json:"history"`
	Engagement     engagementBody   `json:"engagement"`
	SourcesShare   sourcesShareBody `json:"sources_share"`
	GeographyShare []geoShare       `json:"geography_share"`
	Period         string           `json:"period"` // YYYY-MM of the data month
}

type historyPoint struct {
	Month  string `json:"month"` // YYYY-MM-01
	Visits int64  `json:"visits"`
}

type engagementBody struct {
	PagesPerVisit               float64 `json:"pages_per_visit"`
	BounceRate                  float64 `json:"bounce_rate"`
	AverageVisitDurationSeconds float64 `json:"average_visit_duration_seconds"`
}

// sourcesShareBody holds the ten channel shares (decimals), in the spec's key order.
type sourcesShareBody struct {
	Direct        float64 `json:"direct"`
	OrganicSearch float64 `json:"organic_search"`
	PaidSearch    float64 `json:"paid_search"`
	OrganicSocial float64 `json:"organic_social"`
	PaidSocial    float64 `json:"paid_social"`
	Email         float64 `json:"email"`
	Referrals     float64 `json:"referrals"`
	GenerativeAI  float64 `json:"generative_ai"`
	Affiliate     float64 `json:"affiliate"`
	DisplayAds    float64 `json:"display_ads"`
}

// channels lists the shares with their spec keys, in order.
func (s sourcesShareBody) channels() [10]struct {
	name  string
	share float64
} {
	return [10]struct {
		name  string
		share float64
	}{
		{"direct", s.Direct}, {"organic_search", s.OrganicSearch}, {"paid_search", s.PaidSearch},
		{"organic_social", s.OrganicSocial}, {"paid_social", s.PaidSocial}, {"email", s.Email},
		{"referrals", s.Referrals}, {"generative_ai", s.GenerativeAI}, {"affiliate", s.Affiliate},
		{"display_ads", s.DisplayAds},
	}
}

type geoShare struct {
	CountryCode string  `json:"country_code"`
	Share       float64 `json:"share"`
}

type seoBody struct {
	TopKeywords []keywordBody `json:"top_keywords"`
}

type keywordBody struct {
	Keyword           string   `json:"keyword"`
	SearchVolume      int64    `json:"search_volume"`
	CPCUSD            *float64 `json:"cpc_usd"`
	EstimatedValueUSD float64  `json:"estimated_value_usd"`
}

type aiReferralsBody struct {
	TotalVisits        int64            `json:"total_visits"`
	GlobalTrafficShare float64          `json:"global_traffic_share"`
	Platforms          []aiPlatformBody `json:"platforms"`
	TopPrompts         []string         `json:"top_prompts"`
}

type aiPlatformBody struct {
	Name    string         `json:"name"`
	Rank    int64          `json:"rank"`
	Share   float64        `json:"share"` // 0 to 100
	History []aiShareMonth `json:"history"`
}

type aiShareMonth struct {
	Month string  `json:"month"` // YYYY-MM
	Share float64 `json:"share"`
}

// similarBody is the similar sites response (spec 2.2).
type similarBody struct {
	Status       string          `json:"status"`
	Meta         similarMeta     `json:"meta"`
	Website      websiteBody     `json:"website"`
	Rankings     rankingsBody    `json:"rankings"`
	Traffic      similarTraffic  `json:"traffic"`
	SimilarSites []similarSiteIt `json:"similar_sites"`
}

type similarMeta struct {
	Request      requestEcho `json:"request"`
	Website      string      `json:"website"`
	DataCoverage string      `json:"data_coverage"`
}

type similarTraffic struct {
	TotalVisits float64 `json:"total_visits"`
}

type similarSiteIt struct {
	Domain      string         `json:"domain"`
	Title       string         `json:"title"`
	Description *string        `json:"description"`
	Rankings    rankingsBody   `json:"rankings"`
	Traffic     similarTraffic `json:"traffic"`
	Images      imagesBody     `json:"images"`
}

// countriesBody is the country metadata response (spec 2.3).
type countriesBody struct {
	Status    string        `json:"status"`
	Meta      countriesMeta `json:"meta"`
	Countries []countryItem `json:"countries"`
}

type countriesMeta struct {
	Count    int    `json:"count"`
	Standard string `json:"standard"`
}

type countryItem struct {
	Name    string `json:"name"`
	Alpha2  string `json:"alpha2"`
	Alpha3  string `json:"alpha3"`
	Numeric string `json:"numeric"`
}
