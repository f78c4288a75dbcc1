package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sitewatch/pipeline"
	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/warehouse"
	"sitewatch/pipeline/wire"
)

const testMonth = "2026-10"

// syncBuffer is a bytes.Buffer safe for the progress goroutine and the test to share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// harness is one project directory with a config pointing at an in-process simulator.
type harness struct {
	t        *testing.T
	dir      string
	cfgPath  string
	srv      *atlastest.Server
	key      string
	stdout   *syncBuffer
	stderr   *syncBuffer
	extraEnv map[string]string
	// retryMaxElapsed, when set, bounds each call's retries of transient failures
	// (pipeline.Env.RetryMaxElapsed): a test of what follows a failing API need not wait out
	// the client's 2-minute default.
	retryMaxElapsed time.Duration
}

func newHarness(t *testing.T, opts atlastest.Options, domains []string, apiExtra string) *harness {
	t.Helper()
	if opts.Month == "" {
		opts.Month = testMonth
	}
	h := &harness{t: t, dir: t.TempDir(), key: "canary-key-7f3a9c"}
	if opts.Keys == nil {
		opts.Keys = map[string]int64{h.key: 10_000}
	}
	if opts.Rate == 0 {
		opts.Rate = 200
	}
	h.srv = atlastest.NewServer(opts)
	t.Cleanup(h.srv.Close)
	var b strings.Builder
	if !strings.Contains(apiExtra, "rate_limit:") {
		apiExtra += "  rate_limit: 200\n"
	}
	fmt.Fprintf(&b, "schedule: \"0 6 2 * *\"\napi:\n  base_url: %s\n  timeout: 5s\n%s", h.srv.URL, apiExtra)
	b.WriteString("warehouse:\n  duckdb: data/w.duckdb\n  parquet: data/parquet\ndomains:\n")
	for _, d := range domains {
		fmt.Fprintf(&b, "  - %q\n", d)
	}
	h.cfgPath = filepath.Join(h.dir, "domains.yaml")
	if err := os.WriteFile(h.cfgPath, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *harness) env() Env {
	h.stdout, h.stderr = &syncBuffer{}, &syncBuffer{}
	vars := map[string]string{config.EnvAPIKey: h.key}
	for k, v := range h.extraEnv {
		vars[k] = v
	}
	env := Env{Env: pipeline.Env{
		Getenv:          func(k string) string { return vars[k] },
		Logger:          slog.New(slog.NewTextHandler(h.stderr, &slog.HandlerOptions{Level: slog.LevelDebug})),
		ProgressEvery:   50 * time.Millisecond,
		RetryMaxElapsed: h.retryMaxElapsed,
		Credits:         wire.Credits{},
		Warehouses:      wire.Warehouses{},
		Publisher:       wire.Publisher{},
	}, Stdout: h.stdout, Stderr: h.stderr}
	watchRuns(&env, nil) // as `run` and `schedule` do; tests that call pipeline.Run directly see the same
	return env
}

// run runs `sitewatch <args> --config <cfg>` in-process and returns the exit code.
func (h *harness) run(args ...string) int {
	h.t.Helper()
	args = append(args[:1:1], append([]string{"--config", h.cfgPath}, args[1:]...)...)
	code := Main(context.Background(), args, h.env())
	h.assertNoKey(h.stdout.String(), "stdout")
	h.assertNoKey(h.stderr.String(), "stderr/log")
	return code
}

func (h *harness) assertNoKey(text, where string) {
	h.t.Helper()
	if strings.Contains(text, h.key) {
		h.t.Fatalf("the API key leaked into %s", where)
	}
}

func (h *harness) db() *sql.DB {
	h.t.Helper()
	wh, err := warehouse.Open(context.Background(), warehouse.Options{
		DuckDBPath: filepath.Join(h.dir, "data/w.duckdb"), ParquetDir: filepath.Join(h.dir, "data/parquet"), ReadOnly: true})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { wh.Close() })
	return wh.DB()
}

