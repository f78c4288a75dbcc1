package report

import (
	"database/sql"
	"fmt"
	"math"
	"testing"
	"time"
)

// richDomains are 28 watchlist domains whose visits span seven orders of magnitude, with long
// names, as the demo watchlist has.
var richDomains = []string{"google.com", "youtube.com", "wikipedia.org", "bbc.co.uk", "nytimes.com",
	"theguardian.com", "booking.com", "stackoverflow.com", "github.com", "spiegel.de", "lemonde.fr",
	"xn--bcher-kva.de", "shop-alpha.com", "bravo-news.org", "charlie.io", "delta-travel.com",
	"echo-finance.net", "foxtrot.dev", "golf-outdoor.co.uk", "hotel-booking-comparison-site.com",
	"india-recipes.in", "juliet-fashion.it", "kilo-sports.es", "lima-tickets.pe", "mike-garden.nl",
	"november-books.se", "oscar-pets.ca", "papa-crafts.com.au"}

// richVisits gives domain i 20 B visits down to about 6k for the last: 6.5 orders of magnitude.
func richVisits(i int) float64 {
	return 2e10 * math.Pow(10, -6.5*float64(i)/27) * (1 + 0.1*float64(i%3))
}

// loadRich inserts snapshots 2026-01 and 2026-02 of the 28 domains: 25 months of history with
// seasonality, ten channels, countries, keywords, AI platforms, competitors (several listed by
// more than one domain, in two spellings), and a complete run for 2026-02.
func loadRich(t *testing.T, db *sql.DB) {
	t.Helper()
	chs := []string{"direct", "organic_search", "paid_search", "organic_social", "paid_social",
		"email", "referrals", "generative_ai", "affiliate", "display_ads"}
	plats := []string{"chatgpt.com", "perplexity.ai", "gemini.google.com", "copilot.microsoft.com", "claude.ai",
		"deepseek.com", "grok.com", "meta.ai", "you.com"}
	for _, snap := range []string{"2026-01", "2026-02"} {
		sm, _ := time.Parse("2006-01", snap)
		for i, d := range richDomains {
			base := richVisits(i)
			growth := 1 + 0.02*float64(i%5-2)
			if snap == "2026-01" {
				base /= growth
			}
			insert(t, db, `INSERT INTO sites (snapshot_month, domain, snapshot_date, title, category_name, is_data_from_ga, global_rank,
				traffic_period, ai_total_visits, total_visits, bounce_rate, pages_per_visit, average_visit_duration_seconds)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				[]any{snap, d, sm, "Title of " + d, "News & Media > World", i == 14, int64(math.Pow(2e10/base, 0.95)), sm.AddDate(0, -1, 0).Format("2006-01"),
					int64(base * 0.004 * float64(i%4+1)), base, 0.3 + float64(i)/100, 2.5 + float64(i%4), 95.0 + float64(i*7)})
			for m := 0; m < 25; m++ {
				month := sm.AddDate(0, -25+m, 0)
				season := 1 + 0.15*math.Sin(float64(month.Month())/12*2*math.Pi+float64(i))
				v := base * season * math.Pow(growth, float64(m-24))
				if i == 5 && m == 24 {
					v *= 3.4 // one domain tripled: the YoY bar is capped, the label is not
				}
				insert(t, db, `INSERT INTO traffic_history VALUES (?, ?, ?, ?)`, []any{snap, d, month, int64(v)})
			}
			rest := 1.0
			for c, ch := range chs {
				share := rest * (0.3 + 0.05*float64((i+c)%5))
				if c == len(chs)-1 {
					share = rest
				}
				rest -= share
				insert(t, db, `INSERT INTO sources_share VALUES (?, ?, ?, ?)`, []any{snap, d, ch, share})
			}
			for p, pl := range plats[:3+i%7] {
				insert(t, db, `INSERT INTO ai_platforms VALUES (?, ?, ?, ?, ?)`, []any{snap, d, pl, p + 1, 60.0 / float64(p+1) / 1.7})
			}
			geo := [][]any{{"US", 0.42}, {"GB", 0.11}, {"DE", 0.09}, {"FR", 0.05}, {"IN", 0.04}}
			if i%4 == 1 {
				geo = [][]any{{"DE", 0.61}, {"AT", 0.12}, {"CH", 0.08}, {"US", 0.03}, {"BR", 0.0004}}
			}
			for _, g := range geo {
				insert(t, db, `INSERT INTO geography_share VALUES (?, ?, ?, ?)`, []any{snap, d, g[0], g[1]})
			}
			for k := 0; k < 6; k++ {
				insert(t, db, `INSERT INTO keywords VALUES (?, ?, ?, ?, ?, ?, ?)`,
					[]any{snap, d, k + 1, fmt.Sprintf("%s keyword %d", d[:3], k), int64(base / 100 / float64(k+1)), 0.4 + float64(k), base / 1000 / float64(k+1)})
			}
			insert(t, db, `INSERT INTO keywords VALUES (?, ?, ?, ?, ?, ?, ?)`, []any{snap, d, 7, "weather", 5000000, 0.1, 1000.0})
			for k := 0; k < 4; k++ {
				comp := fmt.Sprintf("rival-%d-%d.com", i, k)
				switch k {
				case 0:
					comp = richDomains[(i+1)%len(richDomains)]
				case 1:
					comp = "WWW.Common-Rival.example." // listed by every domain, in another spelling
				}
				insert(t, db, `INSERT INTO similar_sites (snapshot_month, domain, position, similar_domain, global_rank, total_visits)
					VALUES (?, ?, ?, ?, ?, ?)`, []any{snap, d, k + 1, comp, 500 * (k + 1), base * (1.5 - 0.3*float64(k)) / float64(k*k*40+1)})
			}
		}
	}
	insert(t, db, `INSERT INTO countries VALUES (?, ?, ?, ?)`,
		[]any{"US", "USA", "840", "United States"}, []any{"DE", "DEU", "276", "Germany"}, []any{"FR", "FRA", "250", "France"},
		[]any{"GB", "GBR", "826", "United Kingdom"}, []any{"AT", "AUT", "040", "Austria"}, []any{"CH", "CHE", "756", "Switzerland"},
		[]any{"IN", "IND", "356", "India"}, []any{"BR", "BRA", "076", "Brazil"})
	insertRun(t, db, "2026-01", "complete", 28, 28, 0, 57, 57, 10000)
	insertRun(t, db, "2026-02", "complete", 28, 28, 0, 57, 57, 9943)
}

var runSeq int

// insertRun records a finished run of snapshot.
func insertRun(t *testing.T, db *sql.DB, snapshot, status string, total, loaded, rejected, requests, credits, remaining int) {
	t.Helper()
	runSeq++
	start := time.Date(2026, 2, 2, 6, runSeq, 0, 0, time.UTC) // each run starts after the one before
	insert(t, db, `INSERT INTO runs (run_id, snapshot_month, started_at, finished_at, status, domains_total, domains_loaded,
		domains_rejected, requests, credits_spent, credits_remaining, rate_limited, message) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		[]any{fmt.Sprintf("run-%s-%d", snapshot, runSeq), snapshot, start, start.Add(20 * time.Second), status, total, loaded, rejected, requests, credits, remaining, 3, ""})
}
