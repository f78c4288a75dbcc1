package atlastest

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The data model. A domain has a month-independent profile (category, country, base
// popularity, trend, seasonality, channel mix, keyword and competitor candidates), and every
// month's figures are that profile moved by smooth functions of the month plus small
// per-month noise. So history agrees across snapshots, neighbouring months differ a little
// (competitors, keywords, AI platforms and top countries turn over at the margin), and rank
// follows visits by one curve for every domain.

const (
	// zipfC and zipfA give the rank curve: visits = zipfC * rank^-zipfA, so rank 1 has about
	// 85 billion visits a month, rank 100 about 340 million, rank 1 million about 5 thousand.
	zipfC = 8.5e10
	zipfA = 1.2
	// maxRank is where the rank scale ends; beyond it the global rank is null.
	maxRank = 60_000_000
	// smallRank is the rank from which a site is flagged is_small_site.
	smallRank = 2_000_000
	// refMonth is the month index (months since 2020-01) at which a profile's base visits apply.
	refMonth = 72 // 2026-01
)

// monthIndex is the number of months from 2020-01 to m.
func monthIndex(m time.Time) int { return (m.Year()-2020)*12 + int(m.Month()) - 1 }

// rankOf is the global rank that visits give on the rank curve (1 at best).
func rankOf(visits int64) int64 {
	return max(1, int64(math.Pow(zipfC/float64(visits), 1/zipfA)))
}

// profile is the month-independent identity of a domain.
type profile struct {
	domain      string
	name        string // first label, for keywords
	title       string
	description *string
	category    category
	country     string // top country, alpha-2
	famous      bool
	fromGA      bool

	base          float64 // visits in refMonth before seasonality and noise
	trend         float64 // monthly growth rate (log scale)
	season, phase float64 // seasonal amplitude and phase

	countryF, categoryF float64 // country and category rank as a fraction of the global rank
	// Edge cases of small sites, stable per domain: a withheld global rank, and empty history,
	// geography or keywords.
	nullRank, noHistory, noGeo, noKeywords bool
}

// popularity draws what sets a domain's visits (base, trend, seasonality): the profile's
// first draws, so that a month's ranks can be worked out without the rest of it. It returns
// the profile so far and the generator to draw the rest from.
func (g *Generator) popularity(domain string) (profile, *rand.Rand) {
	r := g.rng("site", domain)
	p := profile{domain: domain, name: domain}
	if i := strings.IndexByte(domain, '.'); i > 0 {
		p.name = domain[:i]
	}
	if f, ok := famousByDomain[domain]; ok {
		p.famous = true
		p.base = f.visits
		p.trend = (r.Float64() - 0.45) * 0.01 // within about ±0.5% a month
		p.season = 0.02 + r.Float64()*0.05
	} else {
		p.category = categories[r.IntN(len(categories))]
		p.country = pickCountry(r)
		p.base = zipfC * math.Pow(g.baseRank(domain), -zipfA)
		p.trend = (r.Float64() - 0.45) * 0.04 // -1.8% to +2.2% a month
		p.season = 0.02 + r.Float64()*0.13
	}
	p.phase = r.Float64() * 2 * math.Pi
	return p, r
}

func (g *Generator) profile(domain string) profile {
	p, r := g.popularity(domain)
	if f, ok := famousByDomain[domain]; ok {
		p.title = f.title
		p.category = categoryBySlug[f.category]
		p.country = f.country
	} else {
		if c, ok := categoryFromName(domain); ok {
			p.category = c
		}
		if c, ok := g.poolCategory(domain); ok {
			p.category = c
		}
		p.title = titleCase(strings.ReplaceAll(p.name, "-", " ")) + " - " + p.category.tagline
		if c, ok := ccTLDCountry(domain); ok {
			p.country = c
		}
	}
	if r.Float64() >= 0.12 || p.famous {
		name := p.title
		if !p.famous {
			name = titleCase(p.name)
		}
		d := fmt.Sprintf("%s: %s. %s", name, strings.ToLower(p.category.leaf()), descriptionTails[r.IntN(len(descriptionTails))])
		p.description = &d
	}
	p.fromGA = !p.famous && r.Float64() < 0.06
	p.countryF = 0.02 + r.Float64()*0.25
	p.categoryF = 0.001 + r.Float64()*0.03
	p.nullRank = r.Float64() < 0.15
	p.noHistory = r.Float64() < 0.04
	p.noGeo = r.Float64() < 0.2
	p.noKeywords = r.Float64() < 0.25
	return p
}

// baseRank is a synthetic domain's popularity as a rank on the curve: log-uniform from rank
// 1,000 to a little past the end of the rank scale, and for 3% of domains from 100 to 1,000
// (the top 100 belongs to the famous sites).
func (g *Generator) baseRank(domain string) float64 {
	r := g.rng("base", domain)
	lo, hi := math.Log(1000), math.Log(maxRank*1.2)
	if r.Float64() < 0.03 {
		return math.Exp(math.Log(100) + r.Float64()*(lo-math.Log(100)))
	}
	return math.Exp(lo + r.Float64()*(hi-lo))
}

// syntheticCap bounds a synthetic domain's visits below those of rank 100, so the top 100
// stays the famous sites' whatever a trend does over the years.
var syntheticCap = 0.97 * zipfC * math.Pow(100, -zipfA)

// visits is the domain's visits in month m: the base (plus a floor of 30 visits) moved by
// trend and seasonality, with 1.5% noise. It depends on the seed, domain and m only, so
// overlapping history of two snapshots agrees.
func (g *Generator) visits(p profile, m time.Time) int64 {
	mi := monthIndex(m)
	v := (p.base + 30) * math.Exp(p.trend*float64(mi-refMonth)) * (1 + p.season*math.Sin(2*math.Pi*float64(mi)/12+p.phase))
	v *= 1 + 0.015*g.rng("noise", p.domain, m.Format("2006-01")).NormFloat64()
	if !p.famous {
		v = syntheticCap * -math.Expm1(-v/syntheticCap) // smooth saturation, near identity far below the cap
	}
	return int64(v)
}

// metrics are a domain's figures of the Generator's month.
type metrics struct {
	profile
	visits     int64
	rank       int64  // its place in the month (rankFor), also when withheld
	globalRank *int64 // nil beyond the scale or withheld for a small site
	small      bool
	countryRk  int64
	categoryRk int64
}

func (g *Generator) metrics(domain string) metrics {
	p := g.profile(domain)
	m := metrics{profile: p, visits: g.visits(p, g.month)}
	m.rank = g.rankFor(domain, m.visits)
	m.small = m.rank > smallRank
	if m.rank <= maxRank && !(m.small && p.nullRank) {
		m.globalRank = ptr(m.rank)
	}
	m.countryRk = max(1, int64(float64(m.rank)*p.countryF))
	m.categoryRk = max(1, int64(float64(m.rank)*p.categoryF))
	return m
}

func images(domain string) imagesBody {
	return imagesBody{
		FaviconURL:           "https://images.atlas.example/favicon/" + domain + ".png",
		ScreenshotDesktopURL: "https://images.atlas.example/screenshot/desktop/" + domain + ".jpg",
		ScreenshotMobileURL:  "https://images.atlas.example/screenshot/mobile/" + domain + ".jpg",
	}
}

func website(m metrics, slug string) websiteBody {
	return websiteBody{
		Domain:      m.domain,
		Title:       m.title,
		Description: m.description,
		Category:    categoryBody{Slug: slug, Name: m.category.name()},
		Images:      images(m.domain),
		Flags:       flagsBody{IsSmallSite: m.small, IsFromGoogleAnalytics: m.fromGA},
	}
}

func (g *Generator) overview(domain, requestURL string) overviewBody {
	m := g.metrics(domain)
	shares := g.channelShares(m)
	return overviewBody{
		Status: "success",
		Meta: overviewMeta{
			Request:      requestEcho{URL: requestURL},
			SnapshotDate: g.month.Format("2006-01-02"),
			DataCoverage: "complete",
		},
		Website: website(m, m.category.slug),
		Rankings: rankingsBody{
			Global:         globalRank{Rank: m.globalRank},
			Country:        countryRank{CountryCode: m.country, Rank: m.countryRk},
			Category:       categoryRank{CategorySlug: ptr(m.category.slug), Rank: m.categoryRk},
			GlobalCategory: json.RawMessage("null"),
		},
		Traffic: trafficBody{
			IsDataFromGA:   m.fromGA,
			History:        g.history(m),
			Engagement:     g.engagement(m),
			SourcesShare:   shares,
			GeographyShare: g.geography(m),
			Period:         g.Month(),
		},
		SEO:         seoBody{TopKeywords: g.keywords(m)},
		AIReferrals: g.aiReferrals(m, shares.GenerativeAI),
	}
}

// history is 12 months ending at the data month, oldest first; empty for a few small sites.
func (g *Generator) history(m metrics) []historyPoint {
	out := make([]historyPoint, 0, 12)
	if m.small && m.noHistory {
		return out
	}
	for i := 11; i >= 0; i-- {
		month := g.month.AddDate(0, -i, 0)
		out = append(out, historyPoint{Month: month.Format("2006-01-02"), Visits: g.visits(m.profile, month)})
	}
	return out
}

// engagement is the domain's own level moved by a few percent a month.
func (g *Generator) engagement(m metrics) engagementBody {
	r := g.rng("engagement", m.domain)
	ppv, bounce, dur := 1.2+r.ExpFloat64()*2.5, 0.25+r.Float64()*0.5, 20+r.ExpFloat64()*220
	n := g.rng("engagement", m.domain, g.Month())
	return engagementBody{
		PagesPerVisit:               round(max(1, ppv*math.Exp(0.04*n.NormFloat64())), 2),
		BounceRate:                  round(min(0.95, max(0.05, bounce*math.Exp(0.04*n.NormFloat64()))), 4),
		AverageVisitDurationSeconds: round(dur*math.Exp(0.05*n.NormFloat64()), 2),
	}
}

// channelWeights are typical mean shares; each domain draws its own mix around them.
var channelWeights = [10]float64{0.33, 0.38, 0.05, 0.08, 0.02, 0.02, 0.06, 0.015, 0.015, 0.02}

// channelShares are the ten decimal shares rounded to 4 places and summing to exactly 1 (the
// largest absorbs the rounding). Minor channels are absent for some domains; generative_ai
// grows from 2023 on and is 0 before a domain's first AI platform.
func (g *Generator) channelShares(m metrics) sourcesShareBody {
	r := g.rng("channels", m.domain)
	n := g.rng("channels", m.domain, g.Month())
	var raw [10]float64
	var sum float64
	for i, w := range channelWeights {
		present := i < 4 || r.Float64() >= 0.25 || (i == 7 && m.large())
		level := w * math.Exp(0.6*r.NormFloat64())
		if !present {
			continue
		}
		raw[i] = level * math.Exp(0.06*n.NormFloat64())
		sum += raw[i]
	}
	if raw[7] > 0 {
		mi := monthIndex(g.month)
		if _, started := g.firstPlatform(m.domain, m.large()); mi < started {
			sum -= raw[7]
			raw[7] = 0
		} else {
			growth := min(4, max(0.3, 1+0.05*float64(mi-60)))
			sum += raw[7] * (growth - 1)
			raw[7] *= growth
		}
	}
	var shares [10]float64
	largest := 0
	for i := range raw {
		shares[i] = round(raw[i]/sum, 4)
		if shares[i] > shares[largest] {
			largest = i
		}
	}
	var rest float64
	for i := range shares {
		if i != largest {
			rest += shares[i]
		}
	}
	shares[largest] = round(1-rest, 4)
	return sourcesShareBody{
		Direct: shares[0], OrganicSearch: shares[1], PaidSearch: shares[2], OrganicSocial: shares[3],
		PaidSocial: shares[4], Email: shares[5], Referrals: shares[6], GenerativeAI: shares[7],
		Affiliate: shares[8], DisplayAds: shares[9],
	}
}

// geography is up to five countries, largest first, with decimal shares summing to at most 1
// (the rest is other countries). Each domain has seven candidate countries whose weights move
// a little every month, so a country enters or leaves the top five now and then.
func (g *Generator) geography(m metrics) []geoShare {
	out := []geoShare{}
	if m.small && m.noGeo {
		return out
	}
	r := g.rng("geo", m.domain)
	n := 1 + r.IntN(5)
	covered := 0.35 + r.Float64()*0.6
	type cand struct {
		code string
		w    float64
	}
	cands := []cand{{m.country, 1 + r.Float64()*1.5}}
	for len(cands) < 7 {
		code := pickCountry(r)
		if !slices.ContainsFunc(cands, func(c cand) bool { return c.code == code }) {
			cands = append(cands, cand{code, 0.05 + r.Float64()*0.5})
		}
	}
	noise := g.rng("geo", m.domain, g.Month())
	var sum float64
	for i := range cands {
		cands[i].w *= math.Exp(0.12 * noise.NormFloat64())
		sum += cands[i].w
	}
	slices.SortStableFunc(cands, func(a, b cand) int { return cmpDesc(a.w, b.w) })
	for _, c := range cands[:n] {
		if sh := round(covered*c.w/sum, 4); sh > 0 {
			out = append(out, geoShare{CountryCode: c.code, Share: sh})
		}
	}
	return out
}

func cmpDesc(a, b float64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// keywords are 3 to 10 of the domain's fifteen candidate keywords: the brand first, then the
// others by a score that moves every month, so the list turns over a little at its end.
// Search volume falls with position; CPC is stable per keyword and sometimes null.
func (g *Generator) keywords(m metrics) []keywordBody {
	out := []keywordBody{}
	if m.small && m.noKeywords {
		return out
	}
	r := g.rng("keywords", m.domain)
	n := 3 + r.IntN(8)
	volShare := 0.05 + r.Float64()*0.3
	name := strings.ReplaceAll(m.name, "-", " ")
	topic := strings.ToLower(m.category.leaf())
	year := strconv.Itoa(g.month.Year())
	type cand struct {
		kw    string
		score float64
		cpc   *float64
	}
	cands := []cand{{kw: name, score: math.Inf(1)}}
	for _, i := range r.Perm(len(keywordTemplates)) {
		kw := fill(keywordTemplates[i], name, topic, year)
		if !slices.ContainsFunc(cands, func(c cand) bool { return c.kw == kw }) {
			cands = append(cands, cand{kw: kw, score: r.Float64()})
		}
	}
	noise := g.rng("keywords", m.domain, g.Month())
	for i := range cands {
		if r.Float64() >= 0.15 {
			cands[i].cpc = ptr(round(0.05+r.ExpFloat64()*1.6, 2))
		}
		cands[i].score += 0.04 * noise.NormFloat64()
	}
	slices.SortStableFunc(cands, func(a, b cand) int { return cmpDesc(a.score, b.score) })
	for i, c := range cands[:min(n, len(cands))] {
		vol := max(10, int64(float64(m.visits)*volShare/math.Pow(float64(i+1), 1.1)))
		k := keywordBody{Keyword: c.kw, SearchVolume: vol, CPCUSD: c.cpc}
		if c.cpc != nil {
			k.EstimatedValueUSD = round(float64(vol)*0.28**c.cpc, 2)
		}
		out = append(out, k)
	}
	return out
}

// neverMonth is the start month of a platform that never refers visits to a domain.
const neverMonth = math.MaxInt32

// fill fills a keyword template's {name}, {topic} and {year}.
func fill(tmpl, name, topic, year string) string {
	if !strings.Contains(tmpl, "{") {
		return tmpl
	}
	return strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(tmpl, "{name}", name), "{topic}", topic), "{year}", year)
}

