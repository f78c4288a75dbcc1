// Package attentiontest loads a fixed warehouse dataset whose needs-attention list is known,
// so the view (sql/views/needs_attention.sql) and every surface that leads with it (`sitewatch
// changes` in its three formats, `show`, the report, the webhook, /metrics) are tested against
// the same expectations. Planted: a domain falling to 0 (vanished.com), a 35 % fall
// (faller.com), a giant moving within its usual ± (giant.com), and a quiet month (Quiet) with
// nothing unusual.
package attentiontest

import (
	"database/sql"
	"fmt"
	"math"
	"testing"
	"time"
)

// Month is the fixture's latest complete month; Previous the complete month before it, and
// Earlier the one before that. Quiet (= Previous) is a complete month compared with Earlier in
// which nothing is unusual: its list is empty.
const (
	Month    = "2026-10"
	Previous = "2026-09"
	Earlier  = "2026-08"
	Quiet    = Previous
)

// Expected is the needs-attention list of Month with the default settings: domain and reason
// kind in list order (the view's rank).
var Expected = []struct{ Domain, Kind string }{
	{"vanished.com", "vanished"},     // 800,000 visits -> 0: the loudest row
	{"aifall.com", "ai_visits_fell"}, // AI-referred visits 100,000 -> 20,000; the others move a few percent
	{"faller.com", "visits_fell"},    // -35 %, its months usually ±3 %
	{"ranker.com", "rank_lost"},      // rank #1,000 -> #2,000; the others move a few percent
	{"chan.com", "top_channel_fell"}, // organic search 60 % -> 35 %; the others move a point
	{"riser.com", "visits_rose"},     // +25 %, its months usually ±3 %
	{"gone.com", "data_missing"},     // in 2026-09, rejected (400) in 2026-10
	{"novisits.com", "data_missing"}, // loaded in 2026-10 without a visits figure
	{"failed.com", "quality_failed"}, // an error finding of quality_checks
}

// WorthTracking is the month's candidates not on the watchlist at or above the default size
// floor (discover_candidates), best first: never rows of needs_attention.
var WorthTracking = []string{"rising.net", "static.net"}

// FallerReason is the words of faller.com's row.
const FallerReason = "fell 35.0% (2.00M → 1.30M visits) — its months usually move ±3.0%"

// VanishedReason is the words of vanished.com's row.
const VanishedReason = "vanished: 0 visits this month, 800k the month before"

// Out lists domains that must stay out with the defaults, each with why.
var Out = map[string]string{
	"giant.com":   "a giant with a usual month: −1.5 % where its months move ±0.5 %, within the ±2 % floor of a swing",
	"swingy.com":  "a small domain with a large but normal swing: −35 % where its months move ±40 %",
	"tiny.com":    "−30 % where its months move ±3 %, but 2,000 visits: below the 10,000 floor",
	"steady1.com": "nothing unusual", "steady2.com": "nothing unusual", "steady3.com": "nothing unusual",
	"steady4.com":  "nothing unusual",
	"static.net":   "a candidate, not on the watchlist: worth tracking, never needs attention",
	"rising.net":   "a rising candidate, not on the watchlist: worth tracking, never needs attention",
	"smallnew.net": "a candidate new this month, but 2,000 visits: below the size floor",
}

// TinyWithFloor1000 is the row tiny.com gets once the floor is 1,000 visits.
const TinyWithFloor1000 = "visits_fell"

type domain struct {
	name    string
	visits  float64   // visits of Previous (the month before Month)
	past    []float64 // 11 log changes of the months before Previous, oldest first
	current float64   // log change of Month against Previous
	rank    [2]int64  // global rank in Previous (and Earlier), Month
	ai      [2]int64  // AI-referred visits in Previous (and Earlier), Month
	organic [2]float64
}

// usual is a pattern of 11 monthly log changes whose median is 0 and whose 1.4826 × MAD is
// ln(1 + swing): the domain's months usually move ±swing.
func usual(swing float64) []float64 {
	d := math.Log1p(swing) / 1.4826
	return []float64{0, d, -d, d, -d, 0, d, -d, 0, d, -d}
}

