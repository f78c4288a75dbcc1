package main

import (
	"context"
	"database/sql"
	"encoding/base64"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sitewatch/internal/testenv"
	"sitewatch/pipeline/livestatus"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sitewatch/pipeline"
	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/metrics"
	"sitewatch/pipeline/publish/s3test"
	"sitewatch/pipeline/warehouse"
)

// hangListener is a TCP endpoint that accepts connections and never answers: the hung
// bucket (or webhook) of a network fault. accepted is closed at the first connection, first
// set just before.
type hangListener struct {
	addr     string
	accepted chan struct{}
	first    time.Time // when the first connection was accepted; read it once accepted is closed
	once     sync.Once
	count    atomic.Int32 // connections accepted so far
}

func newHangListener(t *testing.T) *hangListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &hangListener{addr: ln.Addr().String(), accepted: make(chan struct{})}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never read or answered
			mu.Unlock()
			h.count.Add(1)
			h.once.Do(func() { h.first = time.Now(); close(h.accepted) })
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return h
}

// withHungBucket points h's config at a bucket endpoint that never answers, with credentials
// from the environment (never the machine's own AWS setup).
func withHungBucket(t *testing.T, h *harness, hang *hangListener) {
	t.Helper()
	s3test.SetCredentials(t, "hang-access", "hang-secret-0c4d")
	h.setConfig("domains:\n", "publish:\n  url: s3://hung-bucket/sw\n  endpoint: http://"+hang.addr+
		"\n  region: us-east-1\n  path_style: true\ndomains:\n")
}

// runCtx runs `sitewatch <args> --config <cfg>` with ctx (a signal is ctx's cancellation, as
// main wires it) and returns the exit code, or fails the test when it does not return within
// limit.
func (h *harness) runCtx(ctx context.Context, limit time.Duration, args ...string) int {
	h.t.Helper()
	args = append(args[:1:1], append([]string{"--config", h.cfgPath}, args[1:]...)...)
	done := make(chan int, 1)
	env := h.env()
	go func() { done <- Main(ctx, args, env) }()
	select {
	case code := <-done:
		return code
	case <-time.After(limit):
		h.t.Fatalf("sitewatch %v did not return within %s", args, limit)
		return -1
	}
}

// TestHungBucketEndsOnSignal: a bucket endpoint that accepts TCP and never answers. The run
// loads the month, starts its upload, and a SIGTERM then ends the run at once (exit 1, the
// month loaded, the publish named as interrupted) instead of being ignored until kill -9.
// "At once" is timed from the signal, not the start (a loaded machine may take many seconds to
// load the month and to wait out the sync's requests to the hung bucket before it), against
// ten times signalBound, as a command's end after SIGTERM is; the run's guard is a hang's (2
// minutes).
func TestHungBucketEndsOnSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end; runs without -short")
	}
	hang := newHangListener(t)
	domains := atlastest.Domains(3)
	h := newHarness(t, atlastest.Options{}, domains, "")
	withHungBucket(t, h, hang)
	// Without the bucket lease, so that the first request the bucket sees is the upload
	// (TestHungBucketLeaseEndsOnSignal covers the lease a run takes before its first credit).
	h.setConfig("  path_style: true\n", "  path_style: true\n  lease: off\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	signalled := make(chan time.Time, 1)
	go func() {
		// The run first asks the bucket what it holds (those requests hang until the sync
		// gives up: publish.lease is off, so it goes on), then loads the month, then uploads:
		// the first connection after the whole month is loaded is the upload.
		// (Both waits end with the test, which cancels ctx, if the run never gets there.)
		live := livestatus.Path(filepath.Join(h.dir, "data", "w.duckdb"))
		for ; ctx.Err() == nil; time.Sleep(20 * time.Millisecond) {
			if s, err := livestatus.Read(live); err == nil && s != nil && s.Loaded == len(domains) {
				break
			}
		}
		for n := hang.count.Load(); ctx.Err() == nil && hang.count.Load() == n; {
			time.Sleep(10 * time.Millisecond)
		}
		if ctx.Err() != nil {
			return
		}
		signalled <- time.Now()
		cancel() // SIGTERM: the upload's connection is accepted and never answered
	}()
	start := time.Now()
	if code := h.runCtx(ctx, 2*time.Minute, "run", "--snapshot", testMonth); code != ExitFailed { // a hang guard
		t.Fatalf("exit %d after SIGTERM during a hung upload, want %d\n%s", code, ExitFailed, h.stdout)
	}
	select {
	case at := <-signalled:
		took := time.Since(at)
		t.Logf("the run ended %s after its start, %s after SIGTERM", time.Since(start).Round(time.Millisecond), took.Round(time.Millisecond))
		if took >= 10*signalBound {
			t.Errorf("the run ended %s after SIGTERM: it waited out the hung upload, not the signal (want within %v, %v with its wind-down on a loaded machine)", took.Round(time.Millisecond), signalBound, 10*signalBound)
		}
	default:
		t.Errorf("the run ended before the signal:\n%s%s", h.stdout, h.stderr)
	}
	if out := h.stdout.String(); !strings.Contains(out, "interrupted") {
		t.Errorf("the summary does not say the upload was interrupted:\n%s", out)
	}
	withDB(t, h, func(db *sql.DB) {
		if n := count(t, db, "SELECT count(*) FROM runs WHERE status = 'complete'"); n != 1 {
			t.Errorf("%d complete runs, want 1: the load must stay loaded", n)
		}
	})
}

