package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"sitewatch/pipeline"
	"sitewatch/pipeline/atlas"
	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/metrics"
)

// TestCheck: the preflight spends no credit and maps each failure to run's exit codes.
func TestCheck(t *testing.T) {
	domains := atlastest.Domains(5)
	t.Run("Ready", func(t *testing.T) {
		h := newHarness(t, atlastest.Options{}, domains, "")
		if code := h.run("check"); code != ExitOK {
			t.Fatalf("exit %d\n%s\n%s", code, h.stdout, h.stderr)
		}
		out := h.stdout.String()
		for _, want := range []string{"key         accepted", "balance (credits)", "10000", "next run needs", "11 credits", "expected duration", "ready: 0 credits"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		if got := h.srv.Stats().Charged; got != 0 {
			t.Errorf("check charged %d credits, want 0", got)
		}
	})
	t.Run("NotEnoughCredits", func(t *testing.T) {
		h := newHarness(t, atlastest.Options{Keys: map[string]int64{"canary-key-7f3a9c": 8}}, domains, "")
		if code := h.run("check"); code != ExitCredits || !strings.Contains(h.stdout.String(), "covered") {
			t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitCredits, h.stdout, h.stderr)
		}
		if !strings.Contains(h.stderr.String(), "not enough credits") {
			t.Errorf("no message saying the balance does not cover the run:\n%s", h.stderr)
		}
		if code := h.run("run", "--dry-run"); code != ExitOK || !strings.Contains(h.stdout.String(), "covered") || !strings.Contains(h.stdout.String(), "NO") {
			t.Errorf("dry run exit %d or no balance lines:\n%s", code, h.stdout)
		}
		if got := h.srv.Stats().Charged; got != 0 {
			t.Errorf("check and dry run charged %d credits, want 0", got)
		}
	})
	t.Run("KeyRejected", func(t *testing.T) {
		h := newHarness(t, atlastest.Options{Keys: map[string]int64{"another-key": 100}}, domains, "")
		if code := h.run("check"); code != ExitUnauthorized {
			t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitUnauthorized, h.stdout, h.stderr)
		}
	})
	t.Run("KeyWithCarriageReturn", func(t *testing.T) {
		h := newHarness(t, atlastest.Options{}, domains, "")
		h.key = "canary-key-7f3a9c"
		h.extraEnv = map[string]string{config.EnvAPIKey: h.key + "\r"}
		for _, cmd := range []string{"check", "run"} {
			if code := h.run(cmd); code != ExitUsage {
				t.Fatalf("%s: exit %d, want %d\n%s", cmd, code, ExitUsage, h.stderr)
			}
		}
		if h.srv.Stats().Requests != 0 {
			t.Errorf("%d requests sent with a malformed key, want 0", h.srv.Stats().Requests)
		}
	})
	t.Run("Unreachable", func(t *testing.T) {
		h := newHarness(t, atlastest.Options{}, domains, "")
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		closed := "http://" + ln.Addr().String()
		ln.Close()
		h.extraEnv = map[string]string{config.EnvBaseURL: closed}
		for _, cmd := range []string{"check", "run"} {
			start := time.Now()
			if code := h.run(cmd); code != ExitFailed {
				t.Fatalf("%s: exit %d, want %d\n%s", cmd, code, ExitFailed, h.stderr)
			}
			// A refused connection is not retried for the 2 minutes transient failures get
			// (atlas.DefaultRetryMaxElapsed): a few seconds on a quiet machine, 12 s under -race
			// at load 35; the bound is what it must never wait out, not how fast the machine is.
			if took := time.Since(start); took > atlas.DefaultRetryMaxElapsed/2 {
				t.Errorf("%s took %s against a closed port: it waited out retries (a minute or more), want it to fail at once", cmd, took)
			}
			if all := h.stdout.String() + h.stderr.String(); !strings.Contains(all, "TCP") || !strings.Contains(all, ln.Addr().String()) {
				t.Errorf("%s: the message does not name the failed stage and the address:\n%s", cmd, all)
			}
		}
	})
}

