// Package schema holds the v2 response types of the Site Intelligence API and their decoding
// (with legacy-v1 detection). The Arrow schemas and flatteners that turn them into the
// warehouse tables are package schema/flatten's: schema imports no Arrow (.golangci.yml).
//
// Pointer fields are the ones the specification allows to be missing or null: a nil pointer
// becomes NULL in the warehouse, never 0. Unknown fields are tolerated.
package schema

import "encoding/json"

// Endpoint names one operation of the API by its current (non-deprecated) path segment.
type Endpoint string

// The three operations of the API.
const (
	EndpointOverview  Endpoint = "site-overview"
	EndpointSimilar   Endpoint = "site-similar"
	EndpointCountries Endpoint = "country-metadata"
)

// DomainEndpoints are the per-domain operations a snapshot fetches, in fetch order.
var DomainEndpoints = []Endpoint{EndpointOverview, EndpointSimilar}

// RequestEcho is meta.request: the requested url echoed back.
type RequestEcho struct {
	URL string `json:"url"`
}

// OverviewMeta is meta of the site overview response.
type OverviewMeta struct {
	Request      RequestEcho `json:"request"`
	SnapshotDate *string     `json:"snapshot_date"`
	DataCoverage *string     `json:"data_coverage"`
}

// SiteOverview is the site overview response (spec 2.1).
type SiteOverview struct {
	Status      string       `json:"status"`
	Meta        OverviewMeta `json:"meta"`
	Website     *Website     `json:"website"`
	Rankings    *Rankings    `json:"rankings"`
	Traffic     *Traffic     `json:"traffic"`
	SEO         *SEO         `json:"seo"`
	AIReferrals *AIReferrals `json:"ai_referrals"`
}

// Website is the website object shared by both per-domain responses.
type Website struct {
	Domain      string    `json:"domain"`
	Title       *string   `json:"title"`
	Description *string   `json:"description"`
	Category    *Category `json:"category"`
	Images      *Images   `json:"images"`
	Flags       *Flags    `json:"flags"`
	// Tags is returned by the similar-sites operation only, and not always.
	Tags []string `json:"tags,omitempty"`
}

// Category is website.category. Slug may be mixed case in similar-sites responses.
type Category struct {
	Slug *string `json:"slug"`
	Name *string `json:"name"`
}

// Images holds the image URLs of a site.
type Images struct {
	FaviconURL           *string `json:"favicon_url"`
	ScreenshotDesktopURL *string `json:"screenshot_desktop_url"`
	ScreenshotMobileURL  *string `json:"screenshot_mobile_url"`
}

// Flags is website.flags.
type Flags struct {
	IsSmallSite           *bool `json:"is_small_site"`
	IsFromGoogleAnalytics *bool `json:"is_from_google_analytics"`
}

// Rankings is the rankings object of both per-domain responses and of each similar site.
type Rankings struct {
	Global   *GlobalRank   `json:"global"`
	Country  *CountryRank  `json:"country"`
	Category *CategoryRank `json:"category"`
	// GlobalCategory's inner shape is not specified; it is kept verbatim (null in practice).
	GlobalCategory json.RawMessage `json:"global_category,omitempty"`
}

// GlobalRank is rankings.global.
type GlobalRank struct {
	Rank *int64 `json:"rank"`
}

// CountryRank is rankings.country; CountryName is returned by similar sites only.
type CountryRank struct {
	CountryCode *string `json:"country_code"`
	CountryName *string `json:"country_name,omitempty"`
	Rank        *int64  `json:"rank"`
}

// CategoryRank is rankings.category.
type CategoryRank struct {
	CategorySlug *string `json:"category_slug"`
	Rank         *int64  `json:"rank"`
}

// Traffic is the traffic object of the site overview.
type Traffic struct {
	IsDataFromGA   *bool          `json:"is_data_from_ga"`
	History        []TrafficPoint `json:"history"`
	Engagement     *Engagement    `json:"engagement"`
	SourcesShare   *SourcesShare  `json:"sources_share"`
	GeographyShare []GeoShare     `json:"geography_share"`
	// Period is YYYY-MM.
	Period *string `json:"period"`
}

// TrafficPoint is one month of traffic.history; Month is YYYY-MM-DD (first of month).
type TrafficPoint struct {
	Month  string `json:"month"`
	Visits *int64 `json:"visits"`
}

// Engagement is traffic.engagement. BounceRate is a decimal fraction.
type Engagement struct {
	PagesPerVisit               *float64 `json:"pages_per_visit"`
	BounceRate                  *float64 `json:"bounce_rate"`
	AverageVisitDurationSeconds *float64 `json:"average_visit_duration_seconds"`
}