// TestHungBucketLeaseEndsOnSignal: with the lease on, a run asks the hung bucket for its lease
// before the first credit; SIGTERM ends that wait at once, and nothing was spent. "At once" is
// counted, not timed (a loaded machine stretches the wind-down after the signal, which is no
// part of the bound): the signal ends the lease's request in flight and nothing asks the
// bucket again, where a request that ignored it would be sent again on a fresh connection at
// the lease client's 3 s first-byte deadline, five attempts in all.
func TestHungBucketLeaseEndsOnSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end; runs without -short")
	}
	hang := newHangListener(t)
	h := newHarness(t, atlastest.Options{}, atlastest.Domains(3), "")
	withHungBucket(t, h, hang)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	signalled := make(chan time.Time, 1)
	go func() {
		<-hang.accepted // the lease request is waiting on the bucket, which never answers
		signalled <- time.Now()
		cancel() // SIGTERM
	}()
	// A hang guard (the five attempts of a lease request that ignored the signal end by
	// themselves, under a minute): a loaded machine may take seconds to open the warehouse.
	if code := h.runCtx(ctx, 2*time.Minute, "run", "--snapshot", testMonth); code != ExitFailed {
		t.Fatalf("exit %d after SIGTERM while waiting for the lease, want %d\n%s%s", code, ExitFailed, h.stdout, h.stderr)
	}
	select {
	case at := <-signalled:
		t.Logf("the run ended %s after SIGTERM", time.Since(at).Round(time.Millisecond))
	default:
		t.Errorf("the run ended before the signal:\n%s%s", h.stdout, h.stderr)
	}
	if n := hang.count.Load(); n != 1 {
		t.Errorf("the hung bucket saw %d connections, want the lease request's one: the signal must end it, not leave it to be retried\n%s", n, h.stderr)
	}
	if n := h.srv.Stats().Charged; n != 0 {
		t.Errorf("%d credits charged, want 0: the lease comes before the first credit", n)
	}
}

// TestStatusWithHungBucket: `status` with a bucket that never answers says so within its
// bound (10 s) instead of hanging. Timed from the bucket's first connection, not the start (a
// loaded machine may take seconds to open the warehouse), against what a status without its
// bound would wait: the comparison's two attempts, each to its 10 s first-byte deadline. The
// bound's 10 s are a timer, which load does not stretch; what follows it (printing the rest)
// has the other 10 s.
func TestStatusWithHungBucket(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end; runs without -short")
	}
	hang := newHangListener(t)
	h := newHarness(t, atlastest.Options{}, atlastest.Domains(2), "")
	if code := h.run("run", "--snapshot", testMonth); code != ExitOK {
		t.Fatalf("run: exit %d\n%s", code, h.stdout)
	}
	withHungBucket(t, h, hang)
	statusSectionBound = productStatusBound // what a user's status holds to (TestMain raises it)
	t.Cleanup(func() { statusSectionBound = testStatusBound })
	if code := h.runCtx(context.Background(), 10*statusSectionBound, "status"); code != ExitOK { // a hang guard
		t.Fatalf("status: exit %d\n%s%s", code, h.stdout, h.stderr)
	}
	select {
	case <-hang.accepted:
		const unbounded = 2 * 10 * time.Second // collectPublish: MaxAttempts 2, FirstByte 10 s
		took := time.Since(hang.first)
		t.Logf("status ended %s after its first request to the bucket", took.Round(time.Millisecond))
		if took >= unbounded {
			t.Errorf("status ended %s after its first request to the hung bucket: it waited out the bucket's deadlines (%s), not its bound (%s)", took, unbounded, statusSectionBound)
		}
	default:
		t.Errorf("status never asked the bucket:\n%s", h.stdout)
	}
	if out := h.stdout.String(); !strings.Contains(out, "cannot compare with the bucket") || !strings.Contains(out, "recent runs") && !strings.Contains(out, testMonth) {
		t.Errorf("status does not show the runs and the bucket's failure:\n%s", out)
	}
}

