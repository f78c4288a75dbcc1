package main

import (
	"context"
	"flag"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/config"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name (rewritten with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (-update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// TestTopLevelHelpGolden: `sitewatch --help` lists the commands in a newcomer's order (check,
// the step before paying, right after validate) and names every variable sitewatch reads.
func TestTopLevelHelpGolden(t *testing.T) {
	code, out, _ := mainOut("", "--help")
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	golden(t, "help.golden", out)
	order := []string{"validate", "check", "run", "status", "query", "changes", "report", "publish", "restore", "schedule", "rebuild", "schema"}
	last := -1
	for _, name := range order {
		i := strings.Index(out, "  sitewatch "+name+" ")
		if i < last {
			t.Errorf("%s is listed before the command that precedes it in a newcomer's journey", name)
		}
		last = i
	}
	for _, v := range []string{"SITEWATCH_CATALOG_PASSWORD", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_REGION"} {
		if !strings.Contains(out, v) {
			t.Errorf("the environment line omits %s", v)
		}
	}
}

// TestQueryDuringRunSaysItsETA: a query while a run holds the warehouse says which run, how far
// it is and when it should end; it never advises killing a run that spends credits.
func TestQueryDuringRunSaysItsETA(t *testing.T) {
	h := newHarness(t, atlastest.Options{}, atlastest.Domains(3), "")
	if code := h.run("run", "--snapshot", testMonth); code != ExitOK {
		t.Fatalf("first run exit %d\n%s", code, h.stdout)
	}
	pid := holdWarehouse(t, h)
	liveRunFile(t, h, pid)
	if code := h.run("query", "SELECT 1"); code == ExitOK {
		t.Fatalf("query succeeded while a run holds the warehouse")
	}
	msg := h.stderr.String()
	for _, want := range []string{"run r-live-1", "is loading " + testMonth + ", 12/28 domains", "should end in about 42s", "sitewatch status"} {
		if !strings.Contains(msg, want) {
			t.Errorf("query's message lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "kill") {
		t.Errorf("query advises killing a paid run:\n%s", msg)
	}
}

// runAs runs `sitewatch <args> --config <cfg>` as the process does: its logger filtered at the
// level MainLogging chooses, stderr a terminal or not.
func (h *harness) runAs(terminal bool, getenv map[string]string, args ...string) int {
	h.t.Helper()
	args = append(args, "--config", h.cfgPath) // flags may follow the arguments
	env := h.env()
	level := new(slog.LevelVar)
	env.Logger = slog.New(slog.NewTextHandler(h.stderr, &slog.HandlerOptions{Level: level}))
	env.IsTerminal = terminal
	base := env.Getenv
	env.Getenv = func(k string) string {
		if v, ok := getenv[k]; ok {
			return v
		}
		return base(k)
	}
	code := MainLogging(context.Background(), args, env, level)
	h.assertNoKey(h.stdout.String(), "stdout")
	h.assertNoKey(h.stderr.String(), "stderr/log")
	return code
}

// TestResultsPrintedOnce: at a terminal an interactive command prints its result once (stdout)
// and no INFO line repeats it on stderr; --verbose, --log-level and SITEWATCH_LOG still give the
// log lines, and so does a stderr written to a file (cron, CI).
func TestResultsPrintedOnce(t *testing.T) {
	h := newHarness(t, atlastest.Options{}, atlastest.Domains(3), "")
	for _, args := range [][]string{{"run"}, {"rebuild", "--all"}, {"run"}, {"status"}} {
		if code := h.runAs(true, nil, args...); code != ExitOK {
			t.Fatalf("%v: exit %d\n%s\n%s", args, code, h.stdout, h.stderr)
		}
		if strings.Contains(h.stderr.String(), "level=INFO") || strings.Contains(h.stderr.String(), "level=DEBUG") {
			t.Errorf("%v at a terminal logs below WARN:\n%s", args, h.stderr)
		}
	}
	for _, tc := range []struct {
		name     string
		terminal bool
		env      map[string]string
		args     []string
		want     string
	}{
		{"Verbose", true, nil, []string{"run", "--verbose"}, "level=DEBUG"},
		{"LogLevelBeforeCommand", true, nil, []string{"--log-level", "info", "rebuild", "--all"}, "level=INFO msg=\"rebuilt snapshot"},
		{"LogLevelEquals", true, nil, []string{"rebuild", "--all", "--log-level=info"}, "level=INFO msg=\"rebuilt snapshot"},
		{"SITEWATCH_LOG", true, map[string]string{"SITEWATCH_LOG": "info"}, []string{"rebuild", "--all"}, "level=INFO msg=\"rebuilt snapshot"},
		{"StderrToAFile", false, nil, []string{"rebuild", "--all"}, "level=INFO msg=\"rebuilt snapshot"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code := h.runAs(tc.terminal, tc.env, tc.args...); code != ExitOK {
				t.Fatalf("exit %d\n%s", code, h.stderr)
			}
			if !strings.Contains(h.stderr.String(), tc.want) {
				t.Errorf("no %s line on stderr:\n%s", tc.want, h.stderr)
			}
		})
	}
	if code, _, errOut := mainOut("", "--log-level", "loud", "status"); code != ExitUsage || !strings.Contains(errOut, `--log-level "loud": use debug, info, warn or error`) {
		t.Errorf("a bad --log-level: exit %d, %q", code, errOut)
	}
}

func TestLogLevelChoice(t *testing.T) {
	none := func(string) string { return "" }
	for name, tc := range map[string]struct {
		cmd         string
		lf          logFlags
		getenv      func(string) string
		interactive bool
		want        slog.Level
	}{
		"InteractiveCommand":     {"publish", logFlags{}, none, true, slog.LevelWarn},
		"ScheduleAtATerminal":    {"schedule", logFlags{}, none, true, slog.LevelInfo},
		"ToAFile":                {"run", logFlags{}, none, false, slog.LevelInfo},
		"Verbose":                {"run", logFlags{verbose: true}, none, true, slog.LevelDebug},
		"LogLevelBeatsEnv":       {"run", logFlags{level: "error"}, func(string) string { return "debug" }, true, slog.LevelError},
		"EnvBeatsDefault":        {"run", logFlags{}, func(string) string { return "debug" }, true, slog.LevelDebug},
		"BadEnvFallsToDefault":   {"run", logFlags{}, func(string) string { return "loud" }, true, slog.LevelWarn},
		"ScheduleQuietWhenAsked": {"schedule", logFlags{level: "warn"}, none, true, slog.LevelWarn},
	} {
		t.Run(name, func(t *testing.T) {
			if got := LogLevel(tc.cmd, tc.lf, tc.getenv, tc.interactive); got != tc.want {
				t.Errorf("LogLevel = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestScheduleSignalIsNoError: SIGTERM (a cancelled context) stops `schedule` mid-run; the log
// says it stopped on request, never ERROR, "retrying" or Go's "context canceled", and the
// summary says what a signal means for the run.
func TestScheduleSignalIsNoError(t *testing.T) {
	h := newHarness(t, atlastest.Options{LatencyMin: 20 * time.Millisecond, LatencyMax: 40 * time.Millisecond}, atlastest.Domains(40), "  rate_limit: 20\n")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	env := h.env()
	go func() { done <- Main(ctx, []string{"schedule", "--config", h.cfgPath}, env) }()
	waitFor(t, func() bool { return h.srv.Stats().Charged >= 5 })
	cancel()
	select {
	case code := <-done:
		if code != ExitOK {
			t.Errorf("schedule exit %d after a signal, want 0", code)
		}
	case <-time.After(10 * signalBound): // a hang guard, as for a command after SIGTERM
		t.Fatalf("schedule did not return within %v of the signal", 10*signalBound)
	}
	log, out := h.stderr.String(), h.stdout.String()
	for _, bad := range []string{"level=ERROR", "retrying", "context canceled", "ended early", "error:"} {
		if strings.Contains(log+out, bad) {
			t.Errorf("after a signal the output says %q:\n%s\n%s", bad, out, tail(log, 2000))
		}
	}
	if !strings.Contains(log, "scheduled run stopped by a signal") || !strings.Contains(out, "stopped: interrupted by a signal (SIGINT or SIGTERM)") {
		t.Errorf("the log or the summary does not say the run was stopped by a signal:\n%s\n%s", out, tail(log, 2000))
	}
}

// TestUpToDateAndMismatchFiguresAreTrue: an up-to-date run shows no progress figure for a plan
// it never made (month "", 0/0 domains, an ETA after it ended); a month-mismatch run's summary
// and webhook say what the month named holds (complete, n of n), not 0 of n.
func TestUpToDateAndMismatchFiguresAreTrue(t *testing.T) {
	rcv := newWebhookReceiver(t, func(w http.ResponseWriter) { w.WriteHeader(http.StatusOK) })
	domains := atlastest.Domains(4)
	h := newHarness(t, atlastest.Options{}, domains, "")
	h.extraEnv = map[string]string{config.EnvWebhookURL: rcv.srv.URL + "/hook"}
	if code := h.run("run"); code != ExitOK {
		t.Fatalf("run exit %d\n%s", code, h.stdout)
	}
	for _, terminal := range []bool{false, true} {
		if code := h.runAs(terminal, nil, "run", "--verbose"); code != ExitOK {
			t.Fatalf("up-to-date run exit %d\n%s", code, h.stdout)
		}
		for _, bad := range []string{`month=""`, "domains_total=0", "0/0 domains", "ETA", "eta=1", "eta=2", "eta=3", "eta=4", "eta=5", "eta=6", "eta=7", "eta=8", "eta=9"} {
			if strings.Contains(h.stderr.String(), bad) {
				t.Errorf("up-to-date run (terminal %v) shows %q:\n%s", terminal, bad, h.stderr)
			}
		}
	}
	if err := h.srv.SetMonth("2026-11"); err != nil {
		t.Fatal(err)
	}
	if code := h.run("run", "--snapshot", testMonth); code != ExitWrongMonth {
		t.Fatalf("run --snapshot %s exit %d, want %d\n%s", testMonth, code, ExitWrongMonth, h.stdout)
	}
	if out := h.stdout.String(); !strings.Contains(out, "4 of 4") {
		t.Errorf("the mismatch summary does not say %s holds 4 of 4:\n%s", testMonth, out)
	}
	events := rcv.got()
	last := events[len(events)-1]
	if text, _ := last["text"].(string); !strings.Contains(text, testMonth+" stays complete") || !strings.Contains(text, "4/4") {
		t.Errorf("the mismatch webhook says %q, want %s stays complete with 4/4", text, testMonth)
	}
}

// TestRebuildAllCountsMonthsAndDomains: rebuild --all of 3 domains × 2 months says 2 months, 3
// domains (6 domain-months), not "6 domains".
func TestRebuildAllCountsMonthsAndDomains(t *testing.T) {
	h := newHarness(t, atlastest.Options{}, atlastest.Domains(3), "")
	if code := h.run("run"); code != ExitOK {
		t.Fatalf("run exit %d\n%s", code, h.stdout)
	}
	if err := h.srv.SetMonth("2026-11"); err != nil {
		t.Fatal(err)
	}
	if code := h.run("run"); code != ExitOK {
		t.Fatalf("second month's run exit %d\n%s", code, h.stdout)
	}
	if code := h.run("rebuild", "--all"); code != ExitOK {
		t.Fatalf("rebuild --all exit %d\n%s", code, h.stderr)
	}
	golden(t, "rebuild-all.golden", strings.ReplaceAll(h.stdout.String(), h.dir, "DIR"))
}

// TestCheckSaysWhyTheKeyIsNotUsable: check with no usable key says so on stdout, in its
// checklist, right after the config line; the error is printed once.
func TestCheckSaysWhyTheKeyIsNotUsable(t *testing.T) {
	h := newHarness(t, atlastest.Options{}, atlastest.Domains(3), "")
	h.extraEnv = map[string]string{config.EnvAPIKey: ""}
	if code := h.run("check"); code != ExitUsage {
		t.Fatalf("check without a key: exit %d, want %d\n%s%s", code, ExitUsage, h.stdout, h.stderr)
	}
	golden(t, "check-no-key.golden", strings.ReplaceAll(h.stdout.String(), h.cfgPath, "domains.yaml"))
	if !strings.Contains(h.stdout.String(), "ATLAS_API_KEY") || strings.Contains(h.stderr.String(), "ATLAS_API_KEY") {
		t.Errorf("the reason is not printed once, on stdout:\n%s\nstderr:\n%s", h.stdout, h.stderr)
	}
	if h.srv.Stats().Requests != 0 {
		t.Errorf("check without a key called the API %d times", h.srv.Stats().Requests)
	}
}

// TestDemoTwoSourceCheckWithoutOverride: make demo's two-source config names each source's
// base_url, so its `check` runs without ATLAS_BASE_URL: with it, check warns that the variable
// replaces every source's address, a WARN the demo's own config should not cause.
func TestDemoTwoSourceCheckWithoutOverride(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "scripts", "demo.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, `check --config "$two/domains.yaml"`) && !strings.Contains(line, "env -u ATLAS_BASE_URL") {
			t.Errorf("the demo's two-source check keeps ATLAS_BASE_URL set (a WARN on its own config):\n%s", line)
		}
	}
}

// TestBinaryLinksNoGCSOrAzure: sitewatch writes Iceberg tables to S3 only, so the binary links
// iceberg-go's S3 FileIO alone: no GCS or Azure blob driver or SDK (importing
// github.com/apache/iceberg-go/io/gocloud itself, or io/gocloud/gcs, would register them).
func TestBinaryLinksNoGCSOrAzure(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	out, err := exec.Command("go", "list", "-deps", "sitewatch/cmd/sitewatch").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, bad := range []string{"gocloud.dev/blob/gcsblob", "gocloud.dev/blob/azureblob", "cloud.google.com/go/storage", "github.com/Azure/", "github.com/apache/iceberg-go/io/gocloud/gcs", "github.com/apache/iceberg-go/io/gocloud/azure"} {
			if strings.HasPrefix(pkg, bad) {
				t.Errorf("the binary links %s (from %s): sitewatch never calls it", pkg, bad)
			}
		}
	}
}
