package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/warehouse"
)

// firstAnswerGate counts the paid calls (those with url=, or country-metadata) in flight
// before the first of them is answered (1 when a lone probe goes first), and the most in
// flight while a country-metadata call is (1 when it goes alone).
type firstAnswerGate struct {
	mu                        sync.Mutex
	inFlight, before, country int
	countries                 int // country-metadata calls in flight
	answered                  bool
}

func (g *firstAnswerGate) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		isCountry := strings.Contains(r.URL.Path, "country")
		paid := r.URL.Query().Get("url") != "" || isCountry
		if paid {
			g.mu.Lock()
			g.inFlight++
			if isCountry {
				g.countries++
			}
			if !g.answered {
				g.before = max(g.before, g.inFlight)
			}
			if g.countries > 0 {
				g.country = max(g.country, g.inFlight)
			}
			g.mu.Unlock()
		}
		next.ServeHTTP(w, r)
		if paid {
			g.mu.Lock()
			g.inFlight--
			if isCountry {
				g.countries--
			}
			g.answered = true
			g.mu.Unlock()
		}
	})
}

// frontHarness puts a gate in front of h's simulator and points h's config at it.
func frontHarness(t *testing.T, h *harness) *firstAnswerGate {
	t.Helper()
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
	return gate
}

// A month held without its country-metadata: the resuming run sends country-metadata first
// with the domains' calls, not alone before them.
func TestRunCountriesBesideTheRest(t *testing.T) {
	opts := atlastest.Options{LatencyMin: 300 * time.Millisecond, LatencyMax: 300 * time.Millisecond}
	all := atlastest.Domains(6)
	h := newHarness(t, opts, all[:3], "")
	if code := h.run("run"); code != ExitOK {
		t.Fatalf("first run exit %d\n%s", code, tail(h.stderr.String(), 2000))
	}
	wh, err := warehouse.Open(context.Background(), warehouse.Options{DuckDBPath: filepath.Join(h.dir, "data/w.duckdb")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wh.DB().Exec(`DELETE FROM raw_responses WHERE endpoint = 'country-metadata'`); err != nil {
		t.Fatal(err)
	}
	if err := wh.Close(); err != nil {
		t.Fatal(err)
	}
	cfg, _ := os.ReadFile(h.cfgPath)
	more := strings.Replace(string(cfg), fmt.Sprintf("  - %q\n", all[2]), fmt.Sprintf("  - %q\n  - %q\n  - %q\n  - %q\n", all[2], all[3], all[4], all[5]), 1)
	if err := os.WriteFile(h.cfgPath, []byte(more), 0o644); err != nil {
		t.Fatal(err)
	}
	gate := frontHarness(t, h)
	if code := h.run("run"); code != ExitOK {
		t.Fatalf("resuming run exit %d\n%s", code, tail(h.stderr.String(), 3000))
	}
	gate.mu.Lock()
	defer gate.mu.Unlock()
	if gate.country < 2 {
		t.Errorf("%d paid call(s) in flight with country-metadata: it went alone", gate.country)
	}
}

// A first run (no month held, no --snapshot) with two sources sends its calls together: the
// month is learned from the first site-overview answer, not from a lone probe before the rest.
func TestRunFirstMonthWithoutLoneProbe(t *testing.T) {
	opts := atlastest.Options{LatencyMin: 300 * time.Millisecond, LatencyMax: 300 * time.Millisecond}
	domains := atlastest.Domains(6) // 13 calls
	h := sourcesHarness(t, opts, domains, 5, time.Now().Add(time.Hour))
	gate := frontHarness(t, h)
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