// platformStart is the month index from which domain gets referrals from platform i: the
// platform's launch plus a delay of the domain's own (20 months on average), or never for
// 30% of the pairs (except chatgpt.com), so new platforms keep appearing for years.
func (g *Generator) platformStart(domain string, i int, large bool) int {
	r := g.rng("ai-start", domain, aiPlatforms[i].host)
	if i > 0 && r.Float64() < 0.3 {
		return neverMonth
	}
	delay := int(r.ExpFloat64() * 20)
	if large && i == 0 {
		delay = min(delay, largeAIDelay) // a large site is referred by chatgpt.com soon after its launch
	}
	return aiPlatforms[i].launched + delay
}

// firstPlatform returns the platform a domain gets AI referrals from first and its month.
func (g *Generator) firstPlatform(domain string, large bool) (int, int) {
	first, at := 0, math.MaxInt
	for i := range aiPlatforms {
		if s := g.platformStart(domain, i, large); s < at {
			first, at = i, s
		}
	}
	return first, at
}

// aiPlatformsOf returns, per platform, the month a domain starts to get referrals from it
// and the domain's own level of them: the month-independent part of aiShares.
func (g *Generator) aiPlatformsOf(domain string, large bool) (start []int, level []float64) {
	start, level = make([]int, len(aiPlatforms)), make([]float64, len(aiPlatforms))
	for i, p := range aiPlatforms {
		start[i] = g.platformStart(domain, i, large)
		level[i] = math.Exp(0.7 * g.rng("ai-level", domain, p.host).NormFloat64())
	}
	return start, level
}