func count(t *testing.T, db *sql.DB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func TestRunComplete(t *testing.T) {
	domains := atlastest.Domains(8)
	entries := append([]string{"https://WWW." + domains[0] + "/pricing", "10.0.0.1", "<b>x</b>"}, domains...)
	h := newHarness(t, atlastest.Options{}, entries, "")
	if code := h.run("run", "--snapshot", testMonth); code != ExitOK {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, h.stdout, h.stderr)
	}
	out := h.stdout.String()
	for _, want := range []string{"domains loaded", "8 of 8", `not sent: "10.0.0.1"`, "credits spent", "complete"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if got, want := h.srv.Stats().Charged, int64(2*len(domains)+1); got != want {
		t.Errorf("credits charged = %d, want %d", got, want)
	}
	db := h.db()
	if got := count(t, db, "SELECT count(*) FROM sites WHERE snapshot_month = ?", testMonth); got != len(domains) {
		t.Errorf("sites rows = %d, want %d", got, len(domains))
	}
	if got := count(t, db, "SELECT count(*) FROM runs WHERE status = 'complete' AND credits_spent = ?", 2*len(domains)+1); got != 1 {
		t.Errorf("runs rows complete with all credits = %d, want 1", got)
	}
	for _, table := range []string{"sites", "traffic_history", "similar_sites"} {
		matches, _ := filepath.Glob(filepath.Join(h.dir, "data/parquet", table, "snapshot_month="+testMonth, "*.parquet"))
		if len(matches) == 0 {
			t.Errorf("no Parquet for %s", table)
		}
	}
	h.assertWarehouseHasNoKey()

	// A rerun of a complete snapshot makes one call (the API's month is known only from an
	// answer), says it is up to date, and changes nothing.
	before := dumpTables(t, h)
	for _, args := range [][]string{{"run", "--snapshot", testMonth}, {"run"}} {
		charged := h.srv.Stats().Charged
		if code := h.run(args...); code != ExitOK {
			t.Fatalf("%v: rerun exit %d\n%s", args, code, h.stdout)
		}
		if got := h.srv.Stats().Charged - charged; got > 1 {
			t.Errorf("%v: rerun of a complete month charged %d credits, want at most 1", args, got)
		}
		if out := h.stdout.String(); !strings.Contains(out, "up to date: the API still serves "+testMonth) || !strings.Contains(out, "complete since") {
			t.Errorf("%v: summary does not say up to date (complete since …):\n%s", args, out)
		}
	}
	if after := dumpTables(t, h); after != before {
		t.Errorf("rerun changed the tables")
	}
	withDB(t, h, func(db *sql.DB) {
		if got := count(t, db, "SELECT count(*) FROM runs WHERE status = 'up_to_date' AND snapshot_month = ? AND credits_spent <= 1", testMonth); got != 2 {
			t.Errorf("runs rows up_to_date = %d, want 2", got)
		}
	})
}

func TestRunOutOfCreditsThenResume(t *testing.T) {
	domains := atlastest.Domains(10)
	h := newHarness(t, atlastest.Options{Keys: map[string]int64{"canary-key-7f3a9c": 7}}, domains, "")
	if code := h.run("run", "--snapshot", testMonth); code != ExitCredits {
		t.Fatalf("exit %d, want %d (out of credits)\n%s\n%s", code, ExitCredits, h.stdout, h.stderr)
	}
	if !strings.Contains(h.stdout.String(), "top up") {
		t.Errorf("summary does not say what to do:\n%s", h.stdout)
	}
	withDB(t, h, func(db *sql.DB) {
		if got := count(t, db, "SELECT count(*) FROM countries"); got != 249 {
			t.Errorf("countries = %d after a credit stop, want 249 (country-metadata goes first)", got)
		}
	})
	h.srv.SetCredits(h.key, 100)
	if code := h.run("run", "--snapshot", testMonth); code != ExitOK {
		t.Fatalf("resume exit %d, want 0\n%s\n%s", code, h.stdout, h.stderr)
	}
	if got, want := h.srv.Stats().Charged, int64(2*len(domains)+1); got != want {
		t.Errorf("total credits charged = %d, want %d (no credit spent twice)", got, want)
	}
	db := h.db()
	if got := count(t, db, "SELECT count(DISTINCT domain) FROM sites"); got != len(domains) {
		t.Errorf("loaded %d domains, want %d", got, len(domains))
	}
	if got := count(t, db, "SELECT count(*) FROM runs WHERE status = 'stopped_credits'"); got != 1 {
		t.Errorf("runs stopped for credits = %d, want 1", got)
	}
}

func TestRunReserveAndCap(t *testing.T) {
	domains := atlastest.Domains(6)
	t.Run("MaxCreditsPerRun", func(t *testing.T) {
		h := newHarness(t, atlastest.Options{}, domains, "  max_credits_per_run: 5\n")
		if code := h.run("run", "--snapshot", testMonth); code != ExitCredits {
			t.Fatalf("exit %d, want 3\n%s", code, h.stdout)
		}
		if got := h.srv.Stats().Charged; got != 5 {
			t.Errorf("charged %d, want exactly the cap 5", got)
		}
	})
	t.Run("MinCredits", func(t *testing.T) {
		h := newHarness(t, atlastest.Options{Keys: map[string]int64{"canary-key-7f3a9c": 20}}, domains, "  min_credits: 15\n")
		if code := h.run("run", "--snapshot", testMonth); code != ExitCredits {
			t.Fatalf("exit %d, want 3\n%s", code, h.stdout)
		}
		if got := h.srv.Credits(h.key); got != 15 {
			t.Errorf("credits left %d, want the reserve 15", got)
		}
	})
}

func TestRunUnauthorized(t *testing.T) {
	h := newHarness(t, atlastest.Options{}, atlastest.Domains(2), "")
	h.key = "canary-wrong-key-1b2c"
	if code := h.run("run", "--snapshot", testMonth); code != ExitUnauthorized {
		t.Fatalf("exit %d, want 4\n%s\n%s", code, h.stdout, h.stderr)
	}
	if !strings.Contains(h.stdout.String()+h.stderr.String(), "ATLAS_API_KEY") {
		t.Errorf("no hint to check ATLAS_API_KEY:\n%s\n%s", h.stdout, h.stderr)
	}
	if parts, _ := filepath.Glob(filepath.Join(h.dir, "data/parquet/*/snapshot_month=*")); len(parts) != 0 {
		t.Errorf("a run that loaded nothing published empty partitions: %v", parts)
	}
}

func TestRunUsageErrorsCallNothing(t *testing.T) {
	h := newHarness(t, atlastest.Options{}, atlastest.Domains(2), "")
	tests := []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"BadSnapshot", []string{"run", "--snapshot", "2026-13"}, nil},
		{"UnknownFlag", []string{"run", "--fast"}, nil},
		{"NoKey", []string{"run"}, map[string]string{config.EnvAPIKey: ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h.extraEnv = tc.env
			if code := h.run(tc.args...); code != ExitUsage {
				t.Fatalf("exit %d, want 2\n%s", code, h.stderr)
			}
		})
	}
	h.extraEnv = nil
	if got := h.srv.Stats().Requests; got != 0 {
		t.Errorf("simulator saw %d requests, want 0", got)
	}
}

