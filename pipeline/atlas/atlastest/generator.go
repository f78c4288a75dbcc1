package atlastest

import (
	"bytes"
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"sitewatch/schema"
)

// Generator produces the deterministic synthetic bodies of the simulator. The same seed,
// month and domain always give the same bytes. A Generator is safe for concurrent use; it
// caches encoded bodies in a bounded map so repeated requests cost a copy, not an encoding.
type Generator struct {
	seed  int64
	month time.Time // first day of the snapshot month, UTC

	mu    sync.RWMutex
	cache map[cacheKey]cachedBody

	countriesOnce sync.Once
	countries     []byte

	poolsOnce sync.Once
	pools     map[string][]string // category slug -> similar-site pool
	poolOf    map[string]category // pool domain -> its category
}

type cacheKey struct {
	endpoint string
	domain   string
}

// cachedBody is a 200 body split around the echoed meta.request.url string, so one cached
// encoding serves every spelling of the requested url.
type cachedBody struct {
	head, tail []byte
}

// maxCache bounds the body cache; when full it is cleared (cheap and good enough for a
// simulator whose working set is a watchlist).
const maxCache = 16384

// NewGenerator returns a Generator for seed and month (YYYY-MM). An empty or malformed month
// means the current UTC month; a zero seed means 1.
func NewGenerator(seed int64, month string) *Generator {
	if seed == 0 {
		seed = 1
	}
	m, err := parseMonth(month)
	if err != nil {
		now := time.Now().UTC()
		m = time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	return &Generator{seed: seed, month: m, cache: make(map[cacheKey]cachedBody)}
}

func parseMonth(s string) (time.Time, error) {
	t, err := time.Parse("2006-01", s)
	if err != nil {
		return time.Time{}, fmt.Errorf("month %q: want YYYY-MM: %w", s, err)
	}
	return t.UTC(), nil
}

// Month returns the snapshot month the Generator describes, as YYYY-MM.
func (g *Generator) Month() string { return g.month.Format("2006-01") }

// OverviewBody returns the site overview body (spec 2.1) for domain, which is used as given
// (the caller normalizes it) and echoed as meta.request.url.
func (g *Generator) OverviewBody(domain string) []byte {
	return g.body("site-overview", domain, domain)
}

// SimilarBody returns the similar-sites body (spec 2.2) for domain, echoed as meta.request.url.
func (g *Generator) SimilarBody(domain string) []byte {
	return g.body("site-similar", domain, domain)
}

// CountriesBody returns the country metadata body (spec 2.3): the 249 ISO 3166-1 entries.
func (g *Generator) CountriesBody() []byte {
	g.countriesOnce.Do(func() {
		g.countries = mustMarshal(schema.CountryMetadata{
			Status:    "success",
			Meta:      schema.CountryMeta{Count: len(isoCountries()), Standard: "ISO 3166-1"},
			Countries: isoCountries(),
		})
	})
	return g.countries
}

// body returns the encoded body of endpoint for the normalized domain with requestURL echoed.
func (g *Generator) body(endpoint, domain, requestURL string) []byte {
	k := cacheKey{endpoint, domain}
	g.mu.RLock()
	c, ok := g.cache[k]
	g.mu.RUnlock()
	if !ok {
		c = g.encode(endpoint, domain)
		g.mu.Lock()
		if len(g.cache) >= maxCache {
			clear(g.cache)
		}
		g.cache[k] = c
		g.mu.Unlock()
	}
	u := jsonString(requestURL)
	out := make([]byte, 0, len(c.head)+len(u)+len(c.tail))
	out = append(out, c.head...)
	out = append(out, u...)
	return append(out, c.tail...)
}

// echoMarker is a placeholder url that cannot occur in generated data; the encoded body is
// split around it.
const echoMarker = "\x00echo\x00"

func (g *Generator) encode(endpoint, domain string) cachedBody {
	var v any
	switch endpoint {
	case "site-overview":
		v = g.overview(domain, echoMarker)
	case "site-similar":
		v = g.similar(domain, echoMarker)
	default:
		panic("atlastest: unknown endpoint " + endpoint)
	}
	b := mustMarshal(v)
	m := jsonString(echoMarker)
	i := bytes.Index(b, m)
	return cachedBody{head: b[:i:i], tail: b[i+len(m):]}
}

// jsonString encodes s as a JSON string exactly as json.Marshal does, without reflection for
// the common case of plain printable ASCII.
func jsonString(s string) []byte {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			plain = false
			break
		}
	}
	if plain {
		b := make([]byte, 0, len(s)+2)
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // a string always marshals
	}
	return b
}