// SourcesShare is traffic.sources_share: ten channels, each a decimal share (0.0208 = 2.08%).
type SourcesShare struct {
	Direct        *float64 `json:"direct"`
	OrganicSearch *float64 `json:"organic_search"`
	PaidSearch    *float64 `json:"paid_search"`
	OrganicSocial *float64 `json:"organic_social"`
	PaidSocial    *float64 `json:"paid_social"`
	Email         *float64 `json:"email"`
	Referrals     *float64 `json:"referrals"`
	GenerativeAI  *float64 `json:"generative_ai"`
	Affiliate     *float64 `json:"affiliate"`
	DisplayAds    *float64 `json:"display_ads"`
}

// ChannelShare is one channel of SourcesShare.
type ChannelShare struct {
	Channel string
	Share   *float64
}

// Channels lists the ten channels in their documented order, with their JSON key names.
func (s *SourcesShare) Channels() []ChannelShare {
	return []ChannelShare{
		{"direct", s.Direct},
		{"organic_search", s.OrganicSearch},
		{"paid_search", s.PaidSearch},
		{"organic_social", s.OrganicSocial},
		{"paid_social", s.PaidSocial},
		{"email", s.Email},
		{"referrals", s.Referrals},
		{"generative_ai", s.GenerativeAI},
		{"affiliate", s.Affiliate},
		{"display_ads", s.DisplayAds},
	}
}

// GeoShare is one traffic.geography_share item; Share is a decimal.
type GeoShare struct {
	CountryCode string   `json:"country_code"`
	Share       *float64 `json:"share"`
}

// SEO is the seo object.
type SEO struct {
	TopKeywords []Keyword `json:"top_keywords"`
}

// Keyword is one seo.top_keywords item.
type Keyword struct {
	Keyword           string   `json:"keyword"`
	SearchVolume      *int64   `json:"search_volume"`
	CPCUSD            *float64 `json:"cpc_usd"`
	EstimatedValueUSD *float64 `json:"estimated_value_usd"`
}

// AIReferrals is the ai_referrals object.
type AIReferrals struct {
	TotalVisits        *int64       `json:"total_visits"`
	GlobalTrafficShare *float64     `json:"global_traffic_share"`
	Platforms          []AIPlatform `json:"platforms"`
	TopPrompts         []string     `json:"top_prompts"`
}

// AIPlatform is one ai_referrals.platforms item. Share is on the 0-100 scale, as returned.
type AIPlatform struct {
	Name    string         `json:"name"`
	Rank    *int64         `json:"rank"`
	Share   *float64       `json:"share"`
	History []AIShareMonth `json:"history"`
}

// AIShareMonth is one month of a platform's history; Month is YYYY-MM, Share 0-100.
type AIShareMonth struct {
	Month string   `json:"month"`
	Share *float64 `json:"share"`
}

// SimilarMeta is meta of the similar-sites response. It has no snapshot_date.
type SimilarMeta struct {
	Request      RequestEcho `json:"request"`
	Website      string      `json:"website"`
	DataCoverage *string     `json:"data_coverage"`
}

// SimilarTraffic is the traffic object of the similar-sites response and its items.
type SimilarTraffic struct {
	// TotalVisits may have decimal precision.
	TotalVisits *float64 `json:"total_visits"`
}

// SiteSimilar is the similar-sites response (spec 2.2).
type SiteSimilar struct {
	Status       string          `json:"status"`
	Meta         SimilarMeta     `json:"meta"`
	Website      *Website        `json:"website"`
	Rankings     *Rankings       `json:"rankings"`
	Traffic      *SimilarTraffic `json:"traffic"`
	SimilarSites []SimilarSite   `json:"similar_sites"`
}

// SimilarSite is one similar_sites item.
type SimilarSite struct {
	Domain      string          `json:"domain"`
	Title       *string         `json:"title"`
	Description *string         `json:"description"`
	Rankings    *Rankings       `json:"rankings"`
	Traffic     *SimilarTraffic `json:"traffic"`
	Images      *Images         `json:"images"`
}

// CountryMetadata is the country metadata response (spec 2.3).
type CountryMetadata struct {
	Status    string      `json:"status"`
	Meta      CountryMeta `json:"meta"`
	Countries []Country   `json:"countries"`
}

// CountryMeta is meta of the country metadata response.
type CountryMeta struct {
	Count    int    `json:"count"`
	Standard string `json:"standard"`
}

// Country is one ISO 3166-1 entry. Numeric keeps its leading zeros.
type Country struct {
	Name    string `json:"name"`
	Alpha2  string `json:"alpha2"`
	Alpha3  string `json:"alpha3"`
	Numeric string `json:"numeric"`
}