func TestDryRunCallsNothing(t *testing.T) {
	h := newHarness(t, atlastest.Options{}, atlastest.Domains(4), "  max_credits_per_run: 3\n")
	if code := h.run("run", "--snapshot", testMonth, "--dry-run"); code != ExitOK {
		t.Fatalf("exit %d\n%s", code, h.stderr)
	}
	out := h.stdout.String()
	for _, want := range []string{"calls", "9", "will stop after 3 calls"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out)
		}
	}
	// With a key set, the dry run asks the API for the balance with the free preflight (a
	// request without url, answered 400 and never charged), and nothing else.
	if st := h.srv.Stats(); st.Charged != 0 || st.Requests > 1 {
		t.Errorf("dry run made %d requests, charged %d: want at most the free preflight", st.Requests, st.Charged)
	}
	if !strings.Contains(out, "balance (credits)") {
		t.Errorf("dry run with a key shows no balance:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(h.dir, "data")); !os.IsNotExist(err) {
		t.Errorf("dry run created the warehouse (stat: %v); it must only read", err)
	}
}

func TestValidate(t *testing.T) {
	h := newHarness(t, atlastest.Options{}, []string{"Example.com", "https://www.example.com/x", "192.168.1.1", "bücher.de"}, "")
	code := h.run("validate")
	out := h.stdout.String()
	if code != ExitUsage {
		t.Errorf("exit %d, want 2 (a rejected entry)", code)
	}
	for _, want := range []string{`"Example.com" -> example.com`, `duplicate`, `"192.168.1.1": not a host name: an IP address`, "xn--bcher-kva.de"} {
		if !strings.Contains(out, want) {
			t.Errorf("validate output lacks %q:\n%s", want, out)
		}
	}
}