func domains() []domain {
	return []domain{
		{"giant.com", 1e9, usual(0.005), math.Log(0.985), [2]int64{1, 1}, [2]int64{5e6, 5.1e6}, [2]float64{0.40, 0.405}},
		{"swingy.com", 50000, usual(0.40), math.Log(0.65), [2]int64{90000, 93000}, [2]int64{500, 480}, [2]float64{0.30, 0.31}},
		{"faller.com", 2e6, usual(0.03), math.Log(0.65), [2]int64{5000, 5100}, [2]int64{20000, 19800}, [2]float64{0.50, 0.49}},
		{"riser.com", 500000, usual(0.03), math.Log(1.25), [2]int64{20000, 19500}, [2]int64{4000, 4100}, [2]float64{0.45, 0.46}},
		{"tiny.com", 2000, usual(0.03), math.Log(0.70), [2]int64{900000, 910000}, [2]int64{0, 0}, [2]float64{0.20, 0.21}},
		{"ranker.com", 300000, usual(0.03), 0, [2]int64{1000, 2000}, [2]int64{3000, 3050}, [2]float64{0.40, 0.40}},
		{"aifall.com", 400000, usual(0.03), 0, [2]int64{15000, 15200}, [2]int64{100000, 20000}, [2]float64{0.35, 0.36}},
		{"chan.com", 600000, usual(0.03), 0, [2]int64{12000, 12100}, [2]int64{6000, 6100}, [2]float64{0.60, 0.35}},
		{"failed.com", 40000, usual(0.03), 0, [2]int64{150000, 152000}, [2]int64{400, 410}, [2]float64{0.30, 0.30}},
		{"steady1.com", 100000, usual(0.05), 0.01, [2]int64{60000, 59000}, [2]int64{1000, 1020}, [2]float64{0.30, 0.29}},
		{"steady2.com", 200000, usual(0.05), -0.015, [2]int64{40000, 41000}, [2]int64{2000, 1950}, [2]float64{0.40, 0.41}},
		{"steady3.com", 150000, usual(0.05), 0.03, [2]int64{50000, 49000}, [2]int64{1500, 1530}, [2]float64{0.25, 0.26}},
		{"steady4.com", 120000, usual(0.05), -0.01, [2]int64{55000, 56000}, [2]int64{1200, 1180}, [2]float64{0.33, 0.32}},
		{"vanished.com", 800000, usual(0.03), math.Inf(-1), [2]int64{8000, 8000}, [2]int64{3000, 0}, [2]float64{0.40, 0.40}},
	}
}

