package atlastest

import (
	_ "embed"
	"encoding/json"
	"strings"
	"sync"
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
	isoList  []countryItem
	isoNames map[string]string
)

func isoCountries() []countryItem {
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

// Category slugs referred to by the table of famous sites.
const (
	catCode        = "computers_electronics_and_technology/programming_and_developer_software"
	catSearch      = "computers_electronics_and_technology/search_engines"
	catSocial      = "computers_electronics_and_technology/social_networks_and_online_communities"
	catTech        = "computers_electronics_and_technology/computers_electronics_and_technology"
	catMarketplace = "e-commerce_and_shopping/marketplace"
	catElectronics = "e-commerce_and_shopping/consumer_electronics"
	catNews        = "news_and_media/news_and_media"
	catStreaming   = "arts_and_entertainment/streaming_and_online_tv"
	catMusic       = "arts_and_entertainment/music"
	catBanking     = "finance/banking_credit_and_lending"
	catInvesting   = "finance/investing"
	catHotels      = "travel_and_tourism/accommodation_and_hotels"
	catEducation   = "science_and_education/education"
	catHealth      = "health/health_conditions_and_concerns"
	catGames       = "games/video_games_consoles_and_accessories"
	catSoccer      = "sports/soccer"
	catSports      = "sports/sports"
	catMarketing   = "business_and_consumer_services/online_marketing"
	catRecipes     = "food_and_drink/cooking_and_recipes"
	catJobs        = "jobs_and_career/jobs_and_employment"
	catAuto        = "vehicles/automotive_industry"
	catFashion     = "lifestyle/fashion_and_apparel"
	catReference   = "reference_materials/dictionaries_and_encyclopedias"
	catFurniture   = "home_and_garden/furniture"
)

var categories = []category{
	{catCode, "code", "Developer Tools"},
	{catSearch, "search", "Search the Web"},
	{catSocial, "social", "Connect and Share"},
	{catTech, "tech", "Technology News and Reviews"},
	{catMarketplace, "shop", "Buy and Sell Online"},
	{catElectronics, "gadget", "Electronics Deals"},
	{catNews, "news", "Latest News"},
	{catStreaming, "stream", "Watch Online"},
	{catMusic, "music", "Music Streaming"},
	{catBanking, "bank", "Online Banking"},
	{catInvesting, "invest", "Markets and Investing"},
	{catHotels, "stay", "Book Hotels"},
	{catEducation, "learn", "Learn Online"},
	{catHealth, "health", "Health Information"},
	{catGames, "game", "Games and Guides"},
	{catSoccer, "goal", "Football Scores"},
	{catSports, "sport", "Sports News and Scores"},
	{catMarketing, "market", "Marketing Software"},
	{catRecipes, "recipe", "Recipes and Cooking"},
	{catJobs, "job", "Find Jobs"},
	{catAuto, "auto", "Cars and Reviews"},
	{catFashion, "style", "Fashion Online"},
	{catReference, "wiki", "Free Reference"},
	{catFurniture, "home", "Furniture and Decor"},
}

var categoryBySlug = func() map[string]category {
	m := make(map[string]category, len(categories))
	for _, c := range categories {
		m[c.slug] = c
	}
	return m
}()

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
	"is {name} safe", "{name} customer service", "{topic} {year}", "cheap {topic}",
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

// aiPlatforms are real AI assistant host names with a typical weight of their referrals and
// the month from which sites start to receive referrals from them (roughly their launch).
var aiPlatforms = []struct {
	host     string
	weight   float64
	launched int // months since 2020-01
}{
	{"chatgpt.com", 60, 35}, {"perplexity.ai", 12, 41}, {"gemini.google.com", 10, 49},
	{"copilot.microsoft.com", 6, 46}, {"claude.ai", 5, 50}, {"chat.deepseek.com", 3, 60},
	{"meta.ai", 1.5, 56}, {"grok.com", 1.5, 59}, {"chat.mistral.ai", 0.5, 58}, {"you.com", 0.5, 38},
	{"poe.com", 0.8, 42}, {"chat.qwen.ai", 1, 66}, {"kimi.com", 0.5, 68}, {"manus.im", 0.5, 75},
}
