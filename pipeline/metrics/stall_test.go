package metrics

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

// TestHealthzStuck: /healthz turns unhealthy when a run shows no progress, or a publish does
// not end, within its bound, however complete the months are; progress restarts the clock.
func TestHealthzStuck(t *testing.T) {
	clk := &clock{t: day("2026-11-10T06:00:00Z")}
	r := New(Options{Now: clk.Now, StallBound: 10 * time.Minute})
	if err := r.MonthComplete("2026-11", clk.Now()); err != nil {
		t.Fatal(err)
	}
	step := func(d time.Duration) { clk.Set(clk.Now().Add(d)) }
	healthy := func(want bool, why string) {
		t.Helper()
		if ok, reason := r.Healthy(); ok != want {
			t.Errorf("%s: healthy = %v (%s), want %v", why, ok, reason, want)
		}
	}
	r.RunStarted("2026-11", 10, clk.Now())
	step(9 * time.Minute)
	healthy(true, "a run 9 min in")
	r.Progress(Progress{Loaded: 1, Requests: map[int]int64{200: 2}})
	step(9 * time.Minute)
	healthy(true, "9 min after an answer")
	r.Progress(Progress{Loaded: 1, Requests: map[int]int64{200: 2}}) // the ticker's report: nothing new
	step(2 * time.Minute)
	healthy(false, "11 min without an answer")
	if _, reason := r.Healthy(); !strings.Contains(reason, "run is stuck") {
		t.Errorf("reason %q does not say the run is stuck", reason)
	}
	r.RunFinished("complete", clk.Now())
	healthy(true, "run finished")
	r.Phase("publish", 5*time.Minute)
	step(4 * time.Minute)
	healthy(true, "a publish 4 min in")
	step(2 * time.Minute)
	healthy(false, "a publish past its 5 min bound")
	r.Phase("", 0)
	healthy(true, "publish ended")
}

// TestLoadedNamesTheMonthLearnt: a run started before its month was known (fresh warehouse)
// reports the month its answers named, and its count, not {month=""} 0.
func TestLoadedNamesTheMonthLearnt(t *testing.T) {
	r := New(Options{})
	r.RunStarted("", 200, day("2026-11-02T06:00:00Z"))
	r.Progress(Progress{Month: "2026-11", Loaded: 150})
	r.MonthLoaded("2026-11", 200)
	r.RunFinished("complete", day("2026-11-02T07:00:00Z"))
	path := t.TempDir() + "/m.prom"
	if err := r.WriteTextfile(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fams := parse(t, bytes.NewReader(b))
	if got := value(t, fams, "sitewatch_domains_loaded", "month", "2026-11"); got != 200 {
		t.Errorf("loaded{month=2026-11} = %v, want 200", got)
	}
	if got := value(t, fams, "sitewatch_domains_total", "month", "2026-11"); got != 200 {
		t.Errorf("total{month=2026-11} = %v, want 200", got)
	}
	if _, ok := fams.Value("sitewatch_domains_loaded", "month", ""); ok {
		t.Errorf("a series with an empty month is still exported")
	}
}