// mustMarshal encodes v compactly without HTML escaping (category names contain " > ").
func mustMarshal(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("atlastest: marshal %T: %v", v, err))
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// rng returns a generator seeded from the Generator's seed and the given parts.
func (g *Generator) rng(parts ...string) *rand.Rand {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(g.seed))
	h.Write(b[:])
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	s := h.Sum64()
	return rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15))
}

// site is the month-independent identity of a domain plus its metrics for one month.
type site struct {
	domain      string
	name        string // first label, for titles and keywords
	title       string
	description *string
	category    category
	smallSite   bool
	fromGA      bool
	// visits of the snapshot month; rank derived from it (Zipf-like: visits fall with rank).
	visits     int64
	globalRank *int64
	country    string // top country, alpha-2
	countryRk  int64
	categoryRk int64
}

const (
	zipfC = 8e10 // visits of rank 1
	zipfA = 0.92 // visits = zipfC * rank^-zipfA
	// maxRank is where the rank scale ends; beyond it the rank is null.
	maxRank = 60_000_000
)

// baseRank is the domain's month-independent popularity: log-uniform from rank 500 to a
// little past the end of the rank scale, and for 3% of domains log-uniform over the top 500.
func (g *Generator) baseRank(domain string) float64 {
	r := g.rng("base", domain)
	lo, hi := math.Log(500), math.Log(maxRank*1.2)
	if r.Float64() < 0.03 {
		return math.Exp(r.Float64() * lo)
	}
	return math.Exp(lo + r.Float64()*(hi-lo))
}

// monthVisits is the domain's visits in month m (first of month). It depends on the seed,
// domain and m only, so overlapping history of two snapshots agrees.
func (g *Generator) monthVisits(domain string, m time.Time) int64 {
	base := zipfC * math.Pow(g.baseRank(domain), -zipfA)
	r := g.rng("trend", domain)
	trend := (r.Float64() - 0.45) * 0.06 // monthly growth between -2.7% and +3.3%
	season := r.Float64() * 0.25         // seasonal amplitude
	phase := r.Float64() * 2 * math.Pi
	months := float64((m.Year()-2020)*12 + int(m.Month()) - 1)
	v := base * math.Exp(trend*(months-72)) * (1 + season*math.Sin(2*math.Pi*months/12+phase))
	noise := g.rng("noise", domain, m.Format("2006-01")).NormFloat64() * 0.05
	v *= 1 + noise
	if v < 50 {
		v = 50 + float64(len(domain))
	}
	return int64(v)
}

func (g *Generator) site(domain string) site {
	r := g.rng("site", domain)
	s := site{domain: domain}
	s.name = domain
	if i := strings.IndexByte(domain, '.'); i > 0 {
		s.name = domain[:i]
	}
	s.category = categories[r.IntN(len(categories))]
	if c, ok := g.poolCategory(domain); ok {
		s.category = c
	}
	s.title = titleCase(strings.ReplaceAll(s.name, "-", " ")) + " - " + s.category.tagline
	if r.Float64() >= 0.12 {
		d := fmt.Sprintf("%s: %s. %s", titleCase(s.name), strings.ToLower(s.category.leaf()), descriptionTails[r.IntN(len(descriptionTails))])
		s.description = &d
	}
	s.fromGA = r.Float64() < 0.06
	s.visits = g.monthVisits(domain, g.month)
	rank := int64(math.Pow(zipfC/float64(s.visits), 1/zipfA))
	if rank < 1 {
		rank = 1
	}
	s.smallSite = rank > 2_000_000
	// Null global rank: beyond the rank scale, or now and then for a small site.
	mr := g.rng("rank", domain, g.Month())
	if rank <= maxRank && !(s.smallSite && mr.Float64() < 0.15) {
		s.globalRank = &rank
	}
	s.country = pickCountry(r)
	s.countryRk = max(1, int64(float64(rank)*(0.02+r.Float64()*0.25)))
	s.categoryRk = max(1, int64(float64(rank)*(0.001+r.Float64()*0.03)))
	return s
}

