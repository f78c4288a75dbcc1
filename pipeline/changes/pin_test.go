package changes

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sitewatch/pipeline/warehouse"
)

// pinSeed is the seed of the random warehouse the pin tests compare a rewritten query on:
// SITEWATCH_PIN_SEED replays one, else the clock picks it (the test logs it).
func pinSeed(t *testing.T) int64 {
	t.Helper()
	if s := os.Getenv("SITEWATCH_PIN_SEED"); s != "" {
		seed, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("SITEWATCH_PIN_SEED=%q is not a number", s)
		}
		return seed
	}
	return time.Now().UnixNano() % 1_000_000
}

// loadRandomMonths fills the warehouse with four snapshots (2026-01 to 2026-04; 2026-03 stopped
// for credits, so 2026-04 is compared with 2026-02) of n domains drawn from seed: domains
// missing from a month, NULL and zero figures, equal moves (ties), channels present in one
// month only, 26 months of traffic history per snapshot overlapping between snapshots (the
// newer snapshot wins, some of its months NULL), fetch errors and quality findings. Every
// value is a hash of the seed and the row, so a seed replays the same warehouse.
func loadRandomMonths(t *testing.T, db *sql.DB, seed int64, n int) {
	t.Helper()
	addRun(t, db, "r1", "2026-01", "complete", n, n, 0)
	addRun(t, db, "r2", "2026-02", "complete", n, n, 1)
	addRun(t, db, "r3", "2026-03", "stopped_credits", n/2, n, 2)
	addRun(t, db, "r4", "2026-04", "complete", n, n, 3)
	exec := func(q string) {
		t.Helper()
		var args []any
		if strings.Contains(q, "$1") {
			args = append(args, seed)
		}
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`CREATE TABLE pin_months AS SELECT * FROM (VALUES ('2026-01'), ('2026-02'), ('2026-03'), ('2026-04')) v(month)`)
	exec(`CREATE TABLE pin_domains AS SELECT i, 'd' || i || '.com' AS domain FROM range(` + strconv.Itoa(n) + `) r(i)`)
	exec(`CREATE TABLE pin_draws AS
		SELECT m.month, d.i, d.domain,
			(hash($1::BIGINT, m.month, d.i, 'present') % 1000) / 1000.0 AS present,
			(hash($1::BIGINT, m.month, d.i, 'visits') % 1000) / 1000.0 AS visits,
			(hash($1::BIGINT, m.month, d.i, 'rank') % 1000) / 1000.0 AS rank,
			(hash($1::BIGINT, m.month, d.i, 'ai') % 1000) / 1000.0 AS ai,
			(hash($1::BIGINT, m.month, d.i, 'share') % 1000) / 1000.0 AS share
		FROM pin_months m, pin_domains d`)
	// Sizes on a Zipf-like curve, moved a few percent a month; some months much more, some
	// domains at 0 or without a figure; ranks and AI figures with ties (a coarse grid).
	exec(`INSERT INTO sites (snapshot_month, domain, traffic_period, snapshot_date, total_visits, global_rank,
			ai_total_visits, ai_global_traffic_share)
		SELECT month, domain, month, CAST(month || '-01' AS DATE),
			CASE WHEN visits < 0.05 THEN NULL WHEN visits < 0.08 THEN 0
				ELSE round(5e6 / (i + 1) * (1 + (visits - 0.5) * CASE WHEN visits > 0.95 THEN 2 ELSE 0.1 END)) END,
			CASE WHEN rank < 0.05 THEN NULL ELSE CAST(10 * (i + 1) + round(rank * 20) * 5 AS BIGINT) END,
			CASE WHEN ai < 0.1 THEN NULL WHEN ai < 0.15 THEN 0 ELSE CAST(round(ai * 50) * 100 AS BIGINT) END,
			CASE WHEN ai < 0.12 THEN NULL ELSE round(ai * 20) / 1000 END
		FROM pin_draws WHERE present >= 0.08`)
	exec(`INSERT INTO sources_share
		SELECT d.month, d.domain, c.channel,
			CASE WHEN (hash($1::BIGINT, d.month, d.i, c.channel) % 100) < 5 THEN NULL
				ELSE round(((hash($1::BIGINT, d.month, d.i, c.channel, 'v') % 1000) / 1000.0) * 40) / 100 END
		FROM pin_draws d, (VALUES ('direct'), ('organic_search'), ('referral'), ('paid_search')) c(channel)
		WHERE d.present >= 0.08 AND (hash($1::BIGINT, d.month, d.i, c.channel, 'p') % 100) >= 10`)
	// 26 calendar months per snapshot up to its own month; each domain a usual swing of its own;
	// the newest snapshot re-estimates the months the older one holds.
	exec(`INSERT INTO traffic_history
		SELECT d.month, d.domain, CAST(CAST(d.month || '-01' AS DATE) - INTERVAL (k) MONTH AS DATE),
			CASE WHEN (hash($1::BIGINT, d.month, d.i, k, 'null') % 100) < 3 THEN NULL
				WHEN (hash($1::BIGINT, d.month, d.i, k, 'zero') % 100) < 2 THEN 0
				ELSE CAST(round(5e6 / (d.i + 1) * exp(((hash($1::BIGINT, d.i, strftime(CAST(d.month || '-01' AS DATE) - INTERVAL (k) MONTH, '%Y-%m'), 'h') % 1000) / 1000.0 - 0.5)
					* CASE WHEN d.i % 7 = 0 THEN 0.8 ELSE 0.06 END
					* CASE WHEN k = 0 AND d.visits > 0.9 THEN 12 ELSE 1 END)
					* (1 + (CAST(hash($1::BIGINT, d.month, d.i, k, 're') % 100 AS INTEGER) - 50) / 5000.0)) AS BIGINT) END
		FROM pin_draws d, range(26) r(k)
		WHERE d.present >= 0.08`)
	exec(`INSERT INTO fetch_errors
		SELECT 'r' || (row_number() OVER ()), month, domain, 'traffic', CASE WHEN share < 0.5 THEN 400 ELSE 503 END,
			CASE WHEN share < 0.3 THEN 'bad_domain' END, 'failed', TIMESTAMP '2026-05-01 00:00:00' + INTERVAL (i) SECOND
		FROM pin_draws WHERE present < 0.08 AND share < 0.8`)
	exec(`INSERT INTO quality_checks
		SELECT month, CASE WHEN rank < 0.5 THEN 'visits_jump' ELSE 'share_range' END, 'sites', domain, 'x', 'y',
			CASE WHEN share < 0.5 THEN 'error' WHEN share < 0.8 THEN 'warn' ELSE 'ok' END, NULL, TIMESTAMP '2026-05-02 00:00:00'
		FROM pin_draws WHERE present >= 0.08 AND (hash($1::BIGINT, month, i, 'q') % 100) < 4`)
}

