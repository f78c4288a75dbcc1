package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/wire"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// sitewatchBinary builds cmd/sitewatch once per test process: these tests kill and signal a
// real process, which an in-process run cannot show.
func sitewatchBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the sitewatch binary; skipped in -short")
	}
	buildOnce.Do(func() {
		// scripts/test-shards.sh builds it once for the processes it runs side by side.
		if p := os.Getenv("SITEWATCH_TEST_BINARY"); p != "" {
			binPath = p
			return
		}
		dir, err := os.MkdirTemp("", "sitewatch-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "sitewatch")
		out, err := exec.Command("go", "build", "-o", binPath, "sitewatch/cmd/sitewatch").CombinedOutput()
		if err != nil {
			buildErr = err
			binPath = string(out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build sitewatch: %v\n%s", buildErr, binPath)
	}
	return binPath
}

// command returns `sitewatch args…` on the harness's config, with its output in buffers.
func (h *harness) command(args ...string) (*exec.Cmd, *syncBuffer) {
	h.t.Helper()
	args = append(args[:1:1], append([]string{"--config", h.cfgPath}, args[1:]...)...)
	cmd := exec.Command(sitewatchBinary(h.t), args...)
	cmd.Env = append(os.Environ(), config.EnvAPIKey+"="+h.key)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	return cmd, out
}

func exitCodeOf(t *testing.T, err error) int {
	t.Helper()
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	t.Fatalf("not an exit: %v", err)
	return -1
}

func TestKillMinus9ThenResumeEqualsUninterrupted(t *testing.T) {
	domains := atlastest.Domains(30)
	slow := atlastest.Options{Seed: 7, LatencyMin: 5 * time.Millisecond, LatencyMax: 40 * time.Millisecond}

	reference := newHarness(t, slow, domains, "")
	if code := reference.run("run", "--snapshot", testMonth); code != ExitOK {
		t.Fatalf("reference run exit %d\n%s", code, reference.stdout)
	}
	want := dumpTables(t, reference)

	rng := rand.New(rand.NewPCG(killSeed(t), 3))
	for i := range 3 {
		h := newHarness(t, slow, domains, "")
		cmd, out := h.command("run", "--snapshot", testMonth)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(150+rng.IntN(900)) * time.Millisecond)
		_ = cmd.Process.Kill() // SIGKILL: no chance to clean up
		_ = cmd.Wait()
		charged := h.srv.Stats().Charged
		if code := h.run("run", "--snapshot", testMonth); code != ExitOK {
			t.Fatalf("kill %d: rerun exit %d\nkilled run:\n%s\nrerun:\n%s%s", i, code, out, h.stdout, h.stderr)
		}
		if got := dumpTables(t, h); got != want {
			t.Errorf("kill %d (after %d credits): tables differ from an uninterrupted run", i, charged)
		}
		// Calls answered but not yet committed when the process died are fetched again;
		// nothing committed is.
		if got, max := h.srv.Stats().Charged, int64(2*len(domains)+1)+int64(atlasMaxInFlight(200)); got > max {
			t.Errorf("kill %d: charged %d, more than needed plus what was in flight (%d)", i, got, max)
		}
		h.assertNoStaging()
	}
}

// atlasMaxInFlight bounds the calls that can be in flight (answered, uncommitted) at a kill.
func atlasMaxInFlight(rate int) int { return rate*3 + 1 }

func (h *harness) assertNoStaging() {
	h.t.Helper()
	_ = filepath.Walk(filepath.Join(h.dir, "data"), func(path string, info os.FileInfo, err error) error {
		name := filepath.Base(path)
		// A reader this test holds open (h.db) spills to a directory of its own, named after
		// this process, until the test's cleanup closes it: not a stray file.
		ownReader := strings.HasPrefix(name, fmt.Sprintf(".w.duckdb.read-%d-", os.Getpid()))
		if err == nil && !ownReader && (strings.Contains(name, "staging") || strings.HasSuffix(name, ".tmp")) {
			h.t.Errorf("stray staging file left: %s", path)
		}
		return nil
	})
}

// assertNoLockWait fails t when a run refused for a held warehouse waited for it instead of
// failing at once: a wait is logged ("waiting for the warehouse") and lasts up to
// wire.LockWait. Wall time alone would not tell: on a loaded CI machine, starting the
// binary and opening DuckDB can take seconds.
func assertNoLockWait(t *testing.T, out string, elapsed time.Duration) {
	t.Helper()
	t.Logf("refused after %v", elapsed.Round(time.Millisecond))
	if strings.Contains(out, "waiting for the warehouse") || elapsed >= wire.LockWait {
		t.Errorf("the run waited for the warehouse (%v) instead of failing at once:\n%s", elapsed.Round(time.Millisecond), out)
	}
}

func TestSecondWriterFailsFast(t *testing.T) {
	h := newHarness(t, atlastest.Options{Rate: 3, LatencyMin: 200 * time.Millisecond, LatencyMax: 300 * time.Millisecond}, atlastest.Domains(20), "  rate_limit: 3\n")
	first, firstOut := h.command("run", "--snapshot", testMonth)
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = first.Process.Kill(); _ = first.Wait() }()
	waitFor(t, func() bool { return h.srv.Stats().Requests > 0 || first.ProcessState != nil })
	if h.srv.Stats().Requests == 0 {
		t.Fatalf("the first run made no request:\n%s", firstOut)
	}
	before := h.srv.Stats().Requests

	second, out := h.command("run", "--snapshot", testMonth)
	start := time.Now()
	err := second.Run()
	elapsed := time.Since(start)
	if code := exitCodeOf(t, err); code != ExitFailed {
		t.Errorf("second writer exit %d, want 1\n%s", code, out)
	}
	assertNoLockWait(t, out.String(), elapsed)
	if !strings.Contains(out.String(), "locked by another process") {
		t.Errorf("second writer's message does not say the warehouse is in use:\n%s", out)
	}
	// The first run paces at 3/s; the second must have added nothing on top of it.
	if extra := h.srv.Stats().Requests - before; extra > int(3*elapsed.Seconds())+3 {
		t.Errorf("requests grew by %d while the second writer ran: it called the API", extra)
	}
}

// TestScheduleFiresAndStopsOnSIGTERM: the sitewatch binary's schedule fires its first run (a
// catch-up: nothing stored since the last cron time), logs the next, and on SIGTERM stops
// and exits 0. The next cron time (06:00 on the 2nd) is almost always hours to weeks away, so a
// schedule that did not stop on the signal would not end by itself: ten times signalBound
// after the signal is a hang guard, not a bound a loaded machine may stretch.
func TestScheduleFiresAndStopsOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the sitewatch binary's schedule")
	}
	h := newHarness(t, atlastest.Options{Month: time.Now().UTC().Format("2006-01")}, atlastest.Domains(3), "")
	if cfg, err := os.ReadFile(h.cfgPath); err != nil || !bytes.Contains(cfg, []byte(`"0 6 2 * *"`)) {
		t.Fatalf("the harness's config does not schedule 0 6 2 * * (%v):\n%s", err, cfg)
	}
	cmd, out := h.command("schedule")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	waitFor(t, func() bool { return strings.Contains(out.String(), "scheduled run complete") })
	if !strings.Contains(out.String(), "next run") {
		t.Errorf("schedule did not log the next run time:\n%s", out)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	signalled := time.Now()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		t.Logf("schedule ended %v after SIGTERM", time.Since(signalled).Round(time.Millisecond))
		if code := exitCodeOf(t, err); code != 0 {
			t.Errorf("schedule exit %d after SIGTERM, want 0\n%s", code, out)
		}
	case <-time.After(10 * signalBound): // a hang guard: the next cron time is days away
		t.Fatalf("schedule did not stop within %v of SIGTERM\n%s", 10*signalBound, out)
	}
	if got, want := h.srv.Stats().Charged, int64(2*3+1); got != want {
		t.Errorf("charged %d, want %d", got, want)
	}
	if strings.Contains(out.String(), h.key) {
		t.Errorf("the key leaked into schedule output")
	}
}

// eventHangGuard is how long a test waits for an event (a request, a charge, a run ending)
// before it calls the code hung. It is not a budget: under a loaded machine an event comes late,
// not never (a 1,000-domain scheduled run under -race took over 60 s at load 20 and failed a
// 60 s wait), so the guard is far beyond any wait here and only ends a test that would
// otherwise hang until the package's timeout.
const eventHangGuard = 10 * time.Minute

// waitFor polls cond until it holds: it waits for the event cond observes, however late.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > eventHangGuard {
			t.Fatalf("condition not met within %v: hung", eventHangGuard)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