func (g *Generator) images(domain string) *schema.Images {
	return &schema.Images{
		FaviconURL:           ptr("https://images.atlas.example/favicon/" + domain + ".png"),
		ScreenshotDesktopURL: ptr("https://images.atlas.example/screenshot/desktop/" + domain + ".jpg"),
		ScreenshotMobileURL:  ptr("https://images.atlas.example/screenshot/mobile/" + domain + ".jpg"),
	}
}

func (g *Generator) website(s site, slug string) *schema.Website {
	return &schema.Website{
		Domain:      s.domain,
		Title:       ptr(s.title),
		Description: s.description,
		Category:    &schema.Category{Slug: ptr(slug), Name: ptr(s.category.name())},
		Images:      g.images(s.domain),
		Flags:       &schema.Flags{IsSmallSite: ptr(s.smallSite), IsFromGoogleAnalytics: ptr(s.fromGA)},
	}
}

var channelNames = [10]string{"direct", "organic_search", "paid_search", "organic_social", "paid_social", "email", "referrals", "generative_ai", "affiliate", "display_ads"}

// channelWeights are typical mean shares; each domain draws around them.
var channelWeights = [10]float64{0.33, 0.38, 0.05, 0.08, 0.02, 0.02, 0.06, 0.015, 0.015, 0.02}

