package main

import (
	"database/sql"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/textout"
)

// TestMonthTurnSavesEveryPaidMonth (issue 32 item 8): a run on a machine without a disk of
// its own is stopped by the API's month turning. It saves the restore copy of the old month
// and of the new one (an answer of the new month was paid for and stored), and its summary
// counts the new month's answers. A second, fresh runner restores both and completes the new
// month without paying again for any answer the first one stored under it.
func TestMonthTurnSavesEveryPaidMonth(t *testing.T) {
	gw := bucketGateway(t)
	domains := atlastest.Domains(6)
	next := nextMonth(testMonth)
	var answered atomic.Int32
	var turn sync.Once
	var ms *mutatingServer
	ms = newMutatingServer(t, atlastest.Options{}, func(_, _ string, body []byte) []byte {
		if answered.Add(1) == 5 { // this answer is the old month's; the calls after it see the new one
			turn.Do(func() { ms.sim.TurnMonth() })
		}
		return body
	})
	a := newHarness(t, atlastest.Options{}, domains, "  rate_limit: 5\n")
	a.setConfig("base_url: "+a.srv.URL, "base_url: "+ms.URL)
	withPublish(t, a, gw.Endpoint, "")
	if code := a.run("run"); code != ExitFailed || !strings.Contains(a.stdout.String(), "month_turned") {
		t.Fatalf("A run: exit %d, want %d (month_turned)\n%s%s", code, ExitFailed, a.stdout, a.stderr)
	}
	var paidNew []string // "endpoint domain" of every answer A stored under the new month
	withDB(t, a, func(db *sql.DB) {
		rows, err := db.Query(`SELECT endpoint, domain FROM raw_responses WHERE snapshot_month = ?`, next)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var ep, d string
			if err := rows.Scan(&ep, &d); err != nil {
				t.Fatal(err)
			}
			paidNew = append(paidNew, ep+" "+d)
		}
	})
	if len(paidNew) == 0 {
		t.Fatalf("A stored no answer under %s: the turn did not land mid-run\n%s", next, a.stdout)
	}
	out := a.stdout.String()
	for _, m := range []string{testMonth, next} {
		if getObject(t, gw, "team/_restore/_manifests/snapshot_month="+m+".json") == "" {
			t.Errorf("A saved no restore copy of %s", m)
		}
		if !strings.Contains(out, "restore copy of the incomplete "+m) {
			t.Errorf("A's summary does not name the restore copy of %s:\n%s", m, out)
		}
	}
	if want := next + " holds " + textout.Plural(len(paidNew), "answer", "answers") + " paid for"; !strings.Contains(out, want) || strings.Contains(out, "has 0 domains so far") {
		t.Errorf("A's summary does not say %q:\n%s", want, out)
	}

	before := ms.sim.Stats().Fetches
	b := newHarness(t, atlastest.Options{}, domains, "")
	b.setConfig("base_url: "+b.srv.URL, "base_url: "+ms.URL)
	withPublish(t, b, gw.Endpoint, "")
	if code := b.run("run", "--restore-if-missing"); code != ExitOK {
		t.Fatalf("B run --restore-if-missing: exit %d\n%s%s", code, b.stdout, b.stderr)
	}
	after := ms.sim.Stats().Fetches
	for _, p := range paidNew {
		ep, d, _ := strings.Cut(p, " ")
		if n := after[atlastest.Fetch{Endpoint: ep, Domain: d}] - before[atlastest.Fetch{Endpoint: ep, Domain: d}]; n != 0 {
			t.Errorf("B paid %s %s of %s %d more times: A had paid it and stored it under that month", ep, d, next, n)
		}
	}
	withDB(t, b, func(db *sql.DB) {
		if n := count(t, db, `SELECT count(*) FROM sites WHERE snapshot_month = ?`, next); n != len(domains) {
			t.Errorf("B's %s holds %d domains, want %d", next, n, len(domains))
		}
	})
}
