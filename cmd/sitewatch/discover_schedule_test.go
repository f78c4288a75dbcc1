package main

import (
	"context"
	"database/sql"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sitewatch/pipeline"
	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/discover"
)

// TestScheduleGrowsWatchlistWithinBudget: with discover: set (3 a month, 4 credits a month),
// schedule adds after the complete month 2026-10 the two best candidates the budget allows,
// not during the run (2026-10 holds only the original domains), names them in that run's
// webhook digest and in `status`; `check` then counts them in the next month's cost; the
// next month's run (2026-11) fetches them, and adds nothing more (the budget is spent).
func TestScheduleGrowsWatchlistWithinBudget(t *testing.T) {
	domains := atlastest.Domains(4)
	rcv := newWebhookReceiver(t, func(w http.ResponseWriter) { w.WriteHeader(http.StatusOK) })
	h := newHarness(t, atlastest.Options{Month: "2026-10"}, domains, "")
	h.extraEnv = map[string]string{config.EnvWebhookURL: rcv.srv.URL + "/hook"}
	addDiscoverBlock(t, h.cfgPath, "discover:\n  add_per_month: 3\n  monthly_budget: 4\n")

	var checkOut string
	var firstTotal int
	runs := runLog{onRun: func(n int, sum *pipeline.Summary) {
		if n != 1 {
			return
		}
		firstTotal = sum.DomainsTotal
		// Between the months: check re-reads the watchlist and counts the added domains.
		var stdout, stderr syncBuffer
		env := h.env()
		env.Stdout, env.Stderr = &stdout, &stderr
		Main(context.Background(), []string{"check", "--config", h.cfgPath}, env)
		checkOut = stdout.String() + stderr.String()
		h.srv.TurnMonth() // the API now serves 2026-11
	}}
	stop := scheduleRun(t, h, "*/2 * * * * *", pipeline.ScheduleOptions{OnRun: runs.record, Parse: secondsParser})
	waitFor(t, func() bool { return len(runs.get()) >= 2 })
	stop()
	if got := runs.get(); got[0] != pipeline.StatusComplete || got[1] != pipeline.StatusComplete {
		t.Fatalf("runs = %v, want two complete months", got)
	}

	data, _ := os.ReadFile(h.cfgPath)
	added := discover.AddedLines(data)
	if len(added) != 2 {
		t.Fatalf("added lines = %+v, want 2 (4 credits a month at 2 a domain, though add_per_month is 3):\n%s", added, data)
	}
	names := []string{added[0].Domain, added[1].Domain}
	if added[0].From != "2026-10" || slices.ContainsFunc(names, func(d string) bool { return slices.Contains(domains, d) }) {
		t.Errorf("added %+v: want candidates of 2026-10 that were not on the watchlist", added)
	}
	if firstTotal != len(domains) {
		t.Errorf("the 2026-10 run planned %d domains, want %d: the watchlist grew during the run", firstTotal, len(domains))
	}
	withDB(t, h, func(db *sql.DB) {
		for month, want := range map[string]int{"2026-10": 0, "2026-11": 2} {
			n := count(t, db, "SELECT count(*) FROM sites WHERE snapshot_month = ? AND domain IN (?, ?)", month, names[0], names[1])
			if n != want {
				t.Errorf("%s holds %d of the added domains, want %d", month, n, want)
			}
		}
	})

	events := rcv.got()
	if len(events) < 2 {
		t.Fatalf("webhook events = %v, want one per run", events)
	}
	first, _ := events[0]["added"].([]any)
	if len(first) != 2 || first[0] != names[0] || !strings.Contains(events[0]["text"].(string), "watchlist grown by discover: "+names[0]+", "+names[1]) {
		t.Errorf("first digest: added %v, text %q", events[0]["added"], events[0]["text"])
	}
	if _, ok := events[1]["added"]; ok {
		t.Errorf("second digest adds %v: the budget was spent", events[1]["added"])
	}
	// check re-reads the watchlist: 6 domains, the 2 added not loaded yet, 2 credits each.
	if !regexp.MustCompile(`\(6 domains[\s\S]*4 of 6 domains loaded[\s\S]*next run needs +4 credits`).MatchString(checkOut) {
		t.Errorf("check after the growth does not count the added domains (want 6 domains, 4 credits):\n%s", checkOut)
	}
	if code := h.run("status"); code != ExitOK || !strings.Contains(h.stdout.String(), "discover: 2 domains added to the watchlist, 4 credits a month; schedule adds up to 3 a month within 4 credits a month: "+names[0]) {
		t.Errorf("status (exit %d) does not name the added domains:\n%s", code, h.stdout.String())
	}
}

// addDiscoverBlock inserts block before the domains: list of the config at path.
func addDiscoverBlock(t *testing.T, path, block string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(data), "domains:\n", block+"domains:\n", 1)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
