package main

import (
	"context"
	"database/sql"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"sitewatch/pipeline"
	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/config"

	"github.com/robfig/cron/v3"
)

// secondsParser parses 6-field cron expressions (seconds first), so tests tick within seconds.
var secondsParser = cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow).Parse

// scheduleRun starts Schedule on the harness's config in the background and returns a stop
// function that cancels it and waits for it to return: within ten times signalBound, a hang
// guard, as for a command after SIGTERM. A non-empty cronExpr replaces the config's schedule
// (tests pass 6-field expressions with opts.Parse = secondsParser).
func scheduleRun(t *testing.T, h *harness, cronExpr string, opts pipeline.ScheduleOptions) (stop func()) {
	t.Helper()
	cfg, err := config.Load(h.cfgPath, h.env().Getenv)
	if err != nil {
		t.Fatal(err)
	}
	if cronExpr != "" {
		cfg.Schedule = cronExpr
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- pipeline.Schedule(ctx, cfg, h.env().Env, opts) }()
	return func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Schedule = %v, want nil", err)
			}
		case <-time.After(10 * signalBound): // a hang guard: a run in progress winds down first
			t.Fatalf("Schedule did not return within %v of the stop", 10*signalBound)
		}
	}
}

// runLog collects the statuses of the runs a schedule made.
type runLog struct {
	mu       sync.Mutex
	statuses []string
	onRun    func(n int, sum *pipeline.Summary)
}

func (l *runLog) record(sum *pipeline.Summary, _ error) {
	l.mu.Lock()
	l.statuses = append(l.statuses, sum.Status)
	n := len(l.statuses)
	l.mu.Unlock()
	if l.onRun != nil {
		l.onRun(n, sum)
	}
}

func (l *runLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.statuses...)
}

// TestScheduleReturnsRunMemory: when a scheduled run ends, the heap it freed goes back to the
// system before the schedule idles (Go's scavenger alone keeps it for minutes): a collection
// is forced after the run, and when the run is reported the runtime holds (almost) no free
// heap that is not released.
func TestScheduleReturnsRunMemory(t *testing.T) {
	h := newHarness(t, atlastest.Options{}, atlastest.Domains(1000), "")
	read := func() (forcedGCs, freeHeld uint64) {
		s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}, {Name: "/memory/classes/heap/free:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64(), s[1].Value.Uint64()
	}
	forcedBefore, _ := read()
	var runs runLog
	var forcedAfter, freeHeld uint64
	runs.onRun = func(int, *pipeline.Summary) { forcedAfter, freeHeld = read() }
	stop := scheduleRun(t, h, "", pipeline.ScheduleOptions{OnRun: runs.record})
	waitFor(t, func() bool { return len(runs.get()) == 1 })
	stop()
	if got := runs.get(); got[0] != pipeline.StatusComplete {
		t.Fatalf("runs = %v, want one complete run", got)
	}
	if forcedAfter == forcedBefore {
		t.Error("no collection was forced when the run ended: its freed heap stays with the idle process")
	}
	// Under 8 MB, not 0: the simulator and the test's own goroutines keep allocating between
	// the forced collection and this read (4.2 MB seen once in CI under load). Without the
	// forced release a 1,000-domain run leaves 19 MB free and held (measured under -race).
	if freeHeld > 8<<20 {
		t.Errorf("%.1f MB of free heap held, not returned, when the run ended; want under 8 MB", float64(freeHeld)/(1<<20))
	}
}

// TestScheduleCatchesUpAfterDowntime: a schedule started after a tick it missed (monthly
// cron, the 2nd at 06:00, no run since) runs at once, then waits for the next tick; started
// again, it finds the month complete since the tick and runs nothing.
func TestScheduleCatchesUpAfterDowntime(t *testing.T) {
	domains := atlastest.Domains(6)
	h := newHarness(t, atlastest.Options{}, domains, "")
	var runs runLog
	started := make(chan time.Time, 4)
	stop := scheduleRun(t, h, "", pipeline.ScheduleOptions{OnRun: runs.record, Started: func(next time.Time) { started <- next }})
	if next := <-started; next.After(time.Now().Add(time.Second)) {
		t.Fatalf("first wake-up at %s: a missed tick should be caught up at once", next)
	}
	waitFor(t, func() bool { return len(runs.get()) == 1 })
	time.Sleep(300 * time.Millisecond)
	stop()
	if got := runs.get(); len(got) != 1 || got[0] != pipeline.StatusComplete {
		t.Fatalf("runs = %v, want one complete catch-up run", got)
	}
	if got, want := h.srv.Stats().Charged, int64(2*len(domains)+1); got != want {
		t.Errorf("charged %d, want %d", got, want)
	}

	// Restarted within the same cycle: nothing to catch up.
	var again runLog
	stop = scheduleRun(t, h, "", pipeline.ScheduleOptions{OnRun: again.record, Started: func(next time.Time) { started <- next }})
	if next := <-started; next.Before(time.Now().Add(24 * time.Hour)) {
		t.Errorf("restart wakes at %s: the month is complete since the tick, the next wake-up is the next tick", next)
	}
	time.Sleep(500 * time.Millisecond)
	stop()
	if got := again.get(); len(got) != 0 {
		t.Errorf("restart ran %v, want nothing", got)
	}
	if got, want := h.srv.Stats().Charged, int64(2*len(domains)+1); got != want {
		t.Errorf("charged %d after the restart, want %d", got, want)
	}
}

// TestScheduleRetriesAnIncompleteMonth: a scheduled run stopped for credits is retried on
// retry_every (not a month later); once the wallet is topped up the retry completes the
// month without paying twice, and the schedule then waits for the next tick.
func TestScheduleRetriesAnIncompleteMonth(t *testing.T) {
	domains := atlastest.Domains(8)
	h := newHarness(t, atlastest.Options{Keys: map[string]int64{"canary-key-7f3a9c": 6}}, domains, "")
	runs := runLog{onRun: func(n int, sum *pipeline.Summary) {
		if n == 1 {
			h.srv.SetCredits(h.key, 100)
		}
	}}
	stop := scheduleRun(t, h, "", pipeline.ScheduleOptions{OnRun: runs.record, RetryEvery: 500 * time.Millisecond})
	waitFor(t, func() bool { return len(runs.get()) >= 2 })
	time.Sleep(1500 * time.Millisecond) // three more retry periods: no further run
	stop()
	got := runs.get()
	if len(got) != 2 || got[0] != pipeline.StatusStoppedCredits || got[1] != pipeline.StatusComplete {
		t.Fatalf("runs = %v, want [stopped_credits complete]", got)
	}
	if charged, want := h.srv.Stats().Charged, int64(2*len(domains)+1); charged != want {
		t.Errorf("charged %d, want %d (nothing paid twice)", charged, want)
	}
	withDB(t, h, func(db *sql.DB) {
		if n := count(t, db, "SELECT count(*) FROM sites"); n != len(domains) {
			t.Errorf("sites = %d, want %d", n, len(domains))
		}
	})
	if !strings.Contains(h.stderr.String(), "retry") {
		t.Errorf("the log does not mention the retry:\n%s", tail(h.stderr.String(), 2000))
	}
}