func TestQueryFormats(t *testing.T) {
	h := newHarness(t, atlastest.Options{}, atlastest.Domains(2), "")
	if code := h.run("run", "--snapshot", testMonth); code != ExitOK {
		t.Fatalf("run exit %d\n%s", code, h.stdout)
	}
	tests := []struct{ format, want string }{
		{"table", "(2 rows)"},
		{"csv", "domain,n\n"},
		{"json", `"n": 12`},
	}
	for _, tc := range tests {
		t.Run(tc.format, func(t *testing.T) {
			code := h.run("query", "--format", tc.format, "SELECT domain, count(*) AS n FROM traffic_history GROUP BY domain ORDER BY domain")
			if code != ExitOK || !strings.Contains(h.stdout.String(), tc.want) {
				t.Errorf("exit %d, output lacks %q:\n%s%s", code, tc.want, h.stdout, h.stderr)
			}
		})
	}
	if code := h.run("status"); code != ExitOK || !strings.Contains(h.stdout.String(), "complete") {
		t.Errorf("status exit %d:\n%s%s", code, h.stdout, h.stderr)
	}
}

// dumpTables renders every derived table in a stable order, without load timestamps, so two
// warehouses can be compared.
func dumpTables(t *testing.T, h *harness) string {
	t.Helper()
	db := h.db()
	var b strings.Builder
	for _, table := range []string{"sites", "traffic_history", "sources_share", "geography_share", "keywords",
		"ai_platforms", "ai_platform_history", "ai_prompts", "similar_sites", "site_tags", "countries"} {
		cols := "*"
		if table == "sites" {
			cols = "* EXCLUDE (fetched_at)" // load time differs between runs by design
		}
		rows, err := db.Query(fmt.Sprintf("SELECT %s FROM %s ORDER BY ALL", cols, table))
		if err != nil {
			t.Fatalf("dump %s: %v", table, err)
		}
		names, _ := rows.Columns()
		vals := make([]any, len(names))
		ptrs := make([]any, len(names))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		n := 0
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s %v\n", table, vals)
			n++
		}
		rows.Close()
		fmt.Fprintf(&b, "%s: %d rows\n", table, n)
	}
	return b.String()
}

func (h *harness) assertWarehouseHasNoKey() {
	h.t.Helper()
	err := filepath.Walk(filepath.Join(h.dir, "data"), func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(data, []byte(h.key)) {
			h.t.Errorf("the API key is in %s", path)
		}
		return nil
	})
	if err != nil {
		h.t.Fatal(err)
	}
}

// TestRunStopsWhenUpstreamKeepsFailing: every call failing after its retries stops the run
// with exit 1, saying so, and nothing charged (the rule itself is the core's, tested against
// fakes in pipeline/core_stop_test.go; this is the wiring with the real client).
func TestRunStopsWhenUpstreamKeepsFailing(t *testing.T) {
	h := newHarness(t, atlastest.Options{FailRate: 1}, atlastest.Domains(30), "  rate_limit: 20\n")
	h.retryMaxElapsed = 3 * time.Second // each call gives up after 3 s of retries, not 2 minutes
	start := time.Now()
	if code := h.run("run", "--snapshot", testMonth); code != ExitFailed {
		t.Fatalf("exit %d, want 1\n%s", code, h.stdout)
	}
	if !strings.Contains(h.stdout.String(), "calls in a row failed") {
		t.Errorf("summary does not say the API keeps failing:\n%s", h.stdout)
	}
	if got := h.srv.Stats().Charged; got != 0 {
		t.Errorf("charged %d for failed calls, want 0", got)
	}
	t.Logf("stopped after %v and %d requests", time.Since(start).Round(time.Second), h.srv.Stats().Requests)
}

