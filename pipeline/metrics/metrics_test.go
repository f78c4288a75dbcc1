package metrics

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a controllable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func day(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func parse(t *testing.T, r io.Reader) Families {
	t.Helper()
	fams, err := ParseText(r)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// value returns the value of the sample of name whose labels include the label/value pairs.
func value(t *testing.T, fams Families, name string, labels ...string) float64 {
	t.Helper()
	v, ok := fams.Value(name, labels...)
	if !ok {
		t.Fatalf("no sample of %s with labels %v", name, labels)
	}
	return v
}

func scrape(t *testing.T, url string) Families {
	t.Helper()
	fams, err := Scrape(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// TestRecorderOverHTTP feeds a run and a second one through the recorder and scrapes the real
// listener, checking counters add deltas across Progress calls and runs.
func TestRecorderOverHTTP(t *testing.T) {
	clk := &clock{t: day("2026-11-02T06:00:00Z")}
	r := New(Options{Now: clk.Now})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, err := r.Serve(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + addr.String()

	start := clk.Now()
	r.RunStarted("2026-11", 28, start)
	r.Progress(Progress{Loaded: 5, Requests: map[int]int64{200: 10, 429: 2}, RateLimited: 2, Retries: 2, CreditsSpent: 10, CreditsLeft: 490})
	f := scrape(t, url)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"sitewatch_run_in_progress", nil, 1},
		{"sitewatch_runs_total", []string{"outcome", "stopped_credits"}, 0},
		{"sitewatch_domains_total", []string{"month", "2026-11"}, 28},
		{"sitewatch_domains_loaded", []string{"month", "2026-11"}, 5},
		{"sitewatch_requests_total", []string{"code", "200"}, 10},
		{"sitewatch_requests_total", []string{"code", "429"}, 2},
		{"sitewatch_credits_remaining", nil, 490},
		{"sitewatch_last_run_start_timestamp_seconds", nil, float64(start.Unix())},
	} {
		if got := value(t, f, c.name, c.labels...); got != c.want {
			t.Errorf("during the run: %s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if _, ok := f["go_goroutines"]; !ok {
		t.Error("the Go collector's metrics are missing")
	}

	r.Progress(Progress{Loaded: 28, Requests: map[int]int64{200: 56, 429: 3}, RateLimited: 3, Retries: 3, CreditsSpent: 56, CreditsLeft: 444})
	end := start.Add(90 * time.Second)
	r.RunFinished("complete", end)
	if err := r.MonthComplete("2026-11", end); err != nil {
		t.Fatal(err)
	}
	// A second run of the month: up to date after one call; its counters start from zero.
	r.RunStarted("2026-11", 28, end.Add(time.Hour))
	r.Progress(Progress{Loaded: 28, Requests: map[int]int64{200: 1}, CreditsSpent: 1, CreditsLeft: 443})
	r.RunFinished("up_to_date", end.Add(time.Hour+2*time.Second))

	f = scrape(t, url)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"sitewatch_runs_total", []string{"outcome", "complete"}, 1},
		{"sitewatch_runs_total", []string{"outcome", "up_to_date"}, 1},
		{"sitewatch_requests_total", []string{"code", "200"}, 57},
		{"sitewatch_requests_total", []string{"code", "429"}, 3},
		{"sitewatch_rate_limited_total", nil, 3},
		{"sitewatch_retries_total", nil, 3},
		{"sitewatch_credits_spent_total", nil, 57},
		{"sitewatch_credits_remaining", nil, 443},
		{"sitewatch_run_in_progress", nil, 0},
		{"sitewatch_domains_loaded", []string{"month", "2026-11"}, 28},
		{"sitewatch_last_run_duration_seconds", nil, 2},
		{"sitewatch_run_duration_seconds", nil, 2}, // sample count
		{"sitewatch_last_run_end_timestamp_seconds", nil, float64(end.Add(time.Hour + 2*time.Second).Unix())},
		{"sitewatch_last_complete_month_timestamp_seconds", nil, float64(day("2026-11-01T00:00:00Z").Unix())},
		{"sitewatch_last_complete_month_info", []string{"month", "2026-11"}, 1},
		{"sitewatch_healthy", nil, 1},
	} {
		if got := value(t, f, c.name, c.labels...); got != c.want {
			t.Errorf("after two runs: %s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}

	cancel()
	waitClosed(t, url)
}

// waitClosed fails unless the server at url stops answering: within a minute, a hang guard (a
// loaded machine may take seconds to shut it down).
func waitClosed(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url + "/healthz")
		if err != nil {
			return
		}
		resp.Body.Close()
		time.Sleep(20 * time.Millisecond)
	}
	t.Error("the server still answers a minute after its context ended")
}

func TestNewMonthResetsDomainSeries(t *testing.T) {
	r := New(Options{})
	r.RunStarted("2026-10", 20, time.Now())
	r.Progress(Progress{Loaded: 20})
	r.RunStarted("2026-11", 21, time.Now())
	fams := gather(t, r)
	for _, m := range fams["sitewatch_domains_total"].GetMetric() {
		if m.GetLabel()[0].GetValue() != "2026-11" {
			t.Errorf("a series of %s is still exported", m.GetLabel()[0].GetValue())
		}
	}
	if got := value(t, fams, "sitewatch_domains_loaded", "month", "2026-11"); got != 0 {
		t.Errorf("loaded of the new month = %v, want 0", got)
	}
}

func gather(t *testing.T, r *Recorder) Families {
	t.Helper()
	list, err := r.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := Families{}
	for _, mf := range list {
		out[mf.GetName()] = mf
	}
	return out
}

func TestMonthComplete(t *testing.T) {
	r := New(Options{})
	if err := r.MonthComplete("November", time.Now()); err == nil {
		t.Error("a month that is not YYYY-MM was accepted")
	}
	_ = r.MonthComplete("2026-11", time.Now())
	_ = r.MonthComplete("2026-10", time.Now()) // older: ignored
	fams := gather(t, r)
	if got := value(t, fams, "sitewatch_last_complete_month_timestamp_seconds"); got != float64(day("2026-11-01T00:00:00Z").Unix()) {
		t.Errorf("last complete month = %v, want 2026-11-01", time.Unix(int64(got), 0).UTC())
	}
	if n := len(fams["sitewatch_last_complete_month_info"].GetMetric()); n != 1 {
		t.Errorf("%d info series, want 1", n)
	}
}

func TestHealthz(t *testing.T) {
	for _, tc := range []struct {
		name     string
		now      string
		complete string // "" none
		grace    time.Duration
		want     int
		inBody   string
	}{
		{"WithinGracePreviousComplete", "2026-11-03T23:59:59Z", "2026-10", 0, 200, "ok"},
		{"WithinGraceNothingComplete", "2026-11-01T00:00:00Z", "", 0, 503, "no complete month is recorded; 2026-10 should be complete since 2026-10-04T00:00:00Z"},
		{"PastGraceMonthMissing", "2026-11-04T00:00:00Z", "2026-10", 0, 503, "the latest complete month is 2026-10; 2026-11 should be complete since 2026-11-04T00:00:00Z"},
		{"PastGraceMonthComplete", "2026-11-20T00:00:00Z", "2026-11", 0, 200, "ok"},
		{"ShortGrace", "2026-11-01T02:00:00Z", "2026-10", time.Hour, 503, "health_grace 1h0m0s"},
		{"NewYear", "2027-01-02T00:00:00Z", "2026-12", 0, 200, "ok"},
		{"NewYearLate", "2027-01-02T00:00:00Z", "2026-11", 0, 503, "2026-12 should be complete since 2026-12-04T00:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &clock{t: day(tc.now)}
			r := New(Options{Now: clk.Now, HealthGrace: tc.grace})
			if tc.complete != "" {
				_ = r.MonthComplete(tc.complete, clk.Now())
			}
			rec := httptestRecorder(t, r, "/healthz")
			if rec.code != tc.want || !strings.Contains(rec.body, tc.inBody) {
				t.Errorf("/healthz = %d %q, want %d containing %q", rec.code, rec.body, tc.want, tc.inBody)
			}
		})
	}
}

type answer struct {
	code int
	body string
}

// httptestRecorder serves one request on a real loopback listener.
func httptestRecorder(t *testing.T, r *Recorder, path string) answer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, err := r.Serve(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr.String() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, string(b)}
}

func TestServeAddressInUse(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := New(Options{})
	addr, err := r.Serve(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(Options{}).Serve(ctx, addr.String())
	if err == nil || !strings.Contains(err.Error(), addr.String()) || !strings.Contains(err.Error(), "--listen") {
		t.Errorf("second Serve on %s: %v, want an error naming the address and --listen", addr, err)
	}
}

func TestWriteTextfile(t *testing.T) {
	dir := t.TempDir()
	r := New(Options{})
	r.RunStarted("2026-11", 3, time.Now())
	r.Progress(Progress{Loaded: 3, Requests: map[int]int64{200: 6}, CreditsSpent: 6, CreditsLeft: 94})
	r.RunFinished("complete", time.Now())
	path := filepath.Join(dir, "sitewatch.prom")
	if err := r.WriteTextfile(path); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fams := parse(t, f)
	if got := value(t, fams, "sitewatch_credits_spent_total"); got != 6 {
		t.Errorf("credits spent = %v, want 6", got)
	}
	for name := range fams {
		if !strings.HasPrefix(name, "sitewatch_") {
			t.Errorf("the textfile holds %s: node_exporter has its own Go and process metrics, they would clash", name)
		}
	}
	if _, ok := fams["sitewatch_healthy"]; ok {
		t.Error("the textfile holds sitewatch_healthy, which only the daemon can know")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%d files in the directory, want only the .prom (no temporary left)", len(entries))
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644 so node_exporter's user can read it", fi.Mode().Perm())
	}
	if err := r.WriteTextfile(filepath.Join(dir, "sitewatch.txt")); err == nil || !strings.Contains(err.Error(), ".prom") {
		t.Errorf("a textfile not ending in .prom: %v, want an error saying why", err)
	}
}

func TestNilRecorder(t *testing.T) {
	var r *Recorder
	r.RunStarted("2026-11", 1, time.Now())
	r.Progress(Progress{Loaded: 1})
	r.RunFinished("complete", time.Now())
	if err := r.MonthComplete("2026-11", time.Now()); err != nil {
		t.Error(err)
	}
	if err := r.WriteTextfile("x.prom"); err != nil {
		t.Error(err)
	}
}

func TestScrapeErrors(t *testing.T) {
	if _, err := ParseText(strings.NewReader("sitewatch_x{ 1\n")); err == nil {
		t.Error("garbage parsed")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, err := New(Options{}).Serve(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Scrape(ctx, "http://"+addr.String()+"/nothing-here"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("Scrape of a 404: %v, want an error naming the status", err)
	}
	if _, ok := scrape(t, "http://"+addr.String()).Value("sitewatch_no_such_metric"); ok {
		t.Error("Value found a metric that does not exist")
	}
}
