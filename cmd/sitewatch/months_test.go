package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sitewatch/pipeline"
	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/warehouse"
)

// TestMonthTurnsMidRun: the API turns to the next month during a run. Every answer is stored
// under its own month (no row under a month its data is not for), the run stops and says so
// (exit 1, status month_turned), the old month stays visibly incomplete, and a rerun
// completes the new month paying only for what it lacks.
func TestMonthTurnsMidRun(t *testing.T) {
	domains := atlastest.Domains(24)
	h := newHarness(t, atlastest.Options{LatencyMin: 20 * time.Millisecond, LatencyMax: 60 * time.Millisecond}, domains, "  rate_limit: 40\n")
	next := nextMonth(testMonth)
	done := make(chan int, 1)
	go func() { done <- h.run("run") }()
	waitFor(t, func() bool { return h.srv.Stats().Charged >= 12 })
	if got := h.srv.TurnMonth(); got != next {
		t.Fatalf("TurnMonth = %s, want %s", got, next)
	}
	code := <-done
	out := h.stdout.String()
	if code != ExitFailed || !strings.Contains(out, "month_turned") || !strings.Contains(out, "turned to "+next) {
		t.Fatalf("exit %d, want %d with a month_turned summary:\n%s", code, ExitFailed, out)
	}
	var oldLoaded int
	withDB(t, h, func(db *sql.DB) {
		if n := count(t, db, "SELECT count(*) FROM sites WHERE traffic_period <> snapshot_month"); n != 0 {
			t.Errorf("%d sites rows are stored under a month their data is not for", n)
		}
		oldLoaded = count(t, db, "SELECT count(*) FROM sites WHERE snapshot_month = ?", testMonth)
		if oldLoaded == 0 || oldLoaded == len(domains) {
			t.Errorf("%s has %d of %d domains: the turn did not land mid-run", testMonth, oldLoaded, len(domains))
		}
		if n := count(t, db, "SELECT count(*) FROM runs WHERE status = 'month_turned' AND snapshot_month = ?", testMonth); n != 1 {
			t.Errorf("runs month_turned for %s = %d, want 1", testMonth, n)
		}
	})

	// What the new month lacks before the rerun: the calls it holds no answer for.
	const heldCalls = "SELECT count(*) FROM (SELECT DISTINCT domain, endpoint FROM raw_responses WHERE snapshot_month = ?)"
	full := 2*len(domains) + 1
	var lacking int
	withDB(t, h, func(db *sql.DB) { lacking = full - count(t, db, heldCalls, next) })
	charged := h.srv.Stats().Charged
	if code := h.run("run"); code != ExitOK {
		t.Fatalf("rerun exit %d\n%s", code, h.stdout)
	}
	withDB(t, h, func(db *sql.DB) {
		if n := count(t, db, "SELECT count(*) FROM sites WHERE snapshot_month = ?", next); n != len(domains) {
			t.Errorf("%s has %d sites after the rerun, want %d", next, n, len(domains))
		}
		if n := count(t, db, "SELECT count(*) FROM sites WHERE snapshot_month = ?", testMonth); n != oldLoaded {
			t.Errorf("%s changed from %d to %d sites: the old month must stay as it was", testMonth, oldLoaded, n)
		}
		if n := count(t, db, heldCalls, next); n != full {
			t.Errorf("%s holds answers to %d calls after the rerun, want all %d", next, n, full)
		}
	})
	// The rerun pays what the month lacked; a month lacking only site-similar answers is
	// bracketed by two probes of held overviews (docs/design.md, "The probe"), nothing else.
	got := int(h.srv.Stats().Charged - charged)
	if got < lacking || got > lacking+2 {
		t.Errorf("rerun charged %d, want the %d calls %s lacked (plus at most a bracket's 2 probes)", got, lacking, next)
	}
	t.Logf("%s lacked %d of %d calls; the rerun charged %d", next, lacking, full, got)
}