func (g *Generator) overview(domain, requestURL string) schema.SiteOverview {
	s := g.site(domain)
	r := g.rng("overview", domain, g.Month())

	// History: 12 months ending at the snapshot month, oldest first. Rarely empty for a small site.
	history := make([]schema.TrafficPoint, 0, 12)
	if !(s.smallSite && r.Float64() < 0.04) {
		for i := 11; i >= 0; i-- {
			m := g.month.AddDate(0, -i, 0)
			history = append(history, schema.TrafficPoint{Month: m.Format("2006-01-02"), Visits: ptr(g.monthVisits(domain, m))})
		}
	}

	// Sources: ten decimal shares rounded to 4 places, summing to 1; the largest absorbs the
	// rounding remainder.
	var raw [10]float64
	var sum float64
	for i, w := range channelWeights {
		if i >= 4 && r.Float64() < 0.25 { // minor channels are often absent
			continue
		}
		raw[i] = w * r.ExpFloat64()
		sum += raw[i]
	}
	var shares [10]float64
	var acc float64
	largest := 0
	for i := range raw {
		shares[i] = round(raw[i]/sum, 4)
		if shares[i] > shares[largest] {
			largest = i
		}
	}
	for i := range shares {
		if i != largest {
			acc += shares[i]
		}
	}
	shares[largest] = round(1-acc, 4)
	src := &schema.SourcesShare{
		Direct: ptr(shares[0]), OrganicSearch: ptr(shares[1]), PaidSearch: ptr(shares[2]),
		OrganicSocial: ptr(shares[3]), PaidSocial: ptr(shares[4]), Email: ptr(shares[5]),
		Referrals: ptr(shares[6]), GenerativeAI: ptr(shares[7]), Affiliate: ptr(shares[8]),
		DisplayAds: ptr(shares[9]),
	}

	// Geography: the top country first, decimals summing to at most 1 (the rest is "other").
	geo := []schema.GeoShare{}
	if !(s.smallSite && r.Float64() < 0.2) {
		n := 1 + r.IntN(5)
		left := 0.35 + r.Float64()*0.6
		seen := map[string]bool{}
		code := s.country
		for len(geo) < n {
			if !seen[code] {
				seen[code] = true
				sh := left * (0.4 + r.Float64()*0.4)
				if len(geo) == n-1 {
					sh = left * r.Float64()
				}
				sh = round(sh, 4)
				if sh <= 0 {
					break
				}
				left -= sh
				geo = append(geo, schema.GeoShare{CountryCode: code, Share: ptr(sh)})
			}
			code = pickCountry(r)
		}
		if len(geo) > 2 {
			rest := geo[1:]
			sort.SliceStable(rest, func(i, j int) bool { return *rest[i].Share > *rest[j].Share })
		}
	}

	// Keywords: volume falls with position; CPC sometimes null.
	keywords := []schema.Keyword{}
	if !(s.smallSite && r.Float64() < 0.25) {
		n := 3 + r.IntN(8)
		vol := float64(s.visits) * (0.05 + r.Float64()*0.3)
		seen := map[string]bool{}
		for i := 0; i < n; i++ {
			kw := keywordFor(r, s, i)
			if seen[kw] {
				continue
			}
			seen[kw] = true
			v := max(10, int64(vol/math.Pow(float64(i+1), 1.1)))
			k := schema.Keyword{Keyword: kw, SearchVolume: ptr(v)}
			value := 0.0
			if r.Float64() >= 0.15 {
				cpc := round(0.05+r.ExpFloat64()*1.6, 2)
				k.CPCUSD = ptr(cpc)
				value = round(float64(v)*0.28*cpc, 2)
			}
			k.EstimatedValueUSD = ptr(value)
			keywords = append(keywords, k)
		}
	}

	// AI referrals: consistent with the generative_ai share of the last month's visits.
	ai := &schema.AIReferrals{TotalVisits: ptr(int64(0)), GlobalTrafficShare: ptr(shares[7]), Platforms: []schema.AIPlatform{}, TopPrompts: []string{}}
	if shares[7] > 0 {
		ai.TotalVisits = ptr(int64(float64(s.visits) * shares[7]))
		n := 1 + r.IntN(6)
		perm := r.Perm(len(aiPlatforms))[:n]
		w := make([]float64, n)
		var ws float64
		for i, p := range perm {
			w[i] = aiPlatforms[p].weight * (0.3 + r.ExpFloat64())
			ws += w[i]
		}
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		sort.Slice(idx, func(a, b int) bool { return w[idx[a]] > w[idx[b]] })
		var given float64
		for rank, i := range idx {
			share := round(100*w[i]/ws, 2)
			if rank == n-1 {
				share = round(math.Max(0, 100-given), 2)
			}
			given += share
			p := schema.AIPlatform{Name: aiPlatforms[perm[i]].host, Rank: ptr(int64(rank + 1)), Share: ptr(share), History: []schema.AIShareMonth{}}
			if r.Float64() >= 0.2 {
				months := 3 + r.IntN(10)
				for j := months - 1; j >= 0; j-- {
					hs := round(math.Min(100, share*(0.6+0.8*r.Float64())), 2)
					p.History = append(p.History, schema.AIShareMonth{Month: g.month.AddDate(0, -j, 0).Format("2006-01"), Share: ptr(hs)})
				}
			}
			ai.Platforms = append(ai.Platforms, p)
		}
		np := r.IntN(6)
		for i := 0; i < np; i++ {
			ai.TopPrompts = append(ai.TopPrompts, promptFor(r, s, i))
		}
	}

	rk := &schema.Rankings{
		Global:         &schema.GlobalRank{Rank: s.globalRank},
		Country:        &schema.CountryRank{CountryCode: ptr(s.country), Rank: ptr(s.countryRk)},
		Category:       &schema.CategoryRank{CategorySlug: ptr(s.category.slug), Rank: ptr(s.categoryRk)},
		GlobalCategory: json.RawMessage("null"),
	}
	return schema.SiteOverview{
		Status: "success",
		Meta: schema.OverviewMeta{
			Request:      schema.RequestEcho{URL: requestURL},
			SnapshotDate: ptr(g.month.Format("2006-01-02")),
			DataCoverage: ptr("complete"),
		},
		Website:  g.website(s, s.category.slug),
		Rankings: rk,
		Traffic: &schema.Traffic{
			IsDataFromGA: ptr(s.fromGA),
			History:      history,
			Engagement: &schema.Engagement{
				PagesPerVisit:               ptr(round(1.2+r.ExpFloat64()*2.5, 2)),
				BounceRate:                  ptr(round(0.25+r.Float64()*0.5, 4)),
				AverageVisitDurationSeconds: ptr(round(20+r.ExpFloat64()*220, 2)),
			},
			SourcesShare:   src,
			GeographyShare: geo,
			Period:         ptr(g.Month()),
		},
		SEO:         &schema.SEO{TopKeywords: keywords},
		AIReferrals: ai,
	}
}