// aiShares returns the 0-100 shares of the platforms a domain has in month m, by platform
// index (absent platforms are missing), given aiPlatformsOf. Shares are rounded to 2 places
// and sum to 100.
func (g *Generator) aiShares(domain string, m time.Time, start []int, level []float64) map[int]float64 {
	mi := monthIndex(m)
	w := map[int]float64{}
	var sum float64
	for i, p := range aiPlatforms {
		if mi < start[i] {
			continue
		}
		ramp := min(1, float64(mi-start[i]+1)/6)
		w[i] = p.weight * level[i] * ramp * math.Exp(0.1*g.rng("ai-noise", domain, p.host, m.Format("2006-01")).NormFloat64())
		sum += w[i]
	}
	order := make([]int, 0, len(w))
	for i := range w {
		order = append(order, i)
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := cmpDesc(w[a], w[b]); c != 0 {
			return c
		}
		return a - b
	})
	out := make(map[int]float64, len(w))
	var given float64
	for k, i := range order {
		share := round(100*w[i]/sum, 2)
		if k == len(order)-1 {
			share = round(max(0, 100-given), 2)
		}
		given += share
		out[i] = share
	}
	return out
}

// aiReferrals lists the AI platforms of the month by share, with each platform's share over
// up to the last 12 months it existed for the domain (computed by the same function, so it
// agrees across snapshots; empty for a fifth of the platform-domain pairs).
func (g *Generator) aiReferrals(m metrics, genAI float64) aiReferralsBody {
	ai := aiReferralsBody{GlobalTrafficShare: genAI, Platforms: []aiPlatformBody{}, TopPrompts: []string{}}
	if genAI <= 0 {
		return ai
	}
	ai.TotalVisits = int64(float64(m.visits) * genAI)
	start, level := g.aiPlatformsOf(m.domain, m.large())
	past := make([]map[int]float64, 12) // past[j]: j months before the data month
	for j := range past {
		past[j] = g.aiShares(m.domain, g.month.AddDate(0, -j, 0), start, level)
	}
	now := past[0]
	order := make([]int, 0, len(now))
	for i := range now {
		order = append(order, i)
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := cmpDesc(now[a], now[b]); c != 0 {
			return c
		}
		return a - b
	})
	for rank, i := range order {
		p := aiPlatformBody{Name: aiPlatforms[i].host, Rank: int64(rank + 1), Share: now[i], History: []aiShareMonth{}}
		if g.rng("ai-history", m.domain, aiPlatforms[i].host).Float64() >= 0.2 {
			for j := 11; j >= 0; j-- {
				if s, ok := past[j][i]; ok {
					p.History = append(p.History, aiShareMonth{Month: g.month.AddDate(0, -j, 0).Format("2006-01"), Share: s})
				}
			}
		}
		ai.Platforms = append(ai.Platforms, p)
	}
	r := g.rng("prompts", m.domain)
	first := r.IntN(len(promptTemplates))
	for i, n := 0, min(r.IntN(6), len(promptTemplates)); i < n; i++ {
		ai.TopPrompts = append(ai.TopPrompts, promptFor(m.profile, first+i))
	}
	return ai
}