func TestRebuildReportSchemaCommands(t *testing.T) {
	h := newHarness(t, atlastest.Options{}, atlastest.Domains(4), "")
	if code := h.run("run", "--snapshot", testMonth); code != ExitOK {
		t.Fatalf("run exit %d\n%s", code, h.stdout)
	}
	before := dumpTables(t, h)
	requests := h.srv.Stats().Requests

	t.Run("Rebuild", func(t *testing.T) {
		if code := h.run("rebuild", "--snapshot", testMonth); code != ExitOK {
			t.Fatalf("rebuild exit %d\n%s%s", code, h.stdout, h.stderr)
		}
		if !strings.Contains(h.stdout.String(), "4 domains, 0 API calls") {
			t.Errorf("rebuild output: %s", h.stdout)
		}
		if got := dumpTables(t, h); got != before {
			t.Errorf("rebuild changed the tables")
		}
		if got := h.srv.Stats().Requests; got != requests {
			t.Errorf("rebuild made %d API calls", got-requests)
		}
		if code := h.run("rebuild", "--snapshot", "2001-01"); code != ExitFailed || !strings.Contains(h.stderr.String(), "no stored responses") {
			t.Errorf("rebuild of a month never run: exit %d, want 1 saying so\n%s", code, h.stderr)
		}
	})
	t.Run("Report", func(t *testing.T) {
		out := filepath.Join(h.dir, "report.html")
		if code := h.run("report", "--snapshot", testMonth, "--out", out); code != ExitOK {
			t.Fatalf("report exit %d\n%s%s", code, h.stdout, h.stderr)
		}
		html, err := os.ReadFile(out)
		if err != nil || !bytes.Contains(html, []byte("<svg")) {
			t.Errorf("report %s: %v, has a chart: %v", out, err, bytes.Contains(html, []byte("<svg")))
		}
		if code := h.run("report", "--snapshot", "2001-01", "--out", out+".2"); code != ExitFailed {
			t.Errorf("report of an empty snapshot: exit %d, want 1", code)
		}
	})
	t.Run("Schema", func(t *testing.T) {
		if code := Main(context.Background(), []string{"schema"}, h.env()); code != ExitOK {
			t.Fatalf("schema exit %d\n%s", code, h.stderr)
		}
		for _, want := range []string{"traffic_monthly", "share_pct", "sources_share"} {
			if !strings.Contains(h.stdout.String(), want) {
				t.Errorf("schema output lacks %q", want)
			}
		}
	})
}

func TestRunMarketplaceMode(t *testing.T) {
	const host, marketKey = "intel.example", "canary-market-5e6f"
	for _, requireBearer := range []bool{false, true} {
		t.Run(fmt.Sprintf("RequireBearer=%v", requireBearer), func(t *testing.T) {
			domains := atlastest.Domains(3)
			h := newHarness(t, atlastest.Options{MarketplaceHost: host, MarketplaceKey: marketKey, MarketplaceRequireBearer: requireBearer},
				domains, "  mode: marketplace\n  marketplace_host: "+host+"\n")
			h.extraEnv = map[string]string{config.EnvMarketplaceKey: marketKey}
			if code := h.run("run", "--snapshot", testMonth); code != ExitOK {
				t.Fatalf("exit %d\n%s%s", code, h.stdout, h.stderr)
			}
			if strings.Contains(h.stdout.String()+h.stderr.String(), marketKey) {
				t.Errorf("the marketplace key leaked into the output")
			}
			if got := count(t, h.db(), "SELECT count(*) FROM sites"); got != len(domains) {
				t.Errorf("sites rows = %d, want %d", got, len(domains))
			}
		})
	}
	t.Run("MissingMarketplaceKey", func(t *testing.T) {
		h := newHarness(t, atlastest.Options{MarketplaceHost: host, MarketplaceKey: marketKey}, atlastest.Domains(1),
			"  mode: marketplace\n  marketplace_host: "+host+"\n")
		if code := h.run("run", "--snapshot", testMonth); code != ExitUsage || !strings.Contains(h.stderr.String(), config.EnvMarketplaceKey) {
			t.Errorf("exit %d, want 2 naming %s\n%s", code, config.EnvMarketplaceKey, h.stderr)
		}
	})
}

// TestInterruptKeepsAnsweredCalls: a signal (ctx cancelled) stops new calls, lets the ones in
// flight finish and stores them, so the rerun pays only for what was never answered.
func TestInterruptKeepsAnsweredCalls(t *testing.T) {
	domains := atlastest.Domains(20)
	h := newHarness(t, atlastest.Options{LatencyMin: 150 * time.Millisecond, LatencyMax: 300 * time.Millisecond}, domains, "  rate_limit: 20\n")
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		waitFor(t, func() bool { return h.srv.Stats().Requests >= 10 })
		cancel()
	}()
	code := Main(ctx, []string{"run", "--config", h.cfgPath, "--snapshot", testMonth}, h.env())
	if code != ExitFailed || !strings.Contains(h.stdout.String(), pipeline.StatusInterrupted) {
		t.Fatalf("exit %d, want 1 and status %s\n%s", code, pipeline.StatusInterrupted, h.stdout)
	}
	if strings.Contains(h.stdout.String(), "failed: ") {
		t.Errorf("calls in flight were cut instead of finished:\n%s", h.stdout)
	}
	if code := h.run("run", "--snapshot", testMonth); code != ExitOK {
		t.Fatalf("rerun exit %d\n%s", code, h.stdout)
	}
	if got, want := h.srv.Stats().Charged, int64(2*len(domains)+1); got != want {
		t.Errorf("charged %d over both runs, want %d: an answered call was thrown away", got, want)
	}
}