// similarRankings is the rankings object of a similar-sites response or item.
func similarRankings(s site, r *rand.Rand) *schema.Rankings {
	cat := &schema.CategoryRank{CategorySlug: ptr(s.category.slug), Rank: ptr(s.categoryRk)}
	switch x := r.Float64(); {
	case x < 0.08:
		cat.CategorySlug = nil
	case x < 0.35:
		cat.CategorySlug = ptr(s.category.mixedSlug())
	}
	return &schema.Rankings{
		Global:   &schema.GlobalRank{Rank: s.globalRank},
		Country:  &schema.CountryRank{CountryCode: ptr(s.country), CountryName: ptr(countryName(s.country)), Rank: ptr(s.countryRk)},
		Category: cat,
	}
}

// totalVisits is the snapshot month's visits, now and then with decimal precision.
func totalVisits(s site, r *rand.Rand) *float64 {
	v := float64(s.visits)
	if r.Float64() < 0.3 {
		v = round(v+r.Float64(), 2)
	}
	return &v
}

func (g *Generator) similar(domain, requestURL string) schema.SiteSimilar {
	s := g.site(domain)
	r := g.rng("similar", domain, g.Month())
	slug := s.category.slug
	if r.Float64() < 0.3 {
		slug = s.category.mixedSlug()
	}
	w := g.website(s, slug)
	if r.Float64() < 0.45 {
		n := 1 + r.IntN(4)
		for _, i := range r.Perm(len(tagPool))[:n] {
			w.Tags = append(w.Tags, tagPool[i])
		}
	}

	items := []schema.SimilarSite{}
	if r.Float64() >= 0.04 {
		g.poolCategory(domain) // builds the pools
		pool := g.pools[s.category.slug]
		n := 3 + r.IntN(8)
		for _, i := range r.Perm(len(pool)) {
			if len(items) == n {
				break
			}
			d := pool[i]
			if d == domain {
				continue
			}
			o := g.site(d)
			or := g.rng("similar-item", d, g.Month())
			items = append(items, schema.SimilarSite{
				Domain:      d,
				Title:       ptr(o.title),
				Description: o.description,
				Rankings:    similarRankings(o, or),
				Traffic:     &schema.SimilarTraffic{TotalVisits: totalVisits(o, or)},
				Images:      g.images(d),
			})
		}
	}
	return schema.SiteSimilar{
		Status:       "success",
		Meta:         schema.SimilarMeta{Request: schema.RequestEcho{URL: requestURL}, Website: domain, DataCoverage: ptr("complete")},
		Website:      w,
		Rankings:     similarRankings(s, r),
		Traffic:      &schema.SimilarTraffic{TotalVisits: totalVisits(s, r)},
		SimilarSites: items,
	}
}

