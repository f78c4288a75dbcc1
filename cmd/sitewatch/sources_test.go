package main

import (
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"sitewatch/pipeline/atlas/atlastest"
)

const (
	listingHost = "intel.example"
	listingKey  = "listing-key-51c0ffee"
)

// sourcesHarness is a harness whose config spends two sources of one simulator: the
// marketplace listing (quota, resetting at reset) first, then the direct wallet.
func sourcesHarness(t *testing.T, opts atlastest.Options, domains []string, quota int64, reset time.Time) *harness {
	t.Helper()
	opts.MarketplaceHost, opts.MarketplaceKey, opts.MarketplaceQuota, opts.MarketplaceQuotaReset = listingHost, listingKey, quota, reset
	h := newHarness(t, opts, domains, "")
	var b strings.Builder
	fmt.Fprintf(&b, `schedule: "0 6 2 * *"
api:
  timeout: 5s
  sources:
    - name: direct
      mode: direct
      base_url: %s
      key_env: ATLAS_API_KEY
      rate_limit: 200
    - name: marketplace
      mode: marketplace
      base_url: %s
      marketplace_host: %s
      marketplace_key_env: LISTING_KEY
      rate_limit: 200
warehouse:
  duckdb: data/w.duckdb
  parquet: data/parquet
domains:
`, h.srv.URL, h.srv.URL, listingHost)
	for _, d := range domains {
		fmt.Fprintf(&b, "  - %q\n", d)
	}
	if err := os.WriteFile(h.cfgPath, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	h.extraEnv = map[string]string{"LISTING_KEY": listingKey}
	return h
}

func paidBySource(t *testing.T, db *sql.DB) map[string]int {
	t.Helper()
	rows, err := db.Query(`SELECT coalesce(source, '?'), sum(credits) FROM run_calls GROUP BY ALL`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	paid := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			t.Fatal(err)
		}
		paid[s] = n
	}
	return paid
}

// Two sources: the quota that resets before the next run (0 6 2 * *) pays first, the direct
// wallet the rest; check and --dry-run print the plan for 0 credits; the ledger names the payer.
func TestRunTwoSources(t *testing.T) {
	domains := atlastest.Domains(10) // 21 calls
	h := sourcesHarness(t, atlastest.Options{}, domains, 7, time.Now().Add(time.Hour))
	if code := h.run("check"); code != ExitOK {
		t.Fatalf("check exit %d\n%s\n%s", code, h.stdout, h.stderr)
	}
	reset := time.Now().Add(time.Hour).UTC().Format(time.DateOnly)
	wantPlan := "marketplace pays 7 of its 7 before " + reset + "; direct pays 14 of its 10,000"
	for _, want := range []string{"2 credit sources", "source marketplace", "quota 7 of 7 left", "source direct", "balance 10,000 credits", wantPlan, "ready: 0 credits"} {
		if !strings.Contains(h.stdout.String(), want) {
			t.Errorf("check output lacks %q:\n%s", want, h.stdout)
		}
	}
	if code := h.run("run", "--dry-run"); code != ExitOK || !strings.Contains(h.stdout.String(), wantPlan) {
		t.Errorf("dry run exit %d, or no plan %q:\n%s", code, wantPlan, h.stdout)
	}
	if got := h.srv.Stats().Charged; got != 0 {
		t.Fatalf("check and dry run charged %d", got)
	}
	if code := h.run("run"); code != ExitOK {
		t.Fatalf("run exit %d\n%s\n%s", code, h.stdout, tail(h.stderr.String(), 3000))
	}
	if !strings.Contains(h.stdout.String(), "21 (marketplace 7, direct 14)") {
		t.Errorf("the run summary does not say who paid:\n%s", h.stdout)
	}
	if code := h.run("status"); code != ExitOK || !strings.Contains(h.stdout.String(), "paid by source") ||
		!strings.Contains(h.stdout.String(), "marketplace 7, direct 14") {
		t.Errorf("status exit %d, or it does not say who paid:\n%s", code, h.stdout)
	}
	if got := paidBySource(t, h.db()); got["marketplace"] != 7 || got["direct"] != 14 {
		t.Errorf("ledger paid by source = %v, want marketplace 7, direct 14", got)
	}
	var bySource string
	if err := h.db().QueryRow(`SELECT credits_by_source FROM runs WHERE status = 'complete'`).Scan(&bySource); err != nil ||
		bySource != `{"marketplace":7,"direct":14}` {
		t.Errorf("runs.credits_by_source = %q, %v; want {\"marketplace\":7,\"direct\":14}", bySource, err)
	}
	for f, n := range h.srv.Stats().Fetches {
		if n > 1 {
			t.Errorf("%s %s paid %d times", f.Endpoint, f.Domain, n)
		}
	}
}

// A listing whose monthly quota another program used up answers every request 429 with 0
// remaining, the free probe too. check and run then give it no call and the direct wallet pays
// for all; before, the probe's 429 read as a rate limit and the run failed ("lower
// api.rate_limit"), as a rerun did in CI after a kill that came once the quota was spent
// (TestKillMinus9AcrossSources).
func TestRunWithTheListingsQuotaUsedUp(t *testing.T) {
	domains := atlastest.Domains(3) // 7 calls
	h := sourcesHarness(t, atlastest.Options{}, domains, 2, time.Now().Add(time.Hour))
	for i := range 2 {
		req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/site-overview?url=other%d.example", h.srv.URL, i), nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("x-marketplace-host", listingHost)
		req.Header.Set("x-marketplace-key", listingKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("another program's call %d on the listing: HTTP %d", i+1, resp.StatusCode)
		}
	}
	if code := h.run("check"); code != ExitOK || !strings.Contains(h.stdout.String(), "direct pays 7") {
		t.Errorf("check exit %d, or the direct wallet does not pay all 7 calls:\n%s\n%s", code, h.stdout, tail(h.stderr.String(), 2000))
	}
	if code := h.run("run"); code != ExitOK {
		t.Fatalf("run exit %d\n%s\n%s", code, h.stdout, tail(h.stderr.String(), 3000))
	}
	if got := paidBySource(t, h.db()); got["marketplace"] != 0 || got["direct"] != 7 {
		t.Errorf("ledger paid by source = %v, want direct 7 and nothing from the used-up listing", got)
	}
}