// similarRankings is the rankings object of a similar-sites response or item; the category
// slug is sometimes null or in mixed case, as the operation returns it.
func similarRankings(m metrics, r *rand.Rand) rankingsBody {
	cat := categoryRank{CategorySlug: ptr(m.category.slug), Rank: m.categoryRk}
	switch x := r.Float64(); {
	case x < 0.08:
		cat.CategorySlug = nil
	case x < 0.35:
		cat.CategorySlug = ptr(m.category.mixedSlug())
	}
	return rankingsBody{
		Global:   globalRank{Rank: m.globalRank},
		Country:  countryRank{CountryCode: m.country, CountryName: countryName(m.country), Rank: m.countryRk},
		Category: cat,
	}
}

// totalVisits is the month's visits, now and then with decimal precision.
func totalVisits(m metrics, r *rand.Rand) similarTraffic {
	v := float64(m.visits)
	if r.Float64() < 0.3 {
		v = round(v+r.Float64(), 2)
	}
	return similarTraffic{TotalVisits: v}
}

func (g *Generator) similar(domain, requestURL string) similarBody {
	m := g.metrics(domain)
	r := g.rng("similar", domain, g.Month())
	slug := m.category.slug
	if r.Float64() < 0.3 {
		slug = m.category.mixedSlug()
	}
	w := website(m, slug)
	stable := g.rng("similar", domain)
	if stable.Float64() < 0.45 {
		for _, i := range stable.Perm(len(tagPool))[:1+stable.IntN(4)] {
			w.Tags = append(w.Tags, tagPool[i])
		}
	}
	items := []similarSiteIt{}
	for _, d := range g.competitors(m, stable) {
		o := g.metrics(d)
		or := g.rng("similar-item", d, g.Month())
		items = append(items, similarSiteIt{
			Domain:      d,
			Title:       o.title,
			Description: o.description,
			Rankings:    similarRankings(o, or),
			Traffic:     totalVisits(o, or),
			Images:      images(d),
		})
	}
	return similarBody{
		Status:       "success",
		Meta:         similarMeta{Request: requestEcho{URL: requestURL}, Website: domain, DataCoverage: "complete"},
		Website:      w,
		Rankings:     similarRankings(m, r),
		Traffic:      totalVisits(m, r),
		SimilarSites: items,
	}
}

