package main

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/lease/leasetest"
)

// chargeLog is a proxy in front of one runner's simulator that records when each charged
// answer's request arrived and when its answer left: every charge is attributable and timed.
type chargeLog struct {
	URL     string
	mu      sync.Mutex
	charges []charge
}

type charge struct{ arrived, answered time.Time }

func newChargeLog(t *testing.T, target string) *chargeLog {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	l := &chargeLog{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived := time.Now()
		rw := &statusWriter{ResponseWriter: w}
		rp.ServeHTTP(rw, r)
		if rw.status == http.StatusOK && rw.Header().Get("X-Gateway-Credit-Cost") != "" && rw.Header().Get("X-Gateway-Credit-Cost") != "0" {
			l.mu.Lock()
			l.charges = append(l.charges, charge{arrived: arrived, answered: time.Now()})
			l.mu.Unlock()
		}
	}))
	t.Cleanup(srv.Close)
	l.URL = srv.URL
	return l
}

func (l *chargeLog) all() []charge {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]charge(nil), l.charges...)
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// TestCutOffRunnerStopsBeforeTakeover (issue 32, scenario 2): runner A, cut from the bucket
// (a proxy drops every byte) a few calls into its month, stops paying within the fence's
// margin; runner B takes the lease over only after its own wait, and every charge of A
// precedes every charge of B. Each runner has its own simulator, so every charge is A's or B's.
func TestCutOffRunnerStopsBeforeTakeover(t *testing.T) {
	gw := bucketGateway(t)
	domains := atlastest.Domains(20)
	const leaseTTL, margin = 6 * time.Second, 1500 * time.Millisecond // lease.TimingFor(6s)
	a := newHarness(t, atlastest.Options{}, domains, "  rate_limit: 5\n")
	aCharges := newChargeLog(t, a.srv.URL)
	a.setConfig("base_url: "+a.srv.URL, "base_url: "+aCharges.URL)
	px := leasetest.NewProxy(t, gw.Endpoint)
	withPublish(t, a, px.URL, "  lease_ttl: 6s\n")

	runA, outA := a.command("run")
	if err := runA.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = runA.Process.Kill() }()
	deadline := time.Now().Add(60 * time.Second)
	for len(aCharges.all()) < 5 {
		if time.Now().After(deadline) {
			t.Fatalf("runner A never paid 5 calls:\n%s", outA)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cut := time.Now()
	px.Cut()
	time.Sleep(leaseTTL + time.Second) // A's lease now looks expired by B's clock (B still watches it)

	b := newHarness(t, atlastest.Options{}, domains, "  rate_limit: 5\n")
	bCharges := newChargeLog(t, b.srv.URL)
	b.setConfig("base_url: "+b.srv.URL, "base_url: "+bCharges.URL)
	withPublish(t, b, gw.Endpoint, "  lease_ttl: 6s\n")
	bStart := time.Now()
	if code := b.run("run"); code != ExitOK {
		t.Fatalf("runner B: exit %d\n%s%s", code, b.stdout, b.stderr)
	}
	if !strings.Contains(b.stderr.String(), "took over an expired bucket lease") {
		t.Errorf("B's takeover was not logged:\n%s", b.stderr)
	}
	// B is done: heal A's cut. A, stopped since, saves what it paid (its last segment, its restore
	// copy) on fresh connections and exits, instead of waiting out the documented bound of a cut
	// that never heals (its last segment's minute, then the restore copy's 5 × 30 s).
	px.Heal()
	healed := time.Now()
	errA := runA.Wait()
	t.Logf("A exited %v after the heal", time.Since(healed).Round(time.Millisecond))
	if !strings.Contains(outA.String(), "answer log: writing to the bucket again") {
		t.Errorf("A's last segment did not reach the bucket after the heal:\n%s", outA)
	}
	if code := exitCodeOf(t, errA); code != ExitFailed {
		t.Errorf("runner A: exit %d, want %d (its lease lost)\n%s", code, ExitFailed, outA)
	}
	if !strings.Contains(outA.String(), "the bucket lease was lost") {
		t.Errorf("runner A does not say it lost the lease:\n%s", outA)
	}

	ac, bc := aCharges.all(), bCharges.all()
	if len(bc) == 0 {
		t.Fatal("runner B paid nothing")
	}
	var lastA time.Time
	afterCut := 0
	for _, c := range ac {
		if c.answered.After(lastA) {
			lastA = c.answered
		}
		if c.arrived.After(cut) {
			afterCut++
		}
	}
	firstB := bc[0].arrived
	for _, c := range bc {
		if c.arrived.Before(firstB) {
			firstB = c.arrived
		}
	}
	t.Logf("A paid %d (%d after the cut, the last %v after it); B started %v after the cut, paid %d from %v after the cut",
		len(ac), afterCut, lastA.Sub(cut).Round(time.Millisecond), bStart.Sub(cut).Round(time.Millisecond), len(bc), firstB.Sub(cut).Round(time.Millisecond))
	if !lastA.Before(firstB) {
		t.Errorf("A's last charge (answered %v after the cut) does not precede B's first (arrived %v after the cut)",
			lastA.Sub(cut), firstB.Sub(cut))
	}
	if bound := int(5*margin.Seconds()) + 3; afterCut > bound { // rate × margin, plus calls in flight (concurrency 16 at 5/s: bounded by the rate here)
		t.Errorf("A paid %d calls after the cut, want at most rate × margin + in flight = %d", afterCut, bound)
	}
}
