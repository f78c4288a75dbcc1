package atlastest

import (
	_ "embed"
	"encoding/json"
	"strings"
	"sync"

	"sitewatch/schema"
)

// iso3166JSON is derived from Debian's iso-codes 4.15.0
// (/usr/share/iso-codes/json/iso_3166-1.json): name, alpha_2, alpha_3 and numeric of the
// 249 entries, sorted by alpha-2. TestCountriesMatchIsoCodes re-derives it when the package
// is installed.
//
//go:embed iso3166-1.json
var iso3166JSON []byte

var (
	isoOnce  sync.Once
	isoList  []schema.Country
	isoNames map[string]string
)

func isoCountries() []schema.Country {
	isoOnce.Do(func() {
		if err := json.Unmarshal(iso3166JSON, &isoList); err != nil {
			panic("atlastest: embedded iso3166-1.json: " + err.Error())
		}
		isoNames = make(map[string]string, len(isoList))
		for _, c := range isoList {
			isoNames[c.Alpha2] = c.Name
		}
	})
	return isoList
}

func countryName(alpha2 string) string {
	isoCountries()
	return isoNames[alpha2]
}

// category is a two-level site category: slug lower case, segments joined by "/".
type category struct {
	slug    string
	word    string // a short word used in pool domain names
	tagline string // used in titles
}

func (c category) segments() []string { return strings.Split(c.slug, "/") }

// name is the display name: segments joined by " > ", words title-cased.
func (c category) name() string {
	seg := c.segments()
	for i, s := range seg {
		seg[i] = titleCase(strings.ReplaceAll(s, "_", " "))
	}
	return strings.Join(seg, " > ")
}

// leaf is the display name of the last segment.
func (c category) leaf() string {
	seg := c.segments()
	return titleCase(strings.ReplaceAll(seg[len(seg)-1], "_", " "))
}

// mixedSlug is the slug as the similar-sites operation sometimes spells it: words title-cased.
func (c category) mixedSlug() string {
	seg := c.segments()
	for i, s := range seg {
		words := strings.Split(s, "_")
		for j, w := range words {
			if w != "and" {
				words[j] = strings.ToUpper(w[:1]) + w[1:]
			}
		}
		seg[i] = strings.Join(words, "_")
	}
	return strings.Join(seg, "/")
}

var categories = []category{
	{"computers_electronics_and_technology/programming_and_developer_software", "code", "Developer Tools"},
	{"computers_electronics_and_technology/search_engines", "search", "Search the Web"},
	{"computers_electronics_and_technology/social_networks_and_online_communities", "social", "Connect and Share"},
	{"computers_electronics_and_technology/computers_electronics_and_technology", "tech", "Technology News and Reviews"},
	{"e-commerce_and_shopping/marketplace", "shop", "Buy and Sell Online"},
	{"e-commerce_and_shopping/consumer_electronics", "gadget", "Electronics Deals"},
	{"news_and_media/news_and_media", "news", "Latest News"},
	{"arts_and_entertainment/streaming_and_online_tv", "stream", "Watch Online"},
	{"arts_and_entertainment/music", "music", "Music Streaming"},
	{"finance/banking_credit_and_lending", "bank", "Online Banking"},
	{"finance/investing", "invest", "Markets and Investing"},
	{"travel_and_tourism/accommodation_and_hotels", "stay", "Book Hotels"},
	{"science_and_education/education", "learn", "Learn Online"},
	{"health/health_conditions_and_concerns", "health", "Health Information"},
	{"games/video_games_consoles_and_accessories", "game", "Games and Guides"},
	{"sports/soccer", "goal", "Football Scores"},
	{"business_and_consumer_services/online_marketing", "market", "Marketing Software"},
	{"food_and_drink/cooking_and_recipes", "recipe", "Recipes and Cooking"},
	{"jobs_and_career/jobs_and_employment", "job", "Find Jobs"},
	{"vehicles/automotive_industry", "auto", "Cars and Reviews"},
	{"lifestyle/fashion_and_apparel", "style", "Fashion Online"},
	{"reference_materials/dictionaries_and_encyclopedias", "wiki", "Free Reference"},
	{"home_and_garden/furniture", "home", "Furniture and Decor"},
}

var wordsAdj = []string{
	"bright", "swift", "blue", "green", "clever", "quiet", "bold", "golden", "silver", "happy",
	"rapid", "smart", "open", "true", "prime", "north", "urban", "wild", "pure", "daily",
	"global", "little", "grand", "simple", "fresh", "red", "lucky", "solid", "clear", "first",
	"next", "alpha", "nova", "echo", "metro", "pixel", "cloud", "sunny", "iron", "cosmic",
}

var wordsNoun = []string{
	"river", "hub", "stack", "forge", "nest", "lab", "works", "point", "base", "wave",
	"field", "path", "spark", "bridge", "garden", "harbor", "market", "peak", "studio", "trail",
	"board", "box", "cart", "deck", "dock", "gate", "grid", "house", "link", "loop",
	"map", "mind", "pod", "port", "shelf", "spot", "tower", "vault", "view", "yard",
}

var tlds = []string{"com", "com", "com", "net", "org", "io", "co", "de", "fr", "co.uk", "app", "dev", "shop", "info", "com.br", "jp"}

var descriptionTails = []string{
	"Trusted by millions of users every month.",
	"Free to use, with premium plans for teams.",
	"Independent reviews, guides and comparisons.",
	"Updated daily by a global community.",
	"Fast, secure and available worldwide.",
}

var keywordTemplates = []string{
	"{name} login", "{name} app", "{name} review", "{name} pricing", "{name} alternatives",
	"best {topic}", "{topic} online", "free {topic}", "{topic} near me", "{name} {topic}",
	"is {name} safe", "{name} customer service", "{topic} 2025", "cheap {topic}",
}

var promptTemplates = []string{
	"what is {domain}",
	"is {domain} legit",
	"best {topic} websites",
	"alternatives to {domain}",
	"compare {domain} with similar {topic} sites",
	"how do I sign up on {domain}",
	"recommend a good site for {topic}",
}

var tagPool = []string{
	"saas", "b2b", "b2c", "mobile app", "open source", "marketplace", "subscription",
	"free", "community", "news", "streaming", "ecommerce", "education", "analytics",
}

// aiPlatforms are real AI assistant host names with a typical weight of their referrals.
var aiPlatforms = []struct {
	host   string
	weight float64
}{
	{"chatgpt.com", 60}, {"perplexity.ai", 12}, {"gemini.google.com", 10},
	{"copilot.microsoft.com", 6}, {"claude.ai", 5}, {"chat.deepseek.com", 3},
	{"meta.ai", 1.5}, {"grok.com", 1.5}, {"chat.mistral.ai", 0.5}, {"you.com", 0.5},
}
