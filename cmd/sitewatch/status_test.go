package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/livestatus"
	"sitewatch/pipeline/warehouse"
)

// envHoldForWriting makes the test binary a child that opens a warehouse for writing, as a
// run does, prints "holding", and keeps it until its stdin closes (see TestMain).
const envHoldForWriting = "SITEWATCH_TEST_HOLD_FOR_WRITING"

// testStatusBound is status's section bound in this package's tests: a guard against a hang,
// not a measure (see statusSectionBound).
const testStatusBound = 5 * time.Minute

func TestMain(m *testing.M) {
	if path := os.Getenv(envHoldForWriting); path != "" {
		os.Exit(holdForWriting(path))
	}
	statusSectionBound = testStatusBound
	os.Exit(m.Run())
}

func holdForWriting(path string) int {
	wh, err := warehouse.Open(context.Background(), warehouse.Options{DuckDBPath: path})
	if err != nil {
		fmt.Println("hold failed:", err)
		return 1
	}
	defer wh.Close()
	fmt.Println("holding")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// holdWarehouse starts a child process holding the harness's warehouse for writing and
// returns its PID; the child ends with the test.
func holdWarehouse(t *testing.T, h *harness) int {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envHoldForWriting+"="+filepath.Join(h.dir, "data/w.duckdb"))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "holding" {
		t.Fatalf("the holder could not open the warehouse: %q %v", line, err)
	}
	return cmd.Process.Pid
}

// liveRunFile starts a Keeper as a run does, for the harness's warehouse, with pid as the
// run's process; it returns the Keeper and the figures it writes.
func liveRunFile(t *testing.T, h *harness, pid int) (*livestatus.Keeper, livestatus.Status) {
	t.Helper()
	left, eta := int64(9_976), 42.0
	s := livestatus.Status{RunID: "r-live-1", Month: testMonth, Loaded: 12, Total: 28, Requests: 35,
		RateLimited: 2, CreditsSpent: 24, CreditsLeft: &left, Rate: 2.9, ETASeconds: &eta,
		StartedAt: time.Now().Add(-65 * time.Second).UTC(), PID: pid}
	path := livestatus.Path(filepath.Join(h.dir, "data/w.duckdb"))
	k := livestatus.Start(path, 20*time.Millisecond, func() livestatus.Status { return s }, nil)
	t.Cleanup(func() { _ = k.Finish("interrupted", "") })
	return k, s
}

func decodeStatus(t *testing.T, out string) statusReport {
	t.Helper()
	var rep statusReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("status --format json is not JSON: %v\n%s", err, out)
	}
	return rep
}

// TestStatusWhileRunHoldsWarehouse: another process holds the warehouse for writing (a run);
// `status` shows the run's live figures from its progress file, in text and JSON, exit 0.
func TestStatusWhileRunHoldsWarehouse(t *testing.T) {
	h := newHarness(t, atlastest.Options{}, atlastest.Domains(3), "")
	if code := h.run("run", "--snapshot", testMonth); code != ExitOK {
		t.Fatalf("first run exit %d\n%s", code, h.stdout)
	}
	pid := holdWarehouse(t, h)
	liveRunFile(t, h, pid)

	if code := h.run("status"); code != ExitOK {
		t.Fatalf("status exit %d while a run holds the warehouse\n%s%s", code, h.stdout, h.stderr)
	}
	text := h.stdout.String()
	t.Logf("status while a run holds the warehouse:\n%s", text)
	for _, want := range []string{
		"live run r-live-1, snapshot " + testMonth + ": running", fmt.Sprintf("PID %d", pid),
		"12/28 loaded (42.9%)", "35 (2 answered 429), 2.9 req/s", "24 spent, 9,976 left", // numfmt's style "ETA 42s",
		"recent runs: not shown while run r-live-1 holds the warehouse",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("status lacks %q:\n%s", want, text)
		}
	}

	if code := h.run("status", "--format", "json"); code != ExitOK {
		t.Fatalf("status --format json exit %d\n%s%s", code, h.stdout, h.stderr)
	}
	rep := decodeStatus(t, h.stdout.String())
	if rep.WarehouseState != "locked" || rep.Live == nil || rep.Live.Process != "running" {
		t.Fatalf("JSON: warehouse_state %q, live %+v; want locked and a running live run", rep.WarehouseState, rep.Live)
	}
	l := rep.Live
	if l.RunID != "r-live-1" || l.Loaded != 12 || l.Total != 28 || l.Requests != 35 || l.RateLimited != 2 ||
		l.CreditsSpent != 24 || *l.CreditsLeft != 9_976 || l.PID != pid || l.State != "running" {
		t.Errorf("JSON live figures %+v", l)
	}
	if len(rep.Runs) != 0 || rep.Credits != nil {
		t.Errorf("runs %v, credits %v shown though the warehouse could not be read", rep.Runs, rep.Credits)
	}
	// The names scripts rely on, checked on the raw JSON.
	for _, key := range []string{`"warehouse_state"`, `"live"`, `"process"`, `"run_id"`, `"loaded"`, `"total"`,
		`"credits_spent"`, `"credits_left"`, `"rate_per_second"`, `"eta_seconds"`, `"started_at"`, `"updated_at"`, `"pid"`, `"host"`} {
		if !strings.Contains(h.stdout.String(), key) {
			t.Errorf("JSON lacks %s", key)
		}
	}
}