// poolCategory reports the category of a domain that belongs to a similar-sites pool; pool
// domains always have their pool's category.
func (g *Generator) poolCategory(domain string) (category, bool) {
	g.poolsOnce.Do(func() {
		g.pools = make(map[string][]string, len(categories))
		g.poolOf = make(map[string]category)
		for _, c := range categories {
			p := g.pool(c)
			g.pools[c.slug] = p
			for _, d := range p {
				if _, dup := g.poolOf[d]; !dup {
					g.poolOf[d] = c
				}
			}
		}
	})
	c, ok := g.poolOf[domain]
	return c, ok
}

// pool returns the stable pool of similar-site candidates of a category.
func (g *Generator) pool(c category) []string {
	if p, ok := g.pools[c.slug]; ok {
		return p
	}
	r := g.rng("pool", c.slug)
	out := make([]string, 0, 24)
	seen := map[string]bool{}
	for len(out) < 24 {
		d := wordsAdj[r.IntN(len(wordsAdj))] + c.word + wordsNoun[r.IntN(len(wordsNoun))] + "." + tlds[r.IntN(len(tlds))]
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

// Domains returns n distinct, valid, deterministic synthetic domains (lower case, already
// normalized). Domains(n)[i] does not depend on n.
func Domains(n int) []string {
	out := make([]string, 0, n)
	seen := make(map[string]bool, n)
	for i := 0; len(out) < n; i++ {
		a, b := wordsAdj[i%len(wordsAdj)], wordsNoun[(i/len(wordsAdj))%len(wordsNoun)]
		name := a + b
		if k := i / (len(wordsAdj) * len(wordsNoun)); k > 0 {
			name += strconv.Itoa(k)
		}
		d := name + "." + tlds[(i*7+i/3)%len(tlds)]
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

func keywordFor(r *rand.Rand, s site, i int) string {
	name := strings.ReplaceAll(s.name, "-", " ")
	if i == 0 {
		return name
	}
	t := keywordTemplates[r.IntN(len(keywordTemplates))]
	t = strings.ReplaceAll(t, "{name}", name)
	return strings.ReplaceAll(t, "{topic}", strings.ToLower(s.category.leaf()))
}

func promptFor(r *rand.Rand, s site, i int) string {
	t := promptTemplates[(i+r.IntN(len(promptTemplates)))%len(promptTemplates)]
	t = strings.ReplaceAll(t, "{domain}", s.domain)
	t = strings.ReplaceAll(t, "{topic}", strings.ToLower(s.category.leaf()))
	return t
}

func round(x float64, places int) float64 {
	p := math.Pow10(places)
	return math.Round(x*p) / p
}

func ptr[T any](v T) *T { return &v }

func titleCase(s string) string {
	words := strings.Fields(s)
	for i, w := range words {
		if w == "and" && i > 0 {
			continue
		}
		words[i] = strings.ToUpper(w[:1]) + w[1:]
	}
	return strings.Join(words, " ")
}

// topCountries are weighted picks for top countries of synthetic sites.
var topCountries = []struct {
	code   string
	weight float64
}{
	{"US", 30}, {"IN", 8}, {"GB", 6}, {"DE", 6}, {"BR", 5}, {"FR", 4}, {"JP", 4}, {"CA", 3},
	{"RU", 3}, {"ES", 3}, {"IT", 3}, {"MX", 2}, {"ID", 2}, {"NL", 2}, {"AU", 2}, {"KR", 2},
	{"PL", 2}, {"TR", 2}, {"VN", 1}, {"PH", 1}, {"SE", 1}, {"CH", 1}, {"AR", 1}, {"NG", 1},
}

var topCountriesTotal = func() float64 {
	var t float64
	for _, c := range topCountries {
		t += c.weight
	}
	return t
}()

func pickCountry(r *rand.Rand) string {
	x := r.Float64() * topCountriesTotal
	for _, c := range topCountries {
		x -= c.weight
		if x < 0 {
			return c.code
		}
	}
	return "US"
}