// TestMetricsFileNamesTheMonthLoaded: a run on a fresh warehouse learns its month from its
// first answer; its metrics file shows that month and its loaded count, not {month=""} 0.
func TestMetricsFileNamesTheMonthLoaded(t *testing.T) {
	domains := atlastest.Domains(3)
	h := newHarness(t, atlastest.Options{}, domains, "")
	prom := filepath.Join(h.dir, "sitewatch.prom")
	if code := h.run("run", "--metrics-file", prom); code != ExitOK {
		t.Fatalf("run: exit %d\n%s", code, h.stdout)
	}
	b, err := os.ReadFile(prom)
	if err != nil {
		t.Fatal(err)
	}
	want := `sitewatch_domains_loaded{month="` + testMonth + `"} 3`
	if !strings.Contains(string(b), want) || strings.Contains(string(b), `month=""`) {
		t.Errorf("metrics file lacks %s (or has an empty month):\n%s", want, b)
	}
}

// TestWebhookEchoNeverLogsTheToken: a webhook that answers 500 or 404 with a body echoing the
// request (path and query, plain, escaped, base64, HTML) never puts the hook's token in the
// log or the output; the failure is still logged with its status.
func TestWebhookEchoNeverLogsTheToken(t *testing.T) {
	const token, query = "Xy9hookSECRET42", "sig-secret-8d1e"
	for _, status := range []int{http.StatusInternalServerError, http.StatusNotFound} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			w.WriteHeader(status)
			uri := req.URL.RequestURI()
			fmt.Fprintf(w, "no route for %s (%s) <a href=\"%s\">%s</a> b64:%s", uri, url.QueryEscape(uri),
				html.EscapeString(uri), req.URL.Path, base64.StdEncoding.EncodeToString([]byte(req.URL.Path)))
		}))
		h := newHarness(t, atlastest.Options{}, atlastest.Domains(2), "")
		h.extraEnv = map[string]string{config.EnvWebhookURL: srv.URL + "/services/T000/B000/" + token + "?sig=" + query}
		if code := h.run("run"); code != ExitOK {
			t.Fatalf("%d: exit %d\n%s", status, code, h.stdout)
		}
		srv.Close()
		out := h.stdout.String() + h.stderr.String()
		if !strings.Contains(out, fmt.Sprintf("answered %d", status)) {
			t.Errorf("%d: the failed notification is not logged:\n%s", status, tail(h.stderr.String(), 1500))
		}
		for _, leak := range []string{token, query, base64.StdEncoding.EncodeToString([]byte("/services/T000/B000/" + token))[:20]} {
			if strings.Contains(out, leak) {
				t.Errorf("%d: %q leaked into the output:\n%s", status, leak, tail(h.stderr.String(), 1500))
			}
		}
	}
}

