package atlastest

// famousSite is one of the largest sites, with its monthly visits in the order of magnitude
// public rankings report (January 2026 as the reference month; the generator adds each
// site's own trend, seasonality and noise around it). Its global rank follows from its
// visits by the same curve as every other domain's, so the table needs no ranks.
type famousSite struct {
	domain   string
	title    string
	category string // slug of an entry of categories
	country  string // top country, ISO alpha-2
	visits   float64
}

// famous lists about sixty of the largest sites, largest first. Figures are rounded
// magnitudes, not measurements: enough for a demo to look like the web (google.com near
// #1 with tens of billions of visits, bbc.co.uk in the top 100 with hundreds of millions).
var famous = []famousSite{
	{"google.com", "Google", catSearch, "US", 85e9},
	{"youtube.com", "YouTube", catStreaming, "US", 30e9},
	{"facebook.com", "Facebook", catSocial, "US", 11e9},
	{"instagram.com", "Instagram", catSocial, "US", 6.5e9},
	{"chatgpt.com", "ChatGPT", catTech, "US", 5.5e9},
	{"wikipedia.org", "Wikipedia", catReference, "US", 4.4e9},
	{"x.com", "X", catSocial, "US", 4.2e9},
	{"whatsapp.com", "WhatsApp", catSocial, "IN", 3.6e9},
	{"reddit.com", "Reddit", catSocial, "US", 3.5e9},
	{"bing.com", "Bing", catSearch, "US", 3.3e9},
	{"yahoo.com", "Yahoo", catNews, "US", 3.2e9},
	{"baidu.com", "Baidu", catSearch, "CN", 3.0e9},
	{"yandex.ru", "Yandex", catSearch, "RU", 2.7e9},
	{"yahoo.co.jp", "Yahoo! JAPAN", catNews, "JP", 2.5e9},
	{"amazon.com", "Amazon", catMarketplace, "US", 2.4e9},
	{"tiktok.com", "TikTok", catSocial, "US", 2.2e9},
	{"netflix.com", "Netflix", catStreaming, "US", 1.5e9},
	{"linkedin.com", "LinkedIn", catSocial, "US", 1.5e9},
	{"live.com", "Outlook", catTech, "US", 1.4e9},
	{"naver.com", "NAVER", catSearch, "KR", 1.2e9},
	{"temu.com", "Temu", catMarketplace, "US", 1.1e9},
	{"microsoft.com", "Microsoft", catTech, "US", 1.0e9},
	{"pinterest.com", "Pinterest", catSocial, "US", 1.0e9},
	{"twitch.tv", "Twitch", catStreaming, "US", 1.0e9},
	{"duckduckgo.com", "DuckDuckGo", catSearch, "US", 1.0e9},
	{"vk.com", "VK", catSocial, "RU", 0.95e9},
	{"fandom.com", "Fandom", catGames, "US", 0.9e9},
	{"office.com", "Microsoft 365", catTech, "US", 0.85e9},
	{"roblox.com", "Roblox", catGames, "US", 0.7e9},
	{"weather.com", "The Weather Channel", catNews, "US", 0.65e9},
	{"apple.com", "Apple", catElectronics, "US", 0.6e9},
	{"ebay.com", "eBay", catMarketplace, "US", 0.6e9},
	{"spotify.com", "Spotify", catMusic, "US", 0.6e9},
	{"bbc.com", "BBC", catNews, "US", 0.55e9},
	{"nytimes.com", "The New York Times", catNews, "US", 0.55e9},
	{"globo.com", "Globo", catNews, "BR", 0.5e9},
	{"walmart.com", "Walmart", catMarketplace, "US", 0.5e9},
	{"aliexpress.com", "AliExpress", catMarketplace, "US", 0.5e9},
	{"booking.com", "Booking.com", catHotels, "US", 0.5e9},
	{"discord.com", "Discord", catSocial, "US", 0.5e9},
	{"canva.com", "Canva", catTech, "US", 0.5e9},
	{"imdb.com", "IMDb", catStreaming, "US", 0.5e9},
	{"cnn.com", "CNN", catNews, "US", 0.48e9},
	{"bbc.co.uk", "BBC", catNews, "GB", 0.45e9},
	{"espn.com", "ESPN", catSports, "US", 0.45e9},
	{"paypal.com", "PayPal", catBanking, "US", 0.45e9},
	{"github.com", "GitHub", catCode, "US", 0.45e9},
	{"quora.com", "Quora", catSocial, "IN", 0.45e9},
	{"openai.com", "OpenAI", catTech, "US", 0.4e9},
	{"zoom.us", "Zoom", catTech, "US", 0.4e9},
	{"indeed.com", "Indeed", catJobs, "US", 0.4e9},
	{"etsy.com", "Etsy", catMarketplace, "US", 0.4e9},
	{"ikea.com", "IKEA", catFurniture, "US", 0.3e9},
	{"samsung.com", "Samsung", catElectronics, "US", 0.3e9},
	{"tradingview.com", "TradingView", catInvesting, "US", 0.3e9},
	{"duolingo.com", "Duolingo", catEducation, "US", 0.2e9},
	{"stackoverflow.com", "Stack Overflow", catCode, "US", 0.18e9},
	{"chase.com", "Chase", catBanking, "US", 0.15e9},
	{"shopify.com", "Shopify", catMarketing, "US", 0.15e9},
	{"airbnb.com", "Airbnb", catHotels, "US", 0.12e9},
	{"mayoclinic.org", "Mayo Clinic", catHealth, "US", 0.12e9},
	{"bloomberg.com", "Bloomberg", catInvesting, "US", 0.1e9},
	{"webmd.com", "WebMD", catHealth, "US", 0.1e9},
	{"coursera.org", "Coursera", catEducation, "US", 0.08e9},
	{"allrecipes.com", "Allrecipes", catRecipes, "US", 0.06e9},
	{"autotrader.com", "Autotrader", catAuto, "US", 0.03e9},
	{"zara.com", "ZARA", catFashion, "ES", 0.07e9},
	{"goal.com", "GOAL", catSoccer, "GB", 0.06e9},
	{"hubspot.com", "HubSpot", catMarketing, "US", 0.05e9},
}

var famousByDomain = func() map[string]*famousSite {
	m := make(map[string]*famousSite, len(famous))
	for i := range famous {
		m[famous[i].domain] = &famous[i]
	}
	return m
}()

// DemoWatchlist is the watchlist of the repository's domains.yaml (the demo's), normalized:
// known sites, to which the simulator gives their public magnitudes. Tests that want a
// believable watchlist start from it; TestDemoWatchlistIsDomainsYAML keeps the two equal.
var DemoWatchlist = []string{
	"google.com", "youtube.com", "facebook.com", "wikipedia.org", "instagram.com", "reddit.com",
	"amazon.com", "x.com", "linkedin.com", "netflix.com", "github.com", "stackoverflow.com",
	"openai.com", "chatgpt.com", "bing.com", "yahoo.com", "ebay.com", "microsoft.com", "apple.com",
	"nytimes.com", "bbc.co.uk", "cnn.com", "spotify.com", "twitch.tv", "pinterest.com",
	"booking.com", "airbnb.com", "shopify.com",
}
