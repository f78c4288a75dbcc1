package atlastest

import (
	"slices"
	"sort"
	"strings"
	"sync"
)

// What makes a synthetic domain believable to an analyst beyond the rank curve: a category
// its name suggests, the country of its country-code TLD, AI referrals for a large site, and
// a global rank no other site holds that month.

// largeBase is the base visits (a month, about global rank 13,000) from which a site counts as
// large: it always has a generative_ai channel and is referred by chatgpt.com within
// largeAIDelay months of its launch.
const (
	largeBase    = 1e6
	largeAIDelay = 6
)

func (m metrics) large() bool { return m.base >= largeBase }

// nameHints map a word in a domain's first label to the category it suggests, most specific
// first ("salesforce" is marketing software, "brightmarket" a marketplace).
var nameHints = []struct {
	words []string
	slug  string
}{
	{[]string{"recipe", "cook", "food", "kitchen", "bake", "eat"}, catRecipes},
	{[]string{"sales", "crm", "seo", "ads", "marketing"}, catMarketing},
	{[]string{"bank", "pay", "card", "credit", "loan", "finance"}, catBanking},
	{[]string{"invest", "stock", "trade", "capital", "fund", "crypto"}, catInvesting},
	{[]string{"hotel", "travel", "trip", "booking", "stay", "flight"}, catHotels},
	{[]string{"learn", "edu", "school", "academy", "course", "univ"}, catEducation},
	{[]string{"health", "clinic", "med", "doctor", "care", "pharma"}, catHealth},
	{[]string{"soccer", "football", "goal"}, catSoccer},
	{[]string{"sport", "espn", "score"}, catSports},
	{[]string{"game", "play"}, catGames},
	{[]string{"job", "career", "hire", "recruit"}, catJobs},
	{[]string{"car", "auto", "motor"}, catAuto},
	{[]string{"fashion", "style", "wear", "shoe"}, catFashion},
	{[]string{"wiki", "dict", "encyclop"}, catReference},
	{[]string{"furniture", "decor", "garden", "house", "home"}, catFurniture},
	{[]string{"news", "times", "post", "herald", "journal", "tribune", "daily"}, catNews},
	{[]string{"stream", "movie", "film", "video", "watch"}, catStreaming},
	{[]string{"music", "song", "radio", "tune"}, catMusic},
	{[]string{"shop", "store", "mart", "market", "cart", "buy", "deal"}, catMarketplace},
	{[]string{"code", "dev", "git", "stack", "forge"}, catCode},
	{[]string{"search", "find"}, catSearch},
	{[]string{"social", "chat", "friend", "connect"}, catSocial},
	{[]string{"gadget", "phone", "electronic"}, catElectronics},
	{[]string{"tech", "soft", "cloud", "data", "lab", "pixel"}, catTech},
}

// categoryFromName returns the category a domain's name or TLD suggests, if any. When several
// words match, the one ending last wins: in an English compound the head comes last
// ("dailymarket" is a market, not a newspaper).
func categoryFromName(domain string) (category, bool) {
	name, _, _ := strings.Cut(domain, ".")
	best, end := "", -1
	for _, h := range nameHints {
		for _, w := range h.words {
			if i := strings.LastIndex(name, w); i >= 0 && i+len(w) > end {
				best, end = h.slug, i+len(w)
			}
		}
	}
	if best != "" {
		return categoryBySlug[best], true
	}
	switch {
	case strings.HasSuffix(domain, ".edu"):
		return categoryBySlug[catEducation], true
	case strings.HasSuffix(domain, ".dev"), strings.HasSuffix(domain, ".io"):
		return categoryBySlug[catCode], true
	case strings.HasSuffix(domain, ".shop"):
		return categoryBySlug[catMarketplace], true
	}
	return category{}, false
}

// genericTLDs are two-letter TLDs used worldwide rather than for their country.
var genericTLDs = []string{"ai", "cc", "co", "fm", "gg", "io", "ly", "me", "tv", "to", "ws", "eu"}

// ccTLDCountry returns the country of a domain's country-code TLD (bbc.co.uk -> GB, example.de
// -> DE), or false for a generic TLD.
func ccTLDCountry(domain string) (string, bool) {
	tld := domain[strings.LastIndexByte(domain, '.')+1:]
	if len(tld) != 2 || slices.Contains(genericTLDs, tld) {
		return "", false
	}
	code := strings.ToUpper(tld)
	if code == "UK" {
		code = "GB"
	}
	if countryName(code) == "" {
		return "", false
	}
	return code, true
}

// rankUniverse is how many of Domains' names share out a month's global ranks with the known
// sites: a real API ranks every site once, so two of them never hold the same place. Names
// beyond it (and any other domain) take their place on the curve after every member with more
// visits; two of those may still meet on one rank.
const rankUniverse = 5000

// rankTable holds the global ranks of one seed and month: the known sites and
// Domains(rankUniverse) by visits, each on the rank curve but after the one before it.
type rankTable struct {
	once     sync.Once
	rank     map[string]int64
	byVisits []rankedSite // most visits first
}

type rankedSite struct{ visits, rank int64 }

type rankKey struct {
	seed  int64
	month string
}

// rankTables are shared by every Generator of a seed and month (a server makes a new one
// when its month turns): the table depends on nothing else.
var rankTables sync.Map // rankKey -> *rankTable

func (g *Generator) ranks() *rankTable {
	v, _ := rankTables.LoadOrStore(rankKey{g.seed, g.month.Format("2006-01")}, &rankTable{})
	t := v.(*rankTable)
	t.once.Do(func() { t.build(g) })
	return t
}

func (t *rankTable) build(g *Generator) {
	type member struct {
		domain string
		visits int64
	}
	all := make([]member, 0, len(famous)+rankUniverse)
	for _, f := range famous {
		all = append(all, member{f.domain, g.monthVisits(f.domain)})
	}
	for _, d := range Domains(rankUniverse) {
		if _, known := famousByDomain[d]; !known {
			all = append(all, member{d, g.monthVisits(d)})
		}
	}
	slices.SortFunc(all, func(a, b member) int {
		if c := cmpDesc(float64(a.visits), float64(b.visits)); c != 0 {
			return c
		}
		return strings.Compare(a.domain, b.domain) // equal visits: a fixed order all the same
	})
	t.rank = make(map[string]int64, len(all))
	t.byVisits = make([]rankedSite, len(all))
	prev := int64(0)
	for i, m := range all {
		r := max(rankOf(m.visits), prev+1)
		t.rank[m.domain], t.byVisits[i], prev = r, rankedSite{m.visits, r}, r
	}
}

// monthVisits is domain's visits in the Generator's month, from its popularity alone.
func (g *Generator) monthVisits(domain string) int64 {
	p, _ := g.popularity(domain)
	return g.visits(p, g.month)
}

// rankFor returns the global rank of domain, which has visits in the Generator's month: a
// member's own place, else its place on the curve but after every member with as many visits
// or more, so that more visits never give a worse rank.
func (g *Generator) rankFor(domain string, visits int64) int64 {
	t := g.ranks()
	if r, ok := t.rank[domain]; ok {
		return r
	}
	i := sort.Search(len(t.byVisits), func(i int) bool { return t.byVisits[i].visits < visits })
	r := rankOf(visits)
	if i > 0 {
		r = max(r, t.byVisits[i-1].rank+1)
	}
	return r
}