// TestUserParquetFilesKept: `rebuild --snapshot M` and `run --refresh` rewrite the partitions
// of M but delete only the files sitewatch wrote (data_N.parquet); a user's backup.parquet in
// a partition, and any non-Parquet file, are kept.
func TestUserParquetFilesKept(t *testing.T) {
	h := newHarness(t, atlastest.Options{}, atlastest.Domains(2), "")
	if code := h.run("run", "--snapshot", testMonth); code != ExitOK {
		t.Fatalf("run: exit %d\n%s", code, h.stdout)
	}
	part := filepath.Join(h.dir, "data/parquet/sites/snapshot_month="+testMonth)
	data0, err := os.ReadFile(filepath.Join(part, "data_0.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	user := map[string][]byte{"backup.parquet": data0, "notes.txt": []byte("mine")}
	for _, args := range [][]string{{"rebuild", "--snapshot", testMonth}, {"run", "--snapshot", testMonth, "--refresh"}} {
		for name, b := range user {
			if err := os.WriteFile(filepath.Join(part, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		old := filepath.Join(part, "data_1.parquet") // an older layout's second part: ours
		if err := os.WriteFile(old, data0, 0o644); err != nil {
			t.Fatal(err)
		}
		if code := h.run(args...); code != ExitOK {
			t.Fatalf("%v: exit %d\n%s", args, code, h.stdout)
		}
		for name := range user {
			if _, err := os.Stat(filepath.Join(part, name)); err != nil {
				t.Errorf("%v deleted the user's %s: %v", args, name, err)
			}
		}
		if _, err := os.Stat(old); err == nil {
			t.Errorf("%v kept data_1.parquet, a part sitewatch wrote", args)
		}
		if !strings.Contains(h.stderr.String(), "backup.parquet") {
			t.Errorf("%v: no warning names the foreign file backup.parquet", args)
		}
	}
}

// TestMetricsFileCheckedBeforeAnyCall: a --metrics-file the run could not write at its end
// (missing folder, no .prom) is exit 2 before the first call, not a warning after the paid run.
func TestMetricsFileCheckedBeforeAnyCall(t *testing.T) {
	h := newHarness(t, atlastest.Options{}, atlastest.Domains(2), "")
	for _, f := range []string{filepath.Join(h.dir, "missing", "s.prom"), filepath.Join(h.dir, "s.txt")} {
		if code := h.run("run", "--metrics-file", f); code != ExitUsage {
			t.Errorf("--metrics-file %s: exit %d, want %d\n%s", f, code, ExitUsage, h.stderr)
		}
		if !strings.Contains(h.stderr.String(), "--metrics-file") {
			t.Errorf("--metrics-file %s: the error does not name the flag:\n%s", f, h.stderr)
		}
	}
	if n := h.srv.Stats().Requests; n != 0 {
		t.Errorf("%d calls made before the bad --metrics-file was refused", n)
	}
}

// TestLedgerEqualsChargedOnEveryStop: whatever stops a run, including the charged answer
// that triggers the stop, run_calls and runs.credits_spent equal what the server charged.
func TestLedgerEqualsChargedOnEveryStop(t *testing.T) {
	cases := []struct {
		name string
		opts atlastest.Options
		args []string
	}{
		{"LegacyV1", atlastest.Options{Legacy: true}, []string{"run", "--snapshot", testMonth}},
		{"LegacyV1MonthUnknown", atlastest.Options{Legacy: true}, []string{"run"}},
		{"BrokenHTML", atlastest.Options{Faults: atlastest.Faults{HTML200: 1}}, []string{"run", "--snapshot", testMonth}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.opts, atlastest.Domains(12), "")
			if code := h.run(tc.args...); code == ExitOK {
				t.Fatalf("exit 0, want a stop\n%s", h.stdout)
			}
			charged := int(h.srv.Stats().Charged)
			if charged == 0 {
				t.Fatal("the server charged nothing: the case tests nothing")
			}
			withDB(t, h, func(db *sql.DB) {
				ledger := count(t, db, "SELECT coalesce(sum(credits), 0) FROM run_calls")
				runs := count(t, db, "SELECT coalesce(sum(credits_spent), 0) FROM runs")
				if ledger != charged || runs != charged {
					t.Errorf("server charged %d, runs.credits_spent %d, run_calls %d: all must agree", charged, runs, ledger)
				}
			})
		})
	}
}

// TestRunWaitsForAPublishHoldingTheWarehouse: a sitewatch command (here a process named like
// `sitewatch publish`) holds the warehouse read-only when the monthly run starts; the run waits
// for it (at most wire.LockWait) and completes instead of failing "locked".
func TestRunWaitsForAPublishHoldingTheWarehouse(t *testing.T) {
	h := newHarness(t, atlastest.Options{}, atlastest.Domains(2), "")
	if code := h.run("run", "--snapshot", testMonth); code != ExitOK {
		t.Fatalf("first run: exit %d\n%s", code, h.stdout)
	}
	_, release := holdDuckDB(t, h, "sitewatch-publish")
	const hold = 2 * time.Second
	time.AfterFunc(hold, func() { release() }) // the publish ends
	start := time.Now()
	if code := h.run("run", "--snapshot", testMonth, "--refresh"); code != ExitOK {
		t.Fatalf("run while a publish held the warehouse: exit %d, want 0\n%s\n%s", code, h.stdout, tail(h.stderr.String(), 1500))
	}
	if took := time.Since(start); took < hold-200*time.Millisecond {
		t.Errorf("the run took %s: it cannot have waited for the %s hold", took, hold)
	}
	if !strings.Contains(h.stderr.String(), "waiting for the warehouse") {
		t.Errorf("the wait is not logged:\n%s", tail(h.stderr.String(), 1500))
	}
}

// TestDiskFullRecordsTheRealOutcome: a run that fails on a full disk (exit 1, its end not
// writable to the warehouse) is recorded with its real outcome, its month and the domains its
// earlier commits loaded, not as "abandoned … process died" with 0 loaded; its summary counts
// what was committed too.
func TestDiskFullRecordsTheRealOutcome(t *testing.T) {
	if runtime.GOOS != "linux" {
		testenv.Missing(t, "uses ulimit -f (RLIMIT_FSIZE) semantics of Linux")
	}
	domains := atlastest.Domains(80)
	h, _, _ := grownWatchlist(t, 3, domains, 4)
	code, msg := runFileSizeLimited(t, h, 256, "run")
	if code != ExitFailed {
		t.Fatalf("exit %d under a full disk, want 1\n%s", code, tail(msg, 3000))
	}
	wh, err := warehouse.Open(context.Background(), warehouse.Options{ // a writer closes the runs left open, as the next run does
		DuckDBPath: filepath.Join(h.dir, "data/w.duckdb"), ParquetDir: filepath.Join(h.dir, "data/parquet")})
	if err != nil {
		t.Fatal(err)
	}
	db := wh.DB()
	loaded := count(t, db, "SELECT count(*) FROM sites WHERE snapshot_month = ?", testMonth)
	var status, month string
	var runLoaded int
	if err := db.QueryRow(`SELECT status, snapshot_month, domains_loaded FROM runs ORDER BY started_at DESC LIMIT 1`).Scan(&status, &month, &runLoaded); err != nil {
		t.Fatal(err)
	}
	_ = wh.Close()
	t.Logf("limited run: status %s, month %q, %d loaded (sites hold %d)", status, month, runLoaded, loaded)
	if status != "failed" || month != testMonth || runLoaded != loaded {
		t.Errorf("runs row = (%s, %q, %d loaded), want (failed, %s, %d)", status, month, runLoaded, testMonth, loaded)
	}
	if want := fmt.Sprintf("%d of %d", loaded, len(domains)); !strings.Contains(msg, want) {
		t.Errorf("the summary does not say %q:\n%s", want, tail(msg, 2000))
	}
}

// similarOnlyMonth loads testMonth but for the site-similar answer of one domain (a run
// stopped by its credit cap), then lifts the cap: the rerun has only site-similar to fetch.
func similarOnlyMonth(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t, atlastest.Options{Rate: 50}, atlastest.Domains(3), "  rate_limit: 1\n  max_credits_per_run: 6\n")
	if code := h.run("run", "--snapshot", testMonth); code != ExitCredits {
		t.Fatalf("capped run: exit %d, want %d\n%s", code, ExitCredits, h.stdout)
	}
	withDB(t, h, func(db *sql.DB) {
		ov := count(t, db, "SELECT count(*) FROM raw_responses WHERE snapshot_month = ? AND endpoint = 'site-overview'", testMonth)
		sim := count(t, db, "SELECT count(*) FROM raw_responses WHERE snapshot_month = ? AND endpoint = 'site-similar'", testMonth)
		if ov != 3 || sim != 2 {
			t.Fatalf("after the capped run: %d overview and %d similar answers, want 3 and 2", ov, sim)
		}
	})
	h.setConfig("  max_credits_per_run: 6\n", "")
	return h
}

// TestSimilarOnlyRunBracketedByProbes: a run that fetches only site-similar answers (which
// carry no date) brackets them with a site-overview probe before and after (2 credits) and
// stores them only when both name the same month. After the API turned, no answer of the new
// month lands under the old month (the 24-hour no-probe window is gone).
func TestSimilarOnlyRunBracketedByProbes(t *testing.T) {
	t.Run("SameMonth", func(t *testing.T) {
		h := similarOnlyMonth(t)
		before := h.srv.Stats().Charged
		if code := h.run("run"); code != ExitOK {
			t.Fatalf("rerun: exit %d\n%s", code, h.stdout)
		}
		if got := h.srv.Stats().Charged - before; got != 3 {
			t.Errorf("the rerun charged %d credits, want 3 (1 site-similar between 2 probes)", got)
		}
		withDB(t, h, func(db *sql.DB) {
			if n := count(t, db, "SELECT count(*) FROM sites WHERE snapshot_month = ?", testMonth); n != 3 {
				t.Errorf("%d domains loaded in %s, want 3", n, testMonth)
			}
		})
	})
	t.Run("Turned", func(t *testing.T) {
		h := similarOnlyMonth(t)
		next := h.srv.TurnMonth()
		if code := h.run("run"); code != ExitOK {
			t.Fatalf("rerun after the turn: exit %d\n%s", code, h.stdout)
		}
		withDB(t, h, func(db *sql.DB) {
			if n := count(t, db, "SELECT count(*) FROM raw_responses WHERE snapshot_month = ? AND endpoint = 'site-similar'", testMonth); n != 2 {
				t.Errorf("%d site-similar answers under %s after the turn, want 2: an answer of %s was stored under it", n, testMonth, next)
			}
			if n := count(t, db, "SELECT count(*) FROM sites WHERE snapshot_month = ?", next); n != 3 {
				t.Errorf("%d domains loaded in %s, want 3", n, next)
			}
		})
	})
}

// TestSimilarDroppedWhenTheBracketBreaks: the API turns right after the site-similar answer
// of a bracketed run; the closing probe names the new month, so the answer (whose month
// cannot be told) is not stored, its credit is on the ledger as month_unknown, and the run
// reports the turn.
func TestSimilarDroppedWhenTheBracketBreaks(t *testing.T) {
	var armed atomic.Bool
	var once sync.Once
	var ms *mutatingServer
	ms = newMutatingServer(t, atlastest.Options{Rate: 50}, func(endpoint, _ string, body []byte) []byte {
		if endpoint == "site-similar" && armed.Load() {
			once.Do(func() { ms.sim.TurnMonth() })
		}
		return body
	})
	h := newHarness(t, atlastest.Options{Rate: 50}, atlastest.Domains(3), "  rate_limit: 1\n  max_credits_per_run: 6\n")
	h.setConfig(h.srv.URL, ms.URL)
	if code := h.run("run", "--snapshot", testMonth); code != ExitCredits {
		t.Fatalf("capped run: exit %d, want %d\n%s", code, ExitCredits, h.stdout)
	}
	h.setConfig("  max_credits_per_run: 6\n", "")
	armed.Store(true)
	code := h.run("run")
	withDB(t, h, func(db *sql.DB) {
		if n := count(t, db, "SELECT count(*) FROM raw_responses WHERE snapshot_month = ? AND endpoint = 'site-similar'", testMonth); n != 2 {
			t.Errorf("%d site-similar answers under %s, want 2: the unconfirmed one was stored", n, testMonth)
		}
		if n := count(t, db, "SELECT count(*) FROM run_calls WHERE outcome = 'month_unknown'"); n != 1 {
			t.Errorf("%d month_unknown ledger rows, want 1", n)
		}
		var status string
		if err := db.QueryRow("SELECT status FROM runs ORDER BY started_at DESC LIMIT 1").Scan(&status); err != nil {
			t.Fatal(err)
		}
		if status != "month_turned" {
			t.Errorf("rerun status %s (exit %d), want month_turned", status, code)
		}
	})
}

// TestScheduleGoesOnAfterAHungBucket: with a bucket that never answers, each run's upload
// ends at its bound and the schedule goes on running on its ticks (before, the first upload
// hung forever and nothing was scheduled again).
func TestScheduleGoesOnAfterAHungBucket(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end; runs without -short")
	}
	hang := newHangListener(t)
	h := newHarness(t, atlastest.Options{Month: time.Now().UTC().Format("2006-01")}, atlastest.Domains(2), "")
	withHungBucket(t, h, hang)
	cfg, err := config.Load(h.cfgPath, h.env().Getenv)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Schedule = "*/2 * * * * *"
	env := h.env()
	env.PublishBound = time.Second
	runs := &runLog{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Schedule(ctx, cfg, env.Env, pipeline.ScheduleOptions{OnRun: runs.record, Parse: secondsParser, RetryEvery: time.Second})
	}()
	waitFor(t, func() bool { return len(runs.get()) >= 2 })
	cancel()
	select {
	case <-done:
	case <-time.After(10 * signalBound): // a hang guard, as for a command after SIGTERM
		t.Fatalf("Schedule did not return within %v of SIGTERM", 10*signalBound)
	}
	if got := runs.get(); got[0] != "complete" {
		t.Errorf("runs %v: want the first complete (its upload failing apart)", got)
	}
}

// TestHealthzStuckPublish: while a run's upload hangs on a bucket that never answers,
// /healthz turns unhealthy once the upload outlasts its bound (the recorder's clock is moved
// on), though the month is complete and no run is in progress.
func TestHealthzStuckPublish(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end; runs without -short")
	}
	hang := newHangListener(t)
	h := newHarness(t, atlastest.Options{}, atlastest.Domains(2), "")
	withHungBucket(t, h, hang)
	cfg, err := config.Load(h.cfgPath, h.env().Getenv)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	now := time.Date(2026, 10, 20, 6, 0, 0, 0, time.UTC) // testMonth, past its grace
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	env := h.env()
	rec := sitewatchMetrics(clock)
	watchRuns(&env, rec)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = pipeline.Run(ctx, cfg, pipeline.RunOptions{Snapshot: testMonth}, env.Env)
	}()
	<-hang.accepted
	if ok, why := rec.Healthy(); !ok {
		t.Errorf("unhealthy as the upload starts: %s", why)
	}
	mu.Lock()
	now = now.Add(pipeline.AutoPublishBound + 2*time.Minute)
	mu.Unlock()
	if ok, why := rec.Healthy(); ok || !strings.Contains(why, "publish is stuck") {
		t.Errorf("healthy = %v (%s) with the upload hung past its bound, want unhealthy: the publish is stuck", ok, why)
	}
	cancel() // SIGTERM
	<-done
}