// Load inserts the fixture into a migrated, empty warehouse: three complete months, Earlier,
// Previous and Month, each snapshot with the traffic history up to its month (Previous's history
// of faller.com is half of what Month's revision says, so a merge that let the older snapshot
// win would turn its fall into a rise), plus gone.com (loaded until Previous, rejected in Month),
// novisits.com (loaded in Month without a visits figure) and failed.com's quality error.
// Previous moves nothing against Earlier: the quiet month.
func Load(t testing.TB, db *sql.DB) {
	t.Helper()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatalf("attention fixture: %s %v: %v", q, args, err)
		}
	}
	months := []string{Earlier, Previous, Month}
	start := time.Date(2026, 8, 2, 6, 0, 0, 0, time.UTC)
	for i, m := range months {
		at := start.AddDate(0, i, 0)
		rejected := 0
		if m == Month {
			rejected = 1
		}
		exec(`INSERT INTO runs (run_id, snapshot_month, started_at, finished_at, status, domains_total, domains_loaded,
			domains_rejected, requests, credits_spent, rate_limited) VALUES (?, ?, ?, ?, 'complete', 16, ?, ?, 32, 32, 0)`,
			"att-"+m, m, at, at.Add(time.Hour), 16-rejected, rejected)
	}
	monthStart := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	for _, d := range domains() {
		series := history(d)
		for i, v := range series { // 2025-10 .. 2026-10
			month := monthStart.AddDate(0, i-12, 0)
			exec(`INSERT INTO traffic_history VALUES (?, ?, ?, ?)`, Month, d.name, month, int64(math.Round(v)))
			old := v
			if d.name == "faller.com" {
				old = v / 2
			}
			if i < 12 {
				exec(`INSERT INTO traffic_history VALUES (?, ?, ?, ?)`, Previous, d.name, month, int64(math.Round(old)))
			}
			if i < 11 {
				exec(`INSERT INTO traffic_history VALUES (?, ?, ?, ?)`, Earlier, d.name, month, int64(math.Round(old)))
			}
		}
		for k, m := range months {
			i := max(k-1, 0) // Earlier and Previous share rank, AI visits and channels
			exec(`INSERT INTO sites (snapshot_month, domain, traffic_period, total_visits, global_rank, ai_total_visits) VALUES (?, ?, ?, ?, ?, ?)`,
				m, d.name, m, math.Round(series[10+k]), d.rank[i], d.ai[i])
			exec(`INSERT INTO sources_share VALUES (?, ?, 'organic_search', ?), (?, ?, 'direct', ?)`,
				m, d.name, d.organic[i], m, d.name, 1-d.organic[i])
		}
	}
	// gone.com: loaded in Earlier and Previous, rejected by the API in Month.
	exec(`INSERT INTO sites (snapshot_month, domain, traffic_period, total_visits, global_rank) VALUES (?, 'gone.com', ?, 300000, 30000), (?, 'gone.com', ?, 300000, 30000)`,
		Earlier, Earlier, Previous, Previous)
	exec(`INSERT INTO fetch_errors VALUES ('att-2026-10', ?, 'gone.com', 'overview', 400, 'invalid_domain', 'domain not found', ?)`, Month, start.AddDate(0, 2, 0))
	// novisits.com: loaded in every month, Month without a visits figure.
	exec(`INSERT INTO sites (snapshot_month, domain, traffic_period, total_visits, global_rank) VALUES (?, 'novisits.com', ?, 80000, NULL), (?, 'novisits.com', ?, 80000, NULL), (?, 'novisits.com', ?, NULL, NULL)`,
		Earlier, Earlier, Previous, Previous, Month, Month)
	similar(t, exec)
	// failed.com: a share out of range in Month.
	exec(`INSERT INTO quality_checks VALUES (?, 'share_range', 'sources_share', 'failed.com', '1.3', '0-1', 'error', 1.3, ?),
		(?, 'channel_share_sum', 'sources_share', NULL, '', '1 ± 0.02', 'ok', NULL, ?)`, Month, start, Month, start)
}

// similar loads the similar sites that make rising.net a rising candidate in Month (3
// watched domains list it, 1 did in Previous, its rank improved), static.net a static one
// (3 in both months) and smallnew.net a new one below the size floor. steady1.com, listed
// too, is on the watchlist and never a candidate.
func similar(t testing.TB, exec func(string, ...any)) {
	t.Helper()
	type listing struct {
		month, by, similar string
		position           int
		rank               int64
		visits             float64
	}
	var rows []listing
	for _, by := range []string{"steady2.com", "steady3.com", "steady4.com"} {
		rows = append(rows, listing{Previous, by, "static.net", 1, 5000, 800000}, listing{Month, by, "static.net", 1, 5000, 800000},
			listing{Month, by, "rising.net", 2, 9000, 500000}, listing{Month, by, "steady1.com", 3, 60000, 100000})
	}
	rows = append(rows, listing{Previous, "steady2.com", "rising.net", 2, 12000, 400000}, listing{Month, "faller.com", "smallnew.net", 1, 800000, 2000})
	for _, r := range rows {
		exec(`INSERT INTO similar_sites (snapshot_month, domain, position, similar_domain, title, global_rank, total_visits)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, r.month, r.by, r.position, r.similar, r.similar, r.rank, r.visits)
	}
}

// history is d's 13 monthly visits, 2025-10 .. 2026-10: the 11 past changes lead to d.visits
// in 2026-09, then d.current.
func history(d domain) []float64 {
	total := 0.0
	for _, r := range d.past {
		total += r
	}
	v := d.visits / math.Exp(total)
	out := []float64{v}
	for _, r := range d.past {
		v *= math.Exp(r)
		out = append(out, v)
	}
	out = append(out, d.visits*math.Exp(d.current))
	if len(out) != 13 {
		panic(fmt.Sprintf("attention fixture: %s has %d months of history, want 13", d.name, len(out)))
	}
	return out
}
