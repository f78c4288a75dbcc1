package main

import (
	"database/sql"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"sitewatch/pipeline/atlas/atlastest"
)

// firstAnswerGate counts the paid calls (those with url=, or country-metadata) in flight
// before the first of them is answered: 1 when a lone probe goes first.
type firstAnswerGate struct {
	mu               sync.Mutex
	inFlight, before int
	answered         bool
}

func (g *firstAnswerGate) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paid := r.URL.Query().Get("url") != "" || strings.Contains(r.URL.Path, "country")
		if paid {
			g.mu.Lock()
			g.inFlight++
			if !g.answered {
				g.before = max(g.before, g.inFlight)
			}
			g.mu.Unlock()
		}
		next.ServeHTTP(w, r)
		if paid {
			g.mu.Lock()
			g.inFlight--
			g.answered = true
			g.mu.Unlock()
		}
	})
}

// A first run (no month held, no --snapshot) with two sources sends its calls together: the
// month is learned from the first site-overview answer, not from a lone probe before the rest.
func TestRunFirstMonthWithoutLoneProbe(t *testing.T) {
	opts := atlastest.Options{LatencyMin: 300 * time.Millisecond, LatencyMax: 300 * time.Millisecond}
	domains := atlastest.Domains(6) // 13 calls
	h := sourcesHarness(t, opts, domains, 5, time.Now().Add(time.Hour))
	target, err := url.Parse(h.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	gate := &firstAnswerGate{}
	front := httptest.NewServer(gate.wrap(httputil.NewSingleHostReverseProxy(target)))
	t.Cleanup(front.Close)
	cfg, err := os.ReadFile(h.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.cfgPath, []byte(strings.ReplaceAll(string(cfg), h.srv.URL, front.URL)), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := h.run("run"); code != ExitOK {
		t.Fatalf("run exit %d\n%s\n%s", code, h.stdout, tail(h.stderr.String(), 3000))
	}
	gate.mu.Lock()
	before := gate.before
	gate.mu.Unlock()
	if before < 2 {
		t.Errorf("%d paid call(s) in flight before the first answer: a lone probe went first", before)
	}
	if got := h.srv.Stats().Charged; got != int64(2*len(domains)+1) {
		t.Errorf("charged %d, want %d (every call once)", got, 2*len(domains)+1)
	}
	withDB(t, h, func(db *sql.DB) {
		if n := count(t, db, `SELECT count(*) FROM sites WHERE snapshot_month = '`+testMonth+`'`); n != len(domains) {
			t.Errorf("%d domains loaded under %s, want %d", n, testMonth, len(domains))
		}
		if n := count(t, db, `SELECT count(*) FROM run_calls WHERE snapshot_month <> '`+testMonth+`'`); n != 0 {
			t.Errorf("%d answers on the ledger under another month than %s", n, testMonth)
		}
	})
}