// sitewatchMetrics is the recorder `schedule --listen` uses, on clock.
func sitewatchMetrics(clock func() time.Time) *metrics.Recorder {
	return metrics.New(metrics.Options{Now: clock})
}

// TestClosingProbeRetried: the closing probe of a bracketed run fails (a broken body, and
// again on the client's one refetch); the probe is made again instead of dropping the
// site-similar answer it holds (already paid for): the answer is stored, nothing is left
// month_unknown, and the rerun costs the bracket plus the two broken answers.
func TestClosingProbeRetried(t *testing.T) {
	var armed atomic.Bool
	var overviews atomic.Int32
	ms := newMutatingServer(t, atlastest.Options{Rate: 50}, func(endpoint, _ string, body []byte) []byte {
		// The closing probe's answer and the client's one refetch of it, cut short.
		if n := int32(0); endpoint == "site-overview" && armed.Load() {
			if n = overviews.Add(1); n == 2 || n == 3 {
				return body[:len(body)/2]
			}
		}
		return body
	})
	h := newHarness(t, atlastest.Options{Rate: 50}, atlastest.Domains(3), "  rate_limit: 1\n  max_credits_per_run: 6\n")
	h.setConfig(h.srv.URL, ms.URL)
	if code := h.run("run", "--snapshot", testMonth); code != ExitCredits {
		t.Fatalf("capped run: exit %d, want %d\n%s", code, ExitCredits, h.stdout)
	}
	h.setConfig("  max_credits_per_run: 6\n", "")
	armed.Store(true)
	before := ms.sim.Stats().Charged
	if code := h.run("run"); code != ExitOK {
		t.Fatalf("rerun: exit %d\n%s%s", code, h.stdout, h.stderr)
	}
	if got := ms.sim.Stats().Charged - before; got != 5 {
		t.Errorf("the rerun charged %d credits, want 5 (2 probes, 1 site-similar, 2 broken closing answers)", got)
	}
	withDB(t, h, func(db *sql.DB) {
		if n := count(t, db, "SELECT count(*) FROM run_calls WHERE outcome = 'month_unknown'"); n != 0 {
			t.Errorf("%d month_unknown ledger rows, want 0: the held answer was dropped", n)
		}
		if n := count(t, db, "SELECT count(*) FROM sites WHERE snapshot_month = ?", testMonth); n != 3 {
			t.Errorf("%d domains loaded in %s, want 3", n, testMonth)
		}
	})
}
