package atlastest

import "sync"

// Legacy v1 bodies: the retired contract of an older marketplace listing — flat camelCase
// fields, a boolean success flag, traffic sources as an array, a per-month percentageChange,
// sourceSite/similarSites, and hyphenated country keys. They carry the same data as the v2
// bodies and exist so clients can be tested against a listing that still serves them.

type legacyOverview struct {
	Success          bool                `json:"success"`
	Domain           string              `json:"domain"`
	Title            *string             `json:"title"`
	Description      *string             `json:"description"`
	Category         *string             `json:"category"`
	GlobalRank       *int64              `json:"globalRank"`
	CountryCode      *string             `json:"countryCode"`
	CountryRank      *int64              `json:"countryRank"`
	CategoryRank     *int64              `json:"categoryRank"`
	SnapshotDate     *string             `json:"snapshotDate"`
	MonthlyVisits    []legacyMonth       `json:"monthlyVisits"`
	PagesPerVisit    *float64            `json:"pagesPerVisit"`
	BounceRate       *float64            `json:"bounceRate"`
	AvgVisitDuration *float64            `json:"avgVisitDuration"`
	TrafficSources   []legacySource      `json:"trafficSources"`
	TopCountries     []legacyCountryRank `json:"topCountries"`
	TopKeywords      []legacyKeyword     `json:"topKeywords"`
}

type legacyMonth struct {
	Month            string   `json:"month"`
	Visits           *int64   `json:"visits"`
	PercentageChange *float64 `json:"percentageChange"`
}

type legacySource struct {
	Source string   `json:"source"`
	Share  *float64 `json:"share"`
}

type legacyCountryRank struct {
	CountryCode string   `json:"countryCode"`
	Share       *float64 `json:"share"`
}

type legacyKeyword struct {
	Keyword      string   `json:"keyword"`
	SearchVolume *int64   `json:"searchVolume"`
	CPC          *float64 `json:"cpc"`
}

type legacySite struct {
	Domain          string   `json:"domain"`
	Title           *string  `json:"title"`
	Description     *string  `json:"description"`
	GlobalRank      *int64   `json:"globalRank"`
	TotalVisits     *float64 `json:"totalVisits"`
	SimilarityScore float64  `json:"similarityScore,omitempty"`
}

type legacySimilar struct {
	Success      bool         `json:"success"`
	SourceSite   legacySite   `json:"sourceSite"`
	SimilarSites []legacySite `json:"similarSites"`
	TotalResults int          `json:"totalResults"`
}

type legacyCountry struct {
	Name        string `json:"name"`
	Alpha2      string `json:"alpha-2"`
	Alpha3      string `json:"alpha-3"`
	CountryCode string `json:"country-code"`
}

// legacyBody returns the v1 body of endpoint for the normalized domain.
func (g *Generator) legacyBody(endpoint, domain string) []byte {
	switch endpoint {
	case EndpointOverview:
		return mustMarshal(legacyFromOverview(g.overview(domain, domain)))
	default:
		return mustMarshal(legacyFromSimilar(g.similar(domain, domain)))
	}
}

func legacyFromOverview(o overviewBody) legacyOverview {
	e := o.Traffic.Engagement
	v := legacyOverview{
		Success:          true,
		Domain:           o.Website.Domain,
		Title:            ptr(o.Website.Title),
		Description:      o.Website.Description,
		Category:         ptr(o.Website.Category.Slug),
		GlobalRank:       o.Rankings.Global.Rank,
		CountryCode:      ptr(o.Rankings.Country.CountryCode),
		CountryRank:      ptr(o.Rankings.Country.Rank),
		CategoryRank:     ptr(o.Rankings.Category.Rank),
		SnapshotDate:     ptr(o.Meta.SnapshotDate),
		PagesPerVisit:    ptr(e.PagesPerVisit),
		BounceRate:       ptr(e.BounceRate),
		AvgVisitDuration: ptr(e.AverageVisitDurationSeconds),
		MonthlyVisits:    []legacyMonth{},
		TrafficSources:   []legacySource{},
		TopCountries:     []legacyCountryRank{},
		TopKeywords:      []legacyKeyword{},
	}
	h := o.Traffic.History
	for i, p := range h {
		m := legacyMonth{Month: p.Month[:7], Visits: ptr(p.Visits)}
		if i > 0 && h[i-1].Visits > 0 {
			m.PercentageChange = ptr(round(100*(float64(p.Visits)/float64(h[i-1].Visits)-1), 2))
		}
		v.MonthlyVisits = append(v.MonthlyVisits, m)
	}
	for _, c := range o.Traffic.SourcesShare.channels() {
		v.TrafficSources = append(v.TrafficSources, legacySource{Source: c.name, Share: ptr(c.share)})
	}
	for _, gs := range o.Traffic.GeographyShare {
		v.TopCountries = append(v.TopCountries, legacyCountryRank{CountryCode: gs.CountryCode, Share: ptr(gs.Share)})
	}
	for _, k := range o.SEO.TopKeywords {
		v.TopKeywords = append(v.TopKeywords, legacyKeyword{Keyword: k.Keyword, SearchVolume: ptr(k.SearchVolume), CPC: k.CPCUSD})
	}
	return v
}

func legacyFromSimilar(s similarBody) legacySimilar {
	v := legacySimilar{
		Success: true,
		SourceSite: legacySite{
			Domain: s.Website.Domain, Title: ptr(s.Website.Title), Description: s.Website.Description,
			GlobalRank: s.Rankings.Global.Rank, TotalVisits: ptr(s.Traffic.TotalVisits),
		},
		SimilarSites: []legacySite{},
	}
	for i, it := range s.SimilarSites {
		v.SimilarSites = append(v.SimilarSites, legacySite{
			Domain: it.Domain, Title: ptr(it.Title), Description: it.Description,
			GlobalRank: it.Rankings.Global.Rank, TotalVisits: ptr(it.Traffic.TotalVisits),
			SimilarityScore: round(0.95-0.05*float64(i), 2),
		})
	}
	v.TotalResults = len(v.SimilarSites)
	return v
}

var (
	legacyCountriesOnce sync.Once
	legacyCountriesBody []byte
)

func legacyCountries() []byte {
	legacyCountriesOnce.Do(func() {
		list := isoCountries()
		out := make([]legacyCountry, len(list))
		for i, c := range list {
			out[i] = legacyCountry{Name: c.Name, Alpha2: c.Alpha2, Alpha3: c.Alpha3, CountryCode: c.Numeric}
		}
		legacyCountriesBody = mustMarshal(struct {
			Success   bool            `json:"success"`
			Count     int             `json:"count"`
			Countries []legacyCountry `json:"countries"`
		}{true, len(out), out})
	})
	return legacyCountriesBody
}