// TestStatusFinalFileWhileLocked: a tool holds the file and the last run left a final
// progress file: status shows that run's outcome.
func TestStatusFinalFileWhileLocked(t *testing.T) {
	h := newHarness(t, atlastest.Options{}, atlastest.Domains(2), "")
	if code := h.run("run", "--snapshot", testMonth); code != ExitOK {
		t.Fatalf("first run exit %d\n%s", code, h.stdout)
	}
	pid := holdWarehouse(t, h)
	k, _ := liveRunFile(t, h, pid)
	if err := k.Finish("stopped_credits", "402 from the API: out of credits"); err != nil {
		t.Fatal(err)
	}
	if code := h.run("status"); code != ExitOK {
		t.Fatalf("status exit %d\n%s%s", code, h.stdout, h.stderr)
	}
	for _, want := range []string{"last run r-live-1, snapshot " + testMonth + ": finished, stopped_credits", "402 from the API",
		"not shown while the warehouse is held by another process", "locked by another process", fmt.Sprintf("PID %d", pid)} {
		if !strings.Contains(h.stdout.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, h.stdout)
		}
	}
}

// TestStatusPIDGone: the run's process died (kill -9) and left a running file; the warehouse
// is free again. status says the process is gone and shows the recent runs.
func TestStatusPIDGone(t *testing.T) {
	h := newHarness(t, atlastest.Options{}, atlastest.Domains(2), "")
	if code := h.run("run", "--snapshot", testMonth); code != ExitOK {
		t.Fatalf("first run exit %d\n%s", code, h.stdout)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	s := livestatus.Status{RunID: "r-dead", Month: testMonth, State: livestatus.StateRunning, Loaded: 1, Total: 2,
		StartedAt: time.Now().Add(-time.Minute), UpdatedAt: time.Now().Add(-30 * time.Second), PID: dead.Process.Pid}
	if err := livestatus.Write(livestatus.Path(filepath.Join(h.dir, "data/w.duckdb")), s); err != nil {
		t.Fatal(err)
	}
	if code := h.run("status"); code != ExitOK {
		t.Fatalf("status exit %d\n%s%s", code, h.stdout, h.stderr)
	}
	text := h.stdout.String()
	t.Logf("status after the run's process died:\n%s", text)
	for _, want := range []string{"r-dead", "process is gone", fmt.Sprintf("PID %d", dead.Process.Pid), "abandoned", "complete", "credits: ", "quality " + testMonth + ": "} {
		if !strings.Contains(text, want) {
			t.Errorf("status lacks %q:\n%s", want, text)
		}
	}
	if code := h.run("status", "--format", "json", "--limit", "1"); code != ExitOK {
		t.Fatalf("status --format json exit %d", code)
	}
	rep := decodeStatus(t, h.stdout.String())
	if rep.Live == nil || rep.Live.Process != "gone" || rep.WarehouseState != "ok" || len(rep.Runs) != 1 || rep.Runs[0].Status != "complete" {
		t.Errorf("JSON: live %+v, warehouse %q, runs %+v", rep.Live, rep.WarehouseState, rep.Runs)
	}
	if rep.Credits == nil || rep.Credits.Remaining == nil || rep.Credits.SpentThisMonth < 0 {
		t.Errorf("JSON credits %+v, want the wallet from the runs table", rep.Credits)
	}
	if q, _ := rep.Sections["quality"].(map[string]any); q == nil || q["month"] != testMonth || q["checks"] == nil {
		t.Errorf("JSON sections.quality = %v, want the checks of %s", rep.Sections["quality"], testMonth)
	}

	// A live PID whose file stopped being refreshed (a hung or SIGSTOPped run).
	s.PID, s.UpdatedAt = os.Getpid(), time.Now().Add(-2*time.Minute)
	if err := livestatus.Write(livestatus.Path(filepath.Join(h.dir, "data/w.duckdb")), s); err != nil {
		t.Fatal(err)
	}
	if code := h.run("status"); code != ExitOK || !strings.Contains(h.stdout.String(), "not updated for 2m") {
		t.Errorf("status of a stale file: exit %d\n%s", code, h.stdout)
	}
}

func TestStatusNoRunsYet(t *testing.T) {
	h := newHarness(t, atlastest.Options{}, atlastest.Domains(1), "")
	if code := h.run("status"); code != ExitFailed || !strings.Contains(h.stderr.String(), "no warehouse at") {
		t.Errorf("status without a warehouse: exit %d, stderr %q; want 1 and `no warehouse at`", code, h.stderr)
	}
}

func TestStatusUsage(t *testing.T) {
	h := newHarness(t, atlastest.Options{}, atlastest.Domains(1), "")
	for _, args := range [][]string{{"status", "--limit", "0"}, {"status", "--format", "xml"}, {"status", "extra"}} {
		if code := h.run(args...); code != ExitUsage {
			t.Errorf("%v: exit %d, want 2\n%s", args, code, h.stderr)
		}
	}
}

// TestStatusDuringRealRun: a real `sitewatch run` process loads a paced snapshot; `status`
// from outside shows its live figures and exits 0 while it holds the warehouse, and the
// recent runs once it has ended.
func TestStatusDuringRealRun(t *testing.T) {
	domains := atlastest.Domains(12)
	h := newHarness(t, atlastest.Options{Rate: 4}, domains, "  rate_limit: 4\n")
	run, out := h.command("run", "--snapshot", testMonth)
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = run.Process.Kill(); _ = run.Wait() }()
	live := livestatus.Path(filepath.Join(h.dir, "data/w.duckdb"))
	waitFor(t, func() bool {
		s, err := livestatus.Read(live)
		return err == nil && s.State == livestatus.StateRunning && s.Loaded >= 1 && s.Loaded < len(domains)
	})

	if code := h.run("status"); code != ExitOK {
		t.Fatalf("status during the run: exit %d\n%s%s\nrun output:\n%s", code, h.stdout, h.stderr, out)
	}
	text := h.stdout.String()
	t.Logf("status during a real run:\n%s", text)
	for _, want := range []string{"live run", ": running (PID " + fmt.Sprint(run.Process.Pid), fmt.Sprintf("/%d loaded", len(domains)), "req/s", "ETA", "holds the warehouse"} {
		if !strings.Contains(text, want) {
			t.Errorf("status lacks %q", want)
		}
	}
	if code := h.run("status", "--format", "json"); code != ExitOK {
		t.Fatalf("status --format json during the run: exit %d", code)
	}
	rep := decodeStatus(t, h.stdout.String())
	if rep.Live == nil || rep.Live.Process != "running" || rep.Live.PID != run.Process.Pid || rep.Live.Total != len(domains) ||
		rep.Live.Requests < 1 || rep.Live.CreditsSpent < 1 || rep.WarehouseState != "locked" {
		t.Errorf("JSON during the run: live %+v, warehouse_state %q", rep.Live, rep.WarehouseState)
	}

	if code := exitCodeOf(t, run.Wait()); code != ExitOK {
		t.Fatalf("run exit %d\n%s", code, out)
	}
	if code := h.run("status", "--format", "json"); code != ExitOK {
		t.Fatalf("status after the run: exit %d", code)
	}
	rep = decodeStatus(t, h.stdout.String())
	if rep.Live == nil || rep.Live.Process != "finished" || rep.Live.Outcome != "complete" || rep.Live.Loaded != len(domains) {
		t.Errorf("JSON after the run: live %+v, want a final file, outcome complete, all loaded", rep.Live)
	}
	if rep.WarehouseState != "ok" || len(rep.Runs) != 1 || rep.Runs[0].Status != "complete" || rep.Runs[0].CreditsSpent != int(h.srv.Stats().Charged) {
		t.Errorf("JSON after the run: warehouse %q, runs %+v (server charged %d)", rep.WarehouseState, rep.Runs, h.srv.Stats().Charged)
	}
}
