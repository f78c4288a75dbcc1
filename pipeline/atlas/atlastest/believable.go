package atlastest

import (
	"slices"
	"strings"
	"sync"
)

// What makes a synthetic domain believable to an analyst beyond the rank curve: a category
// its name suggests, the country of its country-code TLD, AI referrals for a large site, and
// distinct ranks among the known sites.

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

// famousRanks holds the known sites' global ranks of the Generator's month: on the rank curve,
// but never two alike (a site with fewer visits takes the next free place).
type famousRanks struct {
	once sync.Once
	rank map[string]int64
}

// famousRank returns a known site's global rank in the Generator's month.
func (g *Generator) famousRank(domain string) int64 {
	g.famous.once.Do(func() {
		type fv struct {
			domain string
			visits int64
		}
		all := make([]fv, 0, len(famous))
		for _, f := range famous {
			p := g.profile(f.domain)
			all = append(all, fv{f.domain, g.visits(p, g.month)})
		}
		slices.SortStableFunc(all, func(a, b fv) int { return cmpDesc(float64(a.visits), float64(b.visits)) })
		g.famous.rank = make(map[string]int64, len(all))
		prev := int64(0)
		for _, f := range all {
			r := max(rankOf(f.visits), prev+1)
			g.famous.rank[f.domain], prev = r, r
		}
	})
	return g.famous.rank[domain]
}
