package main

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"sitewatch/pipeline/atlas/atlastest"
)

// refuseProxy is a reverse proxy in front of the simulator at target that answers 503 (free,
// retried by the client with backoff) to every request refuse matches, and forwards the rest.
// It decides which calls of a run can be paid, whatever order the client admits them in.
func refuseProxy(t *testing.T, target string, refuse func(endpoint, domain string) bool) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		endpoint := strings.TrimPrefix(r.URL.Path, "/atlas/")
		domain, _ := atlastest.NormalizeDomain(r.URL.Query().Get("url"))
		if refuse(endpoint, domain) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":"Service Unavailable","message":"refused by the test proxy"}`))
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// stopsForCreditsHolding runs machine A (no disk of its own, a fresh directory: a blind
// start) on a wallet of 7 credits behind a proxy that refuses every call refuse matches, so
// its credit stop leaves exactly the answers the test chose in the restore copy. It returns A.
func stopsForCreditsHolding(t *testing.T, domains []string, refuse func(endpoint, domain string) bool) *harness {
	t.Helper()
	gw := bucketGateway(t)
	a := newHarness(t, atlastest.Options{Keys: map[string]int64{"canary-key-7f3a9c": 7}}, domains, "")
	a.setConfig("base_url: "+a.srv.URL, "base_url: "+refuseProxy(t, a.srv.URL, refuse))
	withPublish(t, a, gw.Endpoint, "")
	if code := a.run("run"); code != ExitCredits || !strings.Contains(a.stdout.String(), "restore copy of the incomplete "+testMonth) {
		t.Fatalf("A run: exit %d, want %d saving the restore copy\n%s%s", code, ExitCredits, a.stdout, a.stderr)
	}
	a.srv.SetCredits(a.key, 10_000)
	b := newHarness(t, atlastest.Options{}, domains, "")
	shareSimulator(t, b, a)
	withPublish(t, b, gw.Endpoint, "")
	if code := b.run("run", "--restore-if-missing"); code != ExitOK {
		t.Fatalf("B run --restore-if-missing: exit %d\n%s%s", code, b.stdout, b.stderr)
	}
	return a
}

// TestResumeLackingOneOverviewPaysEachOnce is issue 32 item 11 made deterministic. A's credit
// stop left the month holding every site-overview answer but quietriver.org's, and one
// site-similar answer (the order the client admitted its calls in under load chose which).
// B restored it: the month lacked one site-overview and five site-similar answers. B probed
// quietriver.org's overview (needed), then, the rest being site-similar only, bracketed them
// with a closing probe of the same domain: quietriver.org's overview was paid twice. Every
// (endpoint, domain) must be paid exactly once across both machines.
func TestResumeLackingOneOverviewPaysEachOnce(t *testing.T) {
	domains := atlastest.Domains(6)
	last := domains[len(domains)-1]
	a := stopsForCreditsHolding(t, domains, func(endpoint, domain string) bool {
		// Payable: countries, the overviews of the first five domains, the first one's similar.
		return (endpoint == "site-similar" && domain != domains[0]) || (endpoint == "site-overview" && domain == last)
	})
	paidExactlyOnce(t, a, domains)
}

// TestBlindStartCreditStopLeavesAnOverview: a blind start whose credits may not cover the
// month holds back one site-overview call until every other call is answered, so a credit
// stop never leaves the month holding every overview and lacking site-similar answers (which
// a resume could only confirm by paying an overview it holds again). Here every site-similar
// call's first attempt is refused, so without the hold-back the 7 credits buy the countries
// and all six overviews, and B pays brightriver.com's overview twice more (the two probes of
// its bracket).
func TestBlindStartCreditStopLeavesAnOverview(t *testing.T) {
	domains := atlastest.Domains(6)
	var mu sync.Mutex
	refused := map[string]bool{}
	a := stopsForCreditsHolding(t, domains, func(endpoint, domain string) bool {
		mu.Lock()
		defer mu.Unlock()
		if endpoint != "site-similar" || refused[domain] {
			return false
		}
		refused[domain] = true // the first attempt only: its retry comes after the backoff
		return true
	})
	paidExactlyOnce(t, a, domains)
}

// TestBlindStartPaysNothingItCannotFile: a first run (an empty warehouse: no probe) sends
// only site-overview calls until an answer names the month. Here the API fails every overview
// (503, free, after the client's retries), so no answer ever names it: the run pays for
// nothing, where it used to pay every site-similar call and file them under no month
// (month_unknown), to be paid again by the run that completes the month. The fault soak's
// seed 748585222 met the same waste when a lease was lost in a first run's first round trip.
func TestBlindStartPaysNothingItCannotFile(t *testing.T) {
	domains := atlastest.Domains(6)
	h := newHarness(t, atlastest.Options{}, domains, "  rate_limit: 50\n")
	h.setConfig("base_url: "+h.srv.URL, "base_url: "+refuseProxy(t, h.srv.URL, func(endpoint, _ string) bool { return endpoint == "site-overview" }))
	if code := h.run("run"); code == ExitOK {
		t.Fatalf("run: exit 0 with every overview refused\n%s%s", h.stdout, h.stderr)
	}
	if n := h.srv.Stats().Charged; n != 0 {
		t.Errorf("%d credits charged, want 0: no answer named the month, so nothing paid could be filed\n%s", n, h.stdout)
	}
	db := h.db()
	defer db.Close()
	if n := count(t, db, `SELECT count(*) FROM run_calls WHERE outcome = 'month_unknown'`); n != 0 {
		t.Errorf("%d charges filed under no month", n)
	}
}

// TestBlindStartLearnsItsMonthFromTheLastOverview: a first run short of known credits sends
// one overview alone (here refused, after its retries), holds the last overview back, and sends
// the one between through the gate: that answer names the month while it is the only overview
// outstanding. The gate must then send the calls it held (that domain's site-similar, the
// countries), not end as if no answer had named the month (it once read "known" before the
// answer was handled).
func TestBlindStartLearnsItsMonthFromTheLastOverview(t *testing.T) {
	domains := atlastest.Domains(3)
	h := newHarness(t, atlastest.Options{}, domains, "")
	h.setConfig("base_url: "+h.srv.URL, "base_url: "+refuseProxy(t, h.srv.URL, func(endpoint, domain string) bool {
		return endpoint == "site-overview" && domain == domains[0]
	}))
	_ = h.run("run") // exit 1: domains[0] failed; the held-back overview waits for the next run
	db := h.db()
	defer db.Close()
	if n := count(t, db, `SELECT count(*) FROM sites WHERE domain = ?`, domains[1]); n != 1 {
		t.Errorf("%s not loaded (%d rows): its site-similar call was never sent\n%s", domains[1], n, h.stdout)
	}
	if n := count(t, db, `SELECT count(*) FROM countries`); n == 0 {
		t.Errorf("countries not loaded\n%s", h.stdout)
	}
}