// TestRunSnapshotOtherMonthExits5: --snapshot of a month the API does not serve stores
// nothing, spends at most 1 credit, exits 5 and says which month the API serves.
func TestRunSnapshotOtherMonthExits5(t *testing.T) {
	h := newHarness(t, atlastest.Options{}, atlastest.Domains(2), "")
	for _, month := range []string{"2026-09", "2026-12"} {
		charged := h.srv.Stats().Charged
		if code := h.run("run", "--snapshot", month); code != ExitWrongMonth {
			t.Fatalf("--snapshot %s: exit %d, want %d\n%s", month, code, ExitWrongMonth, h.stdout)
		}
		if got := h.srv.Stats().Charged - charged; got > 1 {
			t.Errorf("--snapshot %s: charged %d credits, want at most 1", month, got)
		}
		out := h.stdout.String()
		for _, want := range []string{"the API serves " + testMonth, "past months cannot be fetched", "nothing was stored under " + month} {
			if !strings.Contains(out, want) {
				t.Errorf("--snapshot %s: output lacks %q:\n%s", month, want, out)
			}
		}
	}
	withDB(t, h, func(db *sql.DB) {
		if got := count(t, db, "SELECT count(*) FROM raw_responses"); got != 0 {
			t.Errorf("raw_responses = %d rows after mismatched runs, want 0", got)
		}
		if got := count(t, db, "SELECT count(*) FROM runs WHERE status = 'month_mismatch'"); got != 2 {
			t.Errorf("runs with status month_mismatch = %d, want 2", got)
		}
	})
	// Without --snapshot the run loads the month the API serves.
	if code := h.run("run"); code != ExitOK || !strings.Contains(h.stdout.String(), "snapshot "+testMonth) {
		t.Fatalf("run without --snapshot: exit %d\n%s", code, h.stdout)
	}
}

// TestScheduleSignalMidRunCommitsAndReturns: a signal while a scheduled run is fetching lets
// the calls in flight finish and be stored, and Schedule returns nil (the process exits 0);
// the next run pays only for what was never answered. That the signal landed mid-run is
// counted (fewer charges than the run's); Schedule's end is timed from the signal, not the
// start (a loaded machine may take seconds to make the run's first 10 requests), against ten
// times signalBound: a hang guard, since a Schedule that went on after the signal would never
// return.
func TestScheduleSignalMidRunCommitsAndReturns(t *testing.T) {

	domains := atlastest.Domains(20)
	month := time.Now().UTC().Format("2006-01")
	h := newHarness(t, atlastest.Options{Month: month, LatencyMin: 150 * time.Millisecond, LatencyMax: 300 * time.Millisecond},
		domains, "  rate_limit: 20\n")
	cfg, err := config.Load(h.cfgPath, h.env().Getenv)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Schedule = "* * * * * *" // every second, with the swapped parser
	ctx, cancel := context.WithCancel(context.Background())
	signalled := make(chan time.Time, 1)
	go func() {
		waitFor(t, func() bool { return h.srv.Stats().Requests >= 10 })
		signalled <- time.Now()
		cancel()
	}()
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Schedule(ctx, cfg, h.env().Env, pipeline.ScheduleOptions{Parse: secondsParser})
	}()
	var at time.Time
	select {
	case err := <-done:
		t.Fatalf("Schedule = %v before the signal", err)
	case at = <-signalled:
	}
	select {
	case err := <-done:
		t.Logf("Schedule returned %v after the signal", time.Since(at).Round(time.Millisecond))
		if err != nil {
			t.Fatalf("Schedule = %v, want nil after a signal", err)
		}
	case <-time.After(10 * signalBound): // a hang guard, from the signal
		t.Fatalf("Schedule did not return within %v of the signal", 10*signalBound)
	}
	charged := h.srv.Stats().Charged
	if charged == 0 || charged >= int64(2*len(domains)+1) {
		t.Fatalf("charged %d: the signal did not land mid-run", charged)
	}
	if code := h.run("run", "--snapshot", month); code != ExitOK {
		t.Fatalf("run after the stopped schedule: exit %d\n%s", code, h.stdout)
	}
	if got, want := h.srv.Stats().Charged, int64(2*len(domains)+1); got != want {
		t.Errorf("charged %d over both runs, want %d: a call answered before the signal was thrown away", got, want)
	}
}