// defineBefore creates the macro of testdata/file, the query as it was before a rewrite.
func defineBefore(t *testing.T, db *sql.DB, file string) {
	t.Helper()
	text, err := os.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(string(text)); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// sameRows fails unless before and after return the same rows, as many times each. Each query
// runs once, into a temporary table on one connection: the macros' planning dominates at these
// sizes, and comparing the two queries' text twice each cost the package half its time.
func sameRows(t *testing.T, db *sql.DB, name, before, after string) {
	t.Helper()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []struct{ table, query string }{{"pin_before_rows", before}, {"pin_after_rows", after}} {
		if _, err := conn.ExecContext(ctx, `CREATE OR REPLACE TEMP TABLE `+q.table+` AS `+q.query); err != nil {
			t.Fatalf("%s (%s): %v", name, q.table, err)
		}
	}
	defer conn.ExecContext(ctx, `DROP TABLE IF EXISTS pin_before_rows; DROP TABLE IF EXISTS pin_after_rows`) //nolint:errcheck // temporary tables of this connection
	var n int
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM pin_before_rows`).Scan(&n); err != nil {
		t.Fatalf("%s before: %v", name, err)
	}
	if n == 0 {
		t.Fatalf("%s: no rows before: the fixture does not exercise it", name)
	}
	for _, q := range []struct{ label, a, b string }{{"only before", "pin_before_rows", "pin_after_rows"}, {"only after", "pin_after_rows", "pin_before_rows"}} {
		diff := rows(t, conn, `SELECT * FROM (FROM `+q.a+` EXCEPT ALL FROM `+q.b+`) LIMIT 5`)
		if len(diff) > 0 {
			t.Errorf("%s: %d rows before; rows %s:\n%v", name, n, q.label, diff)
		}
	}
	t.Logf("%s: %d rows, the same before and after", name, n)
}

// TestMoversSameAsBefore pins the rewritten changes_movers_in (one join of the two months'
// sites rows, one of their channel shares) and the digest's read of the month's largest moves
// to the rows they returned before, on a random warehouse.
func TestMoversSameAsBefore(t *testing.T) {
	seed := pinSeed(t)
	t.Logf("seed %d (SITEWATCH_PIN_SEED=%d replays it)", seed, seed)
	db := openWarehouse(t).DB()
	loadRandomMonths(t, db, seed, 400)
	defineBefore(t, db, "movers_before.sql")
	for _, against := range []string{"NULL", "'2026-01'"} {
		sameRows(t, db, "changes_movers_in(against := "+against+")",
			`SELECT * FROM changes_movers_before(against := `+against+`)`,
			`SELECT * FROM changes_movers_in(against := `+against+`)`)
		sameRows(t, db, "the digest's movers of 2026-04 against "+against,
			`SELECT domain, metric, coalesce(channel, ''), previous_value, current_value, change, change_ratio, improved,
				row_number() OVER (PARTITION BY metric ORDER BY mover_rank) AS r
			FROM changes_movers_before(against := `+against+`) WHERE snapshot_month = '2026-04' AND change <> 0 QUALIFY r <= 5`,
			strings.NewReplacer("$1", against, "$2", "'2026-04'").Replace(moversSQL))
	}
}

// TestAttentionSameAsBefore pins needs_attention_all, its history step rewritten (the
// snapshots hash-joined, consecutive months by a window, the month's domains picked last), to
// the rows it returned before on a random warehouse: every month and one, the default settings
// and looser ones that list more.
//
// It pins each way the visits step and the watchlist's medians are read: computed at the read
// (the cache empty), from attention_visit_steps and attention_month_stats after
// RefreshAttention, and computed again once an UPDATE of one history row, then of one channel
// share, has made the cache stale (the cache must never change a row).
func TestAttentionSameAsBefore(t *testing.T) {
	seed := pinSeed(t)
	t.Logf("seed %d (SITEWATCH_PIN_SEED=%d replays it)", seed, seed)
	w := openWarehouse(t, warehouse.AttentionListSettings{MinVisits: 1000, Threshold: 2})
	db := w.DB()
	loadRandomMonths(t, db, seed, 400)
	defineBefore(t, db, "attention_before.sql")
	complete := []string{"2026-01", "2026-02", "2026-04"}
	refresh := func() {
		if err := w.RefreshAttention(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	listArgs := []string{"NULL, NULL", "1000, 2"} // both stored settings, every month: what the list-only steps change
	steps := []struct {
		name        string
		change      func()
		cached      []string // months of attention_visit_steps read
		statsCached []string // months of attention_month_stats read
		listed      []string // months of attention_lists read (both settings stored)
		args        []string // needs_attention_all's arguments compared (nil: every set)
	}{
		{"computed at the read", func() {}, nil, nil, nil, nil},
		{"from the cache", refresh, complete, complete, complete, nil},
		{"stale cache", func() {
			mustExec(t, db, `UPDATE traffic_history SET visits = visits + 1
				WHERE (snapshot_month, domain, month) = (SELECT (snapshot_month, domain, month) FROM traffic_history
					WHERE snapshot_month = '2026-02' AND visits > 0 ORDER BY domain, month LIMIT 1)`)
		}, []string{"2026-01"}, complete, []string{"2026-01"}, nil},
		// 2026-02 is its own month's and 2026-04's previous complete month
		{"stale watchlist figures", func() {
			mustExec(t, db, `UPDATE sources_share SET share = share / 2
				WHERE (snapshot_month, domain, channel) = (SELECT (snapshot_month, domain, channel) FROM sources_share
					WHERE snapshot_month = '2026-02' AND share > 0 ORDER BY domain, channel LIMIT 1)`)
		}, []string{"2026-01"}, []string{"2026-01"}, []string{"2026-01"}, nil},
		{"stored again", refresh, complete, complete, complete, listArgs},
		// what only the list reads: a month's quality findings, its fetch errors, a site's visits
		{"stale list: a quality finding", func() {
			mustExec(t, db, `INSERT INTO quality_checks (snapshot_month, "check", table_name, domain, observed, expected, severity, observed_value, checked_at)
				SELECT '2026-04', 'share_range', 'sources_share', min(domain), '1.5', '0-1', 'error', 1.5, TIMESTAMP '2026-05-01' FROM sites WHERE snapshot_month = '2026-04'`)
		}, complete, complete, []string{"2026-01", "2026-02"}, listArgs},
		{"stale list: a fetch error", func() {
			mustExec(t, db, `UPDATE fetch_errors SET code = 'changed' WHERE snapshot_month = '2026-02'`)
			mustExec(t, db, `INSERT INTO fetch_errors (run_id, snapshot_month, domain, endpoint, http_status, code, message, occurred_at)
				VALUES ('r', '2026-02', 'gone.example', 'overview', 400, 'invalid_domain', 'x', TIMESTAMP '2026-03-01')`)
		}, complete, complete, []string{"2026-01"}, listArgs},
		{"stale list: a site's visits", func() {
			mustExec(t, db, `UPDATE sites SET total_visits = 0 WHERE (snapshot_month, domain) =
				(SELECT (snapshot_month, domain) FROM sites WHERE snapshot_month = '2026-01' AND total_visits > 0 ORDER BY domain LIMIT 1)`)
		}, complete, complete, nil, listArgs},
		{"stored again after them", refresh, complete, complete, complete, listArgs},
		{"other definitions", func() {
			mustExec(t, db, `CREATE OR REPLACE MACRO attention_definition() AS 'another sitewatch'`)
		}, complete, complete, nil, listArgs},
	}
	for _, st := range steps {
		st.change()
		if got := rows(t, db, `SELECT snapshot_month FROM attention_visit_months() WHERE cached ORDER BY 1`); strings.Join(got, ",") != strings.Join(st.cached, ",") {
			t.Fatalf("%s: months read from the cache %v, want %v", st.name, got, st.cached)
		}
		if got := rows(t, db, `SELECT snapshot_month FROM attention_stat_months() WHERE cached ORDER BY 1`); strings.Join(got, ",") != strings.Join(st.statsCached, ",") {
			t.Fatalf("%s: months whose watchlist figures are read from the cache %v, want %v", st.name, got, st.statsCached)
		}
		for _, settings := range []string{"10000, 3", "1000, 2"} {
			if got := rows(t, db, `SELECT snapshot_month FROM attention_list_months(`+settings+`) WHERE stored ORDER BY 1`); strings.Join(got, ",") != strings.Join(st.listed, ",") {
				t.Fatalf("%s: months whose list (%s) is read stored %v, want %v", st.name, settings, got, st.listed)
			}
		}
		args := st.args
		if args == nil {
			args = []string{"NULL, NULL", "1000, 2", "1000, 2, only_month := '2026-04'", "NULL, NULL, only_month := '2026-02'", "5000, 4"}
		}
		for _, args := range args {
			sameRows(t, db, st.name+": needs_attention_all("+args+")",
				`SELECT * FROM needs_attention_all_before(`+args+`)`, `SELECT * FROM needs_attention_all(`+args+`)`)
		}
	}
}

func mustExec(t *testing.T, db *sql.DB, q string) {
	t.Helper()
	if _, err := db.Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// TestAttentionOneDomain checks only_domain against the whole list: a listed domain gets its
// rows (rank and domain_rank NULL), an unlisted one none.
func TestAttentionOneDomain(t *testing.T) {
	seed := pinSeed(t)
	t.Logf("seed %d (SITEWATCH_PIN_SEED=%d replays it)", seed, seed)
	w := openWarehouse(t, warehouse.AttentionListSettings{MinVisits: 1000, Threshold: 2})
	db := w.DB()
	loadRandomMonths(t, db, seed, 200)
	oneDomainSameAsList(t, db)
	if err := w.RefreshAttention(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := rows(t, db, `SELECT snapshot_month FROM attention_list_months(1000, 2, only_month := '2026-04') WHERE stored`); len(got) != 1 {
		t.Fatalf("2026-04's list (1000, 2) is not stored after RefreshAttention")
	}
	t.Log("again with the visits step, the watchlist's medians and the whole list read stored")
	oneDomainSameAsList(t, db)
}

func oneDomainSameAsList(t *testing.T, db *sql.DB) {
	t.Helper()
	listed := rows(t, db, `SELECT DISTINCT domain FROM needs_attention_all(1000, 2, only_month := '2026-04') ORDER BY domain LIMIT 6`)
	unlisted := rows(t, db, `SELECT domain FROM sites WHERE snapshot_month = '2026-04'
		AND domain NOT IN (SELECT domain FROM needs_attention_all(1000, 2, only_month := '2026-04')) ORDER BY domain LIMIT 3`)
	if len(listed) == 0 || len(unlisted) == 0 {
		t.Fatalf("the fixture lists %d domains and leaves out %d: it must do both", len(listed), len(unlisted))
	}
	// The whole list once, into a temporary table of one connection; each domain's query once.
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `CREATE OR REPLACE TEMP TABLE pin_whole_list AS
		SELECT * REPLACE (NULL::BIGINT AS rank, NULL::BIGINT AS domain_rank) FROM needs_attention_all(1000, 2, only_month := '2026-04')`); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(ctx, `DROP TABLE IF EXISTS pin_whole_list; DROP TABLE IF EXISTS pin_one_domain`) //nolint:errcheck // temporary tables of this connection
	for _, d := range append(listed, unlisted...) {
		one := `SELECT * FROM needs_attention_all(1000, 2, only_month := '2026-04', only_domain := '` + d + `')`
		if _, err := conn.ExecContext(ctx, `CREATE OR REPLACE TEMP TABLE pin_one_domain AS `+one); err != nil {
			t.Fatalf("%s: %v", one, err)
		}
		whole := `FROM pin_whole_list WHERE domain = '` + d + `'`
		for _, q := range [][2]string{{whole, `FROM pin_one_domain`}, {`FROM pin_one_domain`, whole}} {
			if diff := rows(t, conn, `SELECT * FROM ((`+q[0]+`) EXCEPT ALL (`+q[1]+`))`); len(diff) > 0 {
				t.Errorf("%s: rows of one query only:\n%v", d, diff)
			}
		}
	}
}

// loadRandomLists adds to loadRandomMonths' warehouse each domain's lists drawn from seed:
// similar sites, keywords, AI platforms and visitor countries, picked per month from small
// pools so that entries stay, appear and drop out; some spelled with another case, a www. or
// a trailing dot (one competitor or keyword twice in a list), with ties of share and NULL
// figures. Each draw hashes one string: hash() of several values repeats their parity.
func loadRandomLists(t *testing.T, db *sql.DB, seed int64) {
	t.Helper()
	for _, q := range []string{
		`INSERT INTO similar_sites (snapshot_month, domain, position, similar_domain, global_rank, total_visits)
		SELECT month, domain, CAST(row_number() OVER (PARTITION BY month, domain ORDER BY k) AS INTEGER),
			CASE hash(concat_ws('/', $1::BIGINT, month, i, k, 'spell')) % 10 WHEN 0 THEN 'WWW.C' || k || '.com' WHEN 1 THEN 'c' || k || '.com.' ELSE 'c' || k || '.com' END,
			CASE WHEN hash(concat_ws('/', $1::BIGINT, month, i, k, 'rn')) % 10 = 0 THEN NULL ELSE CAST(hash(concat_ws('/', $1::BIGINT, month, i, k, 'r')) % 5000 AS BIGINT) END,
			CASE WHEN hash(concat_ws('/', $1::BIGINT, month, i, k, 'vn')) % 10 = 0 THEN NULL ELSE CAST(hash(concat_ws('/', $1::BIGINT, month, i, k, 'v')) % 90000 AS DOUBLE) END
		FROM pin_draws, range(12) r(k)
		WHERE present >= 0.08 AND hash(concat_ws('/', $1::BIGINT, month, i, k, 'in')) % 3 = 0`,
		// a competitor listed twice, once as www.: the first listing's figures count
		`INSERT INTO similar_sites (snapshot_month, domain, position, similar_domain, global_rank, total_visits)
		SELECT snapshot_month, domain, CAST(position + 20 AS INTEGER), 'www.' || lower(rtrim(similar_domain, '.')), global_rank + 1, total_visits + 1
		FROM similar_sites WHERE hash(concat_ws('/', $1::BIGINT, snapshot_month, domain, position, 'twice')) % 7 = 0`,
		`INSERT INTO keywords (snapshot_month, domain, position, keyword, search_volume, estimated_value_usd)
		SELECT month, domain, CAST(row_number() OVER (PARTITION BY month, domain ORDER BY k) AS INTEGER),
			CASE WHEN hash(concat_ws('/', $1::BIGINT, month, i, k, 'case')) % 5 = 0 THEN 'Keyword ' || k || ' ' ELSE 'keyword ' || k END,
			CASE WHEN hash(concat_ws('/', $1::BIGINT, month, i, k, 'sn')) % 10 = 0 THEN NULL ELSE CAST(hash(concat_ws('/', $1::BIGINT, month, i, k, 's')) % 9000 AS BIGINT) END,
			CASE WHEN hash(concat_ws('/', $1::BIGINT, month, i, k, 'en')) % 10 = 0 THEN NULL ELSE (hash(concat_ws('/', $1::BIGINT, month, i, k, 'e')) % 900) / 10.0 END
		FROM pin_draws, range(10) r(k)
		WHERE present >= 0.08 AND hash(concat_ws('/', $1::BIGINT, month, i, k, 'in')) % 2 = 0`,
		`INSERT INTO keywords (snapshot_month, domain, position, keyword, search_volume, estimated_value_usd)
		SELECT snapshot_month, domain, position + 20, upper(keyword), search_volume, estimated_value_usd
		FROM keywords WHERE hash(concat_ws('/', $1::BIGINT, snapshot_month, domain, position, 'twice')) % 9 = 0`,
		`INSERT INTO ai_platforms (snapshot_month, domain, platform, rank, share_pct)
		SELECT month, domain, CASE WHEN hash(concat_ws('/', $1::BIGINT, month, i, p, 'case')) % 6 = 0 THEN ' ChatGPT.com' ELSE platform END,
			CASE WHEN hash(concat_ws('/', $1::BIGINT, month, i, p, 'rn')) % 8 = 0 THEN NULL ELSE row_number() OVER (PARTITION BY month, domain ORDER BY p) END,
			CASE WHEN hash(concat_ws('/', $1::BIGINT, month, i, p, 'sn')) % 8 = 0 THEN NULL ELSE (hash(concat_ws('/', $1::BIGINT, month, i, p, 's')) % 1000) / 10.0 END
		FROM pin_draws, (VALUES (0, 'chatgpt.com'), (1, 'perplexity.ai'), (2, 'gemini.google.com'), (3, 'claude.ai'), (4, 'copilot.microsoft.com')) v(p, platform)
		WHERE present >= 0.08 AND hash(concat_ws('/', $1::BIGINT, month, i, p, 'in')) % 2 = 0`,
		`INSERT INTO geography_share (snapshot_month, domain, country_code, share)
		SELECT month, domain, CASE WHEN hash(concat_ws('/', $1::BIGINT, month, i, c, 'case')) % 9 = 0 THEN lower(code) ELSE code END,
			CASE WHEN hash(concat_ws('/', $1::BIGINT, month, i, c, 'n')) % 15 = 0 THEN NULL ELSE round((hash(concat_ws('/', $1::BIGINT, month, i, c, 's')) % 20) / 40.0, 3) END
		FROM pin_draws, (VALUES (0, 'US'), (1, 'DE'), (2, 'FR'), (3, 'GB'), (4, 'IN'), (5, 'BR'), (6, 'JP'), (7, 'XK'), (8, 'CA')) v(c, code)
		WHERE present >= 0.08 AND hash(concat_ws('/', $1::BIGINT, month, i, c, 'in')) % 3 <> 0`,
	} {
		if _, err := db.Exec(q, seed); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// TestListsSameAsBefore pins the rewritten lists of changes (competitors, AI platforms,
// keywords: one grouping of both months' rows instead of NOT EXISTS each way; countries: the
// compared months only) and the digest's reads of one month to the rows the macros returned
// before (testdata/lists_before.sql), on a random warehouse: every pair, --against, one month.
func TestListsSameAsBefore(t *testing.T) {
	seed := pinSeed(t)
	t.Logf("seed %d (SITEWATCH_PIN_SEED=%d replays it)", seed, seed)
	db := openWarehouse(t).DB()
	loadRandomMonths(t, db, seed, 300)
	loadRandomLists(t, db, seed)
	defineBefore(t, db, "lists_before.sql")
	for _, list := range []string{"changes_competitors", "changes_ai_platforms", "changes_keywords", "changes_top_countries"} {
		for _, against := range []string{"NULL", "'2026-01'"} {
			before := list + `_before(against := ` + against + `)`
			sameRows(t, db, list+"_in(against := "+against+")", `SELECT * FROM `+before, `SELECT * FROM `+list+`_in(against := `+against+`)`)
			sameRows(t, db, list+" of 2026-04 against "+against,
				`SELECT * FROM `+before+` WHERE snapshot_month = '2026-04'`,
				`SELECT * FROM `+list+`_in(against := `+against+`, for_month := '2026-04')`)
		}
		sameRows(t, db, "the view "+list, `SELECT * FROM `+list+`_before()`, `SELECT * FROM `+list)
	}
}

// largestFallsBefore is largestFallsSQL before it read the two months' history itself: through
// traffic_monthly, the month's domains a semi-join on (month, domain).
const largestFallsBefore = `SELECT t.domain, round(t.visits), round(t.prev_month_visits),
		100 * (t.visits / t.prev_month_visits - 1), round(t.prev_month_visits - t.visits)
	FROM traffic_monthly t
	SEMI JOIN sites s ON s.snapshot_month = ? AND s.domain = t.domain
	WHERE t.month = CAST(? || '-01' AS DATE) AND t.prev_month_visits >= ? AND t.visits < t.prev_month_visits
	ORDER BY t.visits / t.prev_month_visits, t.prev_month_visits - t.visits DESC, t.domain
	LIMIT ?`

// TestLargestFallsSameAsBefore pins largestFallsSQL to the rows, in order, of the query it
// replaced, on a random warehouse (history re-estimated by the newer snapshot, NULL and zero
// months): each month, floors that keep most, some and none, short and whole lists.
func TestLargestFallsSameAsBefore(t *testing.T) {
	seed := pinSeed(t)
	t.Logf("seed %d (SITEWATCH_PIN_SEED=%d replays it)", seed, seed)
	db := openWarehouse(t).DB()
	loadRandomMonths(t, db, seed, 400)
	listed := 0
	for _, month := range []string{"2026-01", "2026-02", "2026-03", "2026-04", "2026-05"} {
		for _, floor := range []int64{1, 10_000, 1_000_000, 1 << 40} {
			for _, n := range []int{5, 1000} {
				before := rows(t, db, largestFallsBefore, month, month, floor, n)
				after := rows(t, db, largestFallsSQL, month, floor, n)
				if !slices.Equal(before, after) {
					t.Errorf("%s floor %d top %d: before %d rows, after %d:\nbefore %v\nafter  %v", month, floor, n, len(before), len(after), before, after)
				}
				listed += len(before)
			}
		}
	}
	if listed == 0 {
		t.Fatal("no falls before: the fixture does not exercise the query")
	}
	t.Logf("%d rows, the same before and after", listed)
}

// TestDiscoverSameAsBefore pins discover_candidates_in (the worth-tracking list), its names
// cleaned without a regular expression and its per-month step materialized, to the rows it
// returned before (testdata/discover_before.sql) on a random warehouse: every month, the
// default floor, none and a high one.
func TestDiscoverSameAsBefore(t *testing.T) {
	seed := pinSeed(t)
	t.Logf("seed %d (SITEWATCH_PIN_SEED=%d replays it)", seed, seed)
	db := openWarehouse(t).DB()
	loadRandomMonths(t, db, seed, 300)
	loadRandomLists(t, db, seed)
	defineBefore(t, db, "discover_before.sql")
	for _, floor := range []string{"NULL", "0", "60000"} {
		sameRows(t, db, "discover_candidates_in(min_visits := "+floor+")",
			`SELECT * FROM discover_candidates_before(min_visits := `+floor+`)`, `SELECT * FROM discover_candidates_in(min_visits := `+floor+`)`)
	}
}

// TestAttentionReadStoredSameAsComputed holds the Go readers to the same lists whether a
// month's list is computed or read from attention_lists: ReadAttention of each month (whole
// and one domain) and ReadDomain of listed and unlisted domains, with the defaults and with
// other settings the writer stores.
func TestAttentionReadStoredSameAsComputed(t *testing.T) {
	seed := pinSeed(t)
	t.Logf("seed %d (SITEWATCH_PIN_SEED=%d replays it)", seed, seed)
	ctx := context.Background()
	w := openWarehouse(t, warehouse.AttentionListSettings{MinVisits: 1000, Threshold: 2})
	db := w.DB()
	loadRandomMonths(t, db, seed, 200)
	listed := rows(t, db, `SELECT DISTINCT domain FROM needs_attention_all(1000, 2, only_month := '2026-04') ORDER BY domain LIMIT 2`)
	unlisted := rows(t, db, `SELECT domain FROM sites WHERE snapshot_month = '2026-04'
		AND domain NOT IN (SELECT domain FROM needs_attention_all(1000, 2)) ORDER BY domain LIMIT 1`)
	if len(listed) == 0 || len(unlisted) == 0 {
		t.Fatalf("the fixture lists %d domains and leaves out %d: it must do both", len(listed), len(unlisted))
	}
	settings := []AttentionSettings{{}, {MinVisits: 1000, Threshold: 2}}
	// current: read as a reader whose file's mark says the stored lists are current (no
	// checksums); the Settings the lists carry are compared without that flag.
	read := func(current bool) []any {
		var out []any
		for _, s := range settings {
			s.StoredCurrent = current
			for _, m := range []string{"", "2026-02"} { // "": the latest, 2026-04
				a, err := ReadAttention(ctx, db, m, s)
				if err != nil {
					t.Fatal(err)
				}
				a.Settings.StoredCurrent = false
				out = append(out, a)
				for _, d := range append(listed, unlisted...) {
					a, err := ReadDomainAttention(ctx, db, m, d, s)
					if err != nil {
						t.Fatal(err)
					}
					a.Settings.StoredCurrent = false
					out = append(out, a)
				}
			}
			for _, d := range append(listed, unlisted...) {
				v, err := ReadDomain(ctx, db, d, s)
				if err != nil {
					t.Fatal(err)
				}
				if v.Attention != nil {
					v.Attention.Settings.StoredCurrent = false
				}
				for i := range v.Flagged {
					v.Flagged[i].Settings.StoredCurrent = false
				}
				out = append(out, v.Attention, v.Flagged)
			}
		}
		return out
	}
	computed := read(false)
	if err := w.RefreshAttention(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rows(t, db, `SELECT snapshot_month FROM attention_list_months(1000, 2) WHERE stored`); len(got) != 3 {
		t.Fatalf("months whose list (1000, 2) is stored: %v, want the 3 complete months", got)
	}
	for _, current := range []bool{false, true} {
		stored := read(current)
		for i := range computed {
			if !reflect.DeepEqual(computed[i], stored[i]) {
				t.Errorf("read %d (stored lists taken as current: %v) differs: computed %s, stored %s", i, current, jsonText(computed[i]), jsonText(stored[i]))
			}
		}
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