// competitors are 3 to 10 sites of the domain's category (none for 4% of small sites),
// closest first: famous sites rank famous peers first; every candidate's closeness moves a
// little each month, so one appears or drops out at the end of the list now and then.
func (g *Generator) competitors(m metrics, stable *rand.Rand) []string {
	if !m.famous && stable.Float64() < 0.04 {
		return nil
	}
	n := 3 + stable.IntN(8)
	g.poolCategory(m.domain) // builds the pools
	type cand struct {
		domain string
		score  float64
	}
	var cands []cand
	for _, d := range g.pools[m.category.slug] {
		if d == m.domain {
			continue
		}
		s := g.rng("affinity", m.domain, d).Float64() + 0.025*g.rng("affinity", m.domain, d, g.Month()).NormFloat64()
		if _, ok := famousByDomain[d]; ok && m.famous {
			s++
		}
		cands = append(cands, cand{d, s})
	}
	slices.SortStableFunc(cands, func(a, b cand) int { return cmpDesc(a.score, b.score) })
	out := make([]string, 0, n)
	for _, c := range cands[:min(n, len(cands))] {
		out = append(out, c.domain)
	}
	return out
}

// poolCategory reports the category of a synthetic domain that belongs to a similar-sites
// pool; pool domains always have their pool's category.
func (g *Generator) poolCategory(domain string) (category, bool) {
	g.poolsOnce.Do(func() {
		g.pools = make(map[string][]string, len(categories))
		g.poolOf = make(map[string]category)
		for _, f := range famous {
			g.pools[f.category] = append(g.pools[f.category], f.domain)
		}
		for _, c := range categories {
			for _, d := range g.pool(c) {
				g.pools[c.slug] = append(g.pools[c.slug], d)
				if _, dup := g.poolOf[d]; !dup {
					g.poolOf[d] = c
				}
			}
		}
	})
	c, ok := g.poolOf[domain]
	return c, ok
}

// pool returns the stable synthetic candidates of a category.
func (g *Generator) pool(c category) []string {
	r := g.rng("pool", c.slug)
	out := make([]string, 0, 24)
	for len(out) < 24 {
		d := wordsAdj[r.IntN(len(wordsAdj))] + c.word + wordsNoun[r.IntN(len(wordsNoun))] + "." + tlds[r.IntN(len(tlds))]
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}