// Every source empty: the run stops for credits (exit 3) and calls nothing that costs.
func TestRunSourcesAllExhausted(t *testing.T) {
	h := sourcesHarness(t, atlastest.Options{Keys: map[string]int64{"canary-key-7f3a9c": 0}}, atlastest.Domains(3), 1, time.Now().Add(time.Hour))
	if code := h.run("run"); code != ExitCredits {
		t.Fatalf("run exit %d, want %d\n%s\n%s", code, ExitCredits, h.stdout, tail(h.stderr.String(), 2000))
	}
	if got := h.srv.Stats().Charged; got != 1 {
		t.Errorf("charged %d, want the 1 call the quota paid for", got)
	}
}

// check against a base URL that is not the API (a web server answering 404 with an HTML page)
// says so, names the request and its answer, exits 1, and claims no key, balance or rate.
func TestCheckWrongBaseURL(t *testing.T) {
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, "<html><body><h1>Page not found</h1></body></html>")
	}))
	t.Cleanup(web.Close)
	h := newHarness(t, atlastest.Options{}, atlastest.Domains(3), "")
	cfg, _ := os.ReadFile(h.cfgPath)
	if err := os.WriteFile(h.cfgPath, []byte(strings.Replace(string(cfg), h.srv.URL, web.URL, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := h.run("check"); code != ExitFailed {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitFailed, h.stdout, h.stderr)
	}
	out := h.stdout.String()
	for _, want := range []string{"does not serve the API", "/atlas/site-overview", "404"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, never := range []string{"key         accepted", "balance", "rate limit", "requests/s", "ready"} {
		if strings.Contains(out, never) {
			t.Errorf("output claims %q, which a 404 page did not say:\n%s", never, out)
		}
	}
}

// check on a month already complete promises the 1 credit a run now spends, not a whole month.
func TestCheckCompleteMonth(t *testing.T) {
	domains := atlastest.Domains(5)
	h := newHarness(t, atlastest.Options{}, domains, "")
	if code := h.run("run"); code != ExitOK {
		t.Fatalf("run exit %d", code)
	}
	if code := h.run("check"); code != ExitOK {
		t.Fatalf("check exit %d\n%s\n%s", code, h.stdout, h.stderr)
	}
	out := h.stdout.String()
	if !strings.Contains(out, "1 credit: "+testMonth+" is complete") || !strings.Contains(out, "11 credits when the API serves a new month") {
		t.Errorf("check does not say a run now spends 1 credit (11 for a new month):\n%s", out)
	}
}

// kill -9 mid-run with two sources paying, then a rerun: the snapshot completes, every table
// equals an uninterrupted run's, and no call whose answer was stored is paid again (only the
// calls in flight at the kill can be).
func TestKillMinus9AcrossSources(t *testing.T) {
	bin := sitewatchBinary(t)
	const seed = 9
	domains := atlastest.Domains(60)
	want := referenceDump(t, seed, domains)
	opts := atlastest.Options{Seed: seed, LatencyMin: 5 * time.Millisecond, LatencyMax: 20 * time.Millisecond, Rate: 100}
	h := sourcesHarness(t, opts, domains, 50, time.Now().Add(time.Hour))
	cmd := exec.Command(bin, "run", "--config", h.cfgPath, "--snapshot", testMonth)
	cmd.Env = append(os.Environ(), "ATLAS_API_KEY="+h.key, "LISTING_KEY="+listingKey)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for h.srv.Stats().Charged < 60 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	_ = cmd.Process.Kill() // SIGKILL, mid-run: both sources have paid by now
	_ = cmd.Wait()
	h.assertNoKey(out.String(), "killed run's output")
	killedAt := h.srv.Stats().Charged
	if code := h.run("run", "--snapshot", testMonth); code != ExitOK {
		t.Fatalf("rerun exit %d\n%s\n%s", code, out, tail(h.stderr.String(), 3000))
	}
	if got := dumpTablesClosed(t, h); got != want {
		t.Error("after a kill and a rerun across sources, the tables differ from an uninterrupted run's")
	}
	twice := 0
	for _, n := range h.srv.Stats().Fetches {
		twice += n - 1
	}
	if inFlight := 2 * atlasMaxInFlight(100); twice > inFlight {
		t.Errorf("%d calls paid twice, more than the %d that can be in flight at a kill", twice, inFlight)
	}
	withDB(t, h, func(db *sql.DB) {
		assertNoDuplicates(t, db)
		if n := count(t, db, `SELECT count(*) FROM (SELECT snapshot_month, domain, endpoint FROM run_calls
			WHERE outcome = 'stored' GROUP BY ALL HAVING count(*) > 1)`); n != 0 {
			t.Errorf("%d stored answers paid for twice on the ledger", n)
		}
		paid := paidBySource(t, db)
		if paid["marketplace"] == 0 || paid["marketplace"] > 50 || paid["direct"] == 0 {
			t.Errorf("ledger by source %v: want the marketplace's quota (at most 50) used and direct paying the rest", paid)
		}
	})
	t.Logf("killed after %d credits; %d calls paid twice (in flight at the kill)", killedAt, twice)
}