// TestScheduleWaitsForNewData: at a tick the API still serves a month completed before it
// ("no new data yet"). The schedule probes again every retry_every, 1 credit per attempt,
// until the API turns; then it loads the new month once and waits for the next tick.
func TestScheduleWaitsForNewData(t *testing.T) {
	domains := atlastest.Domains(5)
	h := newHarness(t, atlastest.Options{}, domains, "")
	if code := h.run("run"); code != ExitOK {
		t.Fatalf("first run exit %d\n%s", code, h.stdout)
	}
	full := int64(2*len(domains) + 1)
	time.Sleep(2 * time.Second)
	// A daily tick in the last two seconds, after the month was completed (and after the run
	// started: the cron expression has whole seconds, so the tick is truncated to one).
	tick := time.Now().UTC().Add(-time.Second).Truncate(time.Second)
	runs := runLog{onRun: func(n int, sum *pipeline.Summary) {
		if n == 3 {
			h.srv.TurnMonth()
		}
	}}
	daily := fmt.Sprintf("%d %d %d * * *", tick.Second(), tick.Minute(), tick.Hour())
	stop := scheduleRun(t, h, daily, pipeline.ScheduleOptions{OnRun: runs.record, RetryEvery: 300 * time.Millisecond, Parse: secondsParser})
	deadline := time.Now().Add(90 * time.Second)
	for len(runs.get()) < 4 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if len(runs.get()) < 4 {
		stop()
		t.Fatalf("runs = %v after 90s, want 4\n%s", runs.get(), tail(h.stderr.String(), 3000))
	}
	time.Sleep(1200 * time.Millisecond)
	stop()
	got := runs.get()
	want := []string{pipeline.StatusUpToDate, pipeline.StatusUpToDate, pipeline.StatusUpToDate, pipeline.StatusComplete}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("runs = %v, want %v", got, want)
	}
	if charged, want := h.srv.Stats().Charged, 2*full+3; charged != want {
		t.Errorf("charged %d, want %d: a month each, plus 1 credit per attempt while waiting", charged, want)
	}
}

func nextMonth(m string) string {
	t, _ := time.Parse("2006-01", m)
	return t.AddDate(0, 1, 0).Format("2006-01")
}

// TestUpToDateCompletesAMissingExport: a month complete in DuckDB whose Parquet export never
// happened (the process was killed between its last commit and the export) is exported by the
// up-to-date rerun, which rewrites no row and spends at most the probe's credit.
func TestUpToDateCompletesAMissingExport(t *testing.T) {
	h := newHarness(t, atlastest.Options{}, atlastest.Domains(3), "")
	if code := h.run("run"); code != ExitOK {
		t.Fatalf("run exit %d\n%s", code, h.stdout)
	}
	sites := filepath.Join(h.dir, "data/parquet/sites")
	if err := os.RemoveAll(sites); err != nil {
		t.Fatal(err)
	}
	charged := h.srv.Stats().Charged
	if code := h.run("run"); code != ExitOK || !strings.Contains(h.stdout.String(), "up to date") {
		t.Fatalf("rerun exit %d\n%s", code, h.stdout)
	}
	if got := h.srv.Stats().Charged - charged; got > 1 {
		t.Errorf("rerun charged %d, want at most 1", got)
	}
	if files, _ := filepath.Glob(filepath.Join(sites, "snapshot_month="+testMonth, "*.parquet")); len(files) != 1 {
		t.Errorf("sites Parquet after the up-to-date rerun: %v, want the month exported again", files)
	}
}

// TestResumeWithoutProbe: a month that lacks only site-similar answers (they carry no date)
// is resumed between two probes, however fresh its newest overview (issue 23 item 6: the
// 24-hour no-probe window let answers of a new month land under the old one): the rerun pays
// the missing call and 2 probe credits, a minute or a day after the run.
func TestResumeWithoutProbe(t *testing.T) {
	domains := atlastest.Domains(4)
	h := newHarness(t, atlastest.Options{}, domains, "")
	if code := h.run("run"); code != ExitOK {
		t.Fatalf("run exit %d\n%s", code, h.stdout)
	}
	dropSimilar := func() {
		t.Helper()
		withWritableDB(t, h, func(db *sql.DB) {
			for _, q := range []string{
				`DELETE FROM raw_responses WHERE domain = ? AND endpoint = 'site-similar'`,
				`DELETE FROM sites WHERE domain = ?`, `DELETE FROM similar_sites WHERE domain = ?`,
			} {
				if _, err := db.Exec(q, domains[1]); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	for _, tc := range []struct {
		name    string
		later   time.Duration
		charged int64
	}{{"Fresh", 0, 3}, {"DayOld", 25 * time.Hour, 3}} {
		dropSimilar()
		charged := h.srv.Stats().Charged
		env := h.env()
		env.Now = func() time.Time { return time.Now().Add(tc.later) }
		args := []string{"run", "--config", h.cfgPath}
		if code := Main(context.Background(), args, env); code != ExitOK {
			t.Fatalf("%s: exit %d\n%s", tc.name, code, h.stdout)
		}
		if got := h.srv.Stats().Charged - charged; got != tc.charged {
			t.Errorf("%s: rerun charged %d, want %d", tc.name, got, tc.charged)
		}
	}
}

// withWritableDB opens the harness's warehouse for writing (no run holds it).
func withWritableDB(t *testing.T, h *harness, fn func(db *sql.DB)) {
	t.Helper()
	wh, err := warehouse.Open(context.Background(), warehouse.Options{
		DuckDBPath: filepath.Join(h.dir, "data/w.duckdb"), ParquetDir: filepath.Join(h.dir, "data/parquet")})
	if err != nil {
		t.Fatal(err)
	}
	fn(wh.DB())
	if err := wh.Close(); err != nil {
		t.Fatal(err)
	}
}