// TestScheduleListenMetrics: `schedule --listen 127.0.0.1:0` serves /metrics during and after
// a run (parsed with the Prometheus text parser) and /healthz.
func TestScheduleListenMetrics(t *testing.T) {
	domains := atlastest.Domains(12)
	h := newHarness(t, atlastest.Options{LatencyMin: 30 * time.Millisecond, LatencyMax: 60 * time.Millisecond}, domains, "  rate_limit: 10\n")
	rec := metrics.New(metrics.Options{})
	env := h.env()
	watchRuns(&env, rec)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, err := rec.Serve(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + addr.String()
	var runs runLog
	cfg, err := config.Load(h.cfgPath, env.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- pipeline.Schedule(ctx, cfg, env.Env, pipeline.ScheduleOptions{OnRun: runs.record}) }()

	waitFor(t, func() bool { return h.srv.Stats().Charged >= 6 })
	during, err := metrics.Scrape(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := during.Value("sitewatch_run_in_progress"); !ok || v != 1 {
		t.Errorf("sitewatch_run_in_progress during the run = %v (%v), want 1", v, ok)
	}
	waitFor(t, func() bool { return len(runs.get()) == 1 })
	after, err := metrics.Scrape(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"sitewatch_credits_spent_total": float64(h.srv.Stats().Charged),
		"sitewatch_run_in_progress":     0,
	}
	for name, v := range want {
		if got, ok := after.Value(name); !ok || got != v {
			t.Errorf("%s = %v (%v), want %v", name, got, ok, v)
		}
	}
	if got, ok := after.Value("sitewatch_runs_total", "outcome", "complete"); !ok || got != 1 {
		t.Errorf("sitewatch_runs_total{outcome=complete} = %v (%v), want 1", got, ok)
	}
	if got, ok := after.Value("sitewatch_requests_total", "code", "200"); !ok || got != float64(2*len(domains)+1) {
		t.Errorf("sitewatch_requests_total{code=200} = %v (%v), want %d", got, ok, 2*len(domains)+1)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Schedule = %v", err)
	}
}

// TestScheduleListenCommand: the built `sitewatch schedule --listen 127.0.0.1:0` logs the
// address it chose, serves /metrics (parsed with the Prometheus text parser) and /healthz
// after its catch-up run, and stops on SIGTERM with exit 0.
func TestScheduleListenCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the binary")
	}
	domains := atlastest.Domains(3)
	h := newHarness(t, atlastest.Options{}, domains, "")
	cmd, out := h.command("schedule", "--listen", "127.0.0.1:0")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	addr := regexp.MustCompile(`metrics listening on (http://127\.0\.0\.1:\d+)`)
	waitFor(t, func() bool {
		return addr.MatchString(out.String()) && strings.Contains(out.String(), "scheduled run complete")
	})
	base := addr.FindStringSubmatch(out.String())[1]
	fams, err := metrics.Scrape(context.Background(), base)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := fams.Value("sitewatch_runs_total", "outcome", "complete"); !ok || got != 1 {
		t.Errorf("sitewatch_runs_total{outcome=complete} = %v (%v), want 1", got, ok)
	}
	if got, ok := fams.Value("sitewatch_credits_spent_total"); !ok || got != float64(2*len(domains)+1) {
		t.Errorf("sitewatch_credits_spent_total = %v (%v), want %d", got, ok, 2*len(domains)+1)
	}
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// The simulator serves testMonth (2026-10), complete now; from 2026-11-04 (the 1st plus the
	// 72h grace) the current month must be complete too, so the daemon reports unhealthy.
	if time.Now().UTC().After(time.Date(2026, 11, 4, 0, 0, 0, 0, time.UTC)) && resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/healthz answered %d (%s), want 503: the current month is not complete past the grace", resp.StatusCode, body)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := exitCodeOf(t, cmd.Wait()); code != 0 {
		t.Errorf("schedule exit %d after SIGTERM, want 0\n%s", code, tail(out.String(), 2000))
	}
	h.assertNoKey(out.String(), "schedule output")
}
