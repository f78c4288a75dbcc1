package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"

	"sitewatch/pipeline"
	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/config"
)

// mainOut runs Main in-process with stdin and returns the exit code, stdout and stderr.
func mainOut(stdin string, args ...string) (int, string, string) {
	var stdout, stderr syncBuffer
	code := Main(context.Background(), args, Env{Env: pipeline.Env{Getenv: func(string) string { return "" }}, Stdin: strings.NewReader(stdin), Stdout: &stdout, Stderr: &stderr})
	return code, stdout.String(), stderr.String()
}

// TestHelpEveryCommand: -h, --help and `help CMD` exit 0 for every command and print the
// one-line description, the usage, the flags and examples on stdout.
func TestHelpEveryCommand(t *testing.T) {
	for _, c := range commands {
		for _, args := range [][]string{{c.name, "-h"}, {c.name, "--help"}, {"help", c.name}, {c.name, "--help", "extra-argument"}} {
			code, out, errOut := mainOut("", args...)
			if code != ExitOK || errOut != "" {
				t.Errorf("%v: exit %d, stderr %q; want 0 and nothing on stderr", args, code, errOut)
			}
			for _, want := range []string{c.help.summary, "usage: sitewatch " + c.name, "examples:\n  sitewatch " + c.name} {
				if !strings.Contains(out, want) {
					t.Errorf("%v: help lacks %q:\n%s", args, want, out)
				}
			}
		}
	}
	code, out, _ := mainOut("", "--help")
	if code != ExitOK || !strings.Contains(out, "sitewatch query") || !strings.Contains(out, "--version") {
		t.Errorf("sitewatch --help: exit %d\n%s", code, out)
	}
	if code, _, errOut := mainOut(""); code != ExitUsage || !strings.Contains(errOut, "usage:") {
		t.Errorf("sitewatch alone: exit %d, stderr %q; want 2 and the usage on stderr", code, errOut)
	}
}

func TestVersion(t *testing.T) {
	code, out, errOut := mainOut("", "--version")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !regexp.MustCompile(`^sitewatch (\(devel\)|v\S+)\nDuckDB v\d+\.\d+\.\d+ \(go-duckdb v\S+\)\ngo1\.`).MatchString(out) {
		t.Errorf("--version output:\n%s", out)
	}
}

// TestUsageErrors: contradictory, out-of-range and extra arguments exit 2 before anything is
// opened, with one "sitewatch CMD:" prefix and the usage line.
func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"status", "--limit", "0"}, "--limit 0 is out of range: use 1 or more"},
		{[]string{"status", "--limit", "-3"}, "--limit -3 is out of range"},
		{[]string{"schema", "sites"}, `takes no arguments, got "sites"`},
		{[]string{"schema", "--format", "html"}, `--format "html": use text or markdown`},
		{[]string{"rebuild", "--all", "--snapshot", "2026-01"}, "--all and --snapshot contradict each other"},
		{[]string{"run", "extra"}, `takes no arguments, got "extra"`},
		{[]string{"run", "--snapshot", "2026-13"}, `--snapshot "2026-13" is not a month`},
		{[]string{"query"}, "no SQL: pass it as an argument"},
		{[]string{"query", "SELECT 1", "-f", "q.sql"}, "either as an argument or with -f FILE, not both"},
		{[]string{"query", "SELECT 1", "SELECT 2"}, "takes at most 1 argument(s), got 2"},
		{[]string{"query", "--format", "xml", "SELECT 1"}, `--format "xml": use table, csv or json`},
		{[]string{"query", "SELECT 1", "--nope"}, "flag provided but not defined: -nope"},
		{[]string{"launch"}, `unknown command "launch"`},
	}
	for _, tc := range tests {
		code, _, errOut := mainOut("", tc.args...)
		if code != ExitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errOut, tc.want)
		}
		if strings.Count(errOut, "sitewatch "+tc.args[0]+":") > 1 {
			t.Errorf("%v: the prefix repeats: %q", tc.args, errOut)
		}
	}
}

// TestParseArgsInterspersed: flags are accepted before and after positional arguments, and
// "--" ends them.
func TestParseArgsInterspersed(t *testing.T) {
	f := newFlags("query", Env{}.withDefaults(), true, false)
	format := f.fs.String("format", "table", "")
	if err := f.parseArgs([]string{"SELECT 1", "--format", "csv", "--config", "c.yaml"}, 0, 1); err != nil {
		t.Fatal(err)
	}
	if *format != "csv" || f.config != "c.yaml" || len(f.args) != 1 || f.args[0] != "SELECT 1" {
		t.Errorf("format %q config %q args %q", *format, f.config, f.args)
	}
	if err := f.parseArgs([]string{"--", "--format"}, 0, 1); err != nil || len(f.args) != 1 || f.args[0] != "--format" {
		t.Errorf("after --: args %q, err %v", f.args, err)
	}
}

// TestValidateOutcome: validate says "config valid" only when it exits 0; with a rejected
// entry it says why and exits 2, listing every rewritten, collapsed or rejected entry.
func TestValidateOutcome(t *testing.T) {
	h := newHarness(t, atlastest.Options{}, []string{"example.com", "www.example.com", "co.uk", "www.co.uk"}, "")
	code := h.run("validate")
	out := h.stdout.String()
	if code != ExitUsage || strings.Contains(out, "config valid") {
		t.Errorf("exit %d, output:\n%s; want 2 and no \"config valid\"", code, out)
	}
	for _, want := range []string{`duplicate  line`, `"co.uk": not a host name: a public suffix`} {
		if !strings.Contains(out, want) {
			t.Errorf("validate output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(h.stderr.String(), "config not valid: 1 watchlist entries") {
		t.Errorf("stderr: %s", h.stderr)
	}
	h = newHarness(t, atlastest.Options{}, []string{"example.com", "www.co.uk"}, "")
	if code := h.run("validate"); code != ExitOK || !strings.Contains(h.stdout.String(), "config valid") {
		t.Errorf("clean config: exit %d\n%s%s", code, h.stdout, h.stderr)
	}
}

// TestMalformedKeyRefused: a key with a trailing CR (a CRLF secrets file) is refused with exit
// 2 before any call, without printing it.
func TestMalformedKeyRefused(t *testing.T) {
	h := newHarness(t, atlastest.Options{}, atlastest.Domains(1), "")
	h.extraEnv = map[string]string{config.EnvAPIKey: h.key + "\r"}
	code := h.run("run", "--snapshot", testMonth)
	if code != ExitUsage || !strings.Contains(h.stderr.String(), "carriage return") {
		t.Errorf("exit %d, stderr %q; want 2 and the reason", code, h.stderr)
	}
	if n := h.srv.Stats().Requests; n != 0 {
		t.Errorf("%d requests made with a malformed key", n)
	}
}

// TestConfigErrorsAllReported: `sitewatch validate` prints every config problem, each with
// its line, under one prefix.
func TestConfigErrorsAllReported(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "domains.yaml")
	text := "schedule: \"0 6 32 * *\"\napi:\n  base_url: https://g.example\n  rate_limit: fast\ndomains: [a.com]\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := mainOut("", "validate", "--config", path)
	if code != ExitUsage {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"sitewatch validate: 2 problems in the config:", path + ":1: schedule: \"0 6 32 * *\": 32 is not a valid day of month (1-31)", path + ":4: api.rate_limit: `fast` is not a number"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

// TestQueryEndToEnd: SQL from an argument with flags after it, from stdin and from a file;
// several statements each print their result.
func TestQueryEndToEnd(t *testing.T) {
	h := newHarness(t, atlastest.Options{}, atlastest.Domains(2), "")
	if code := h.run("run", "--snapshot", testMonth); code != ExitOK {
		t.Fatalf("run exit %d\n%s", code, h.stderr)
	}
	if code := h.run("query", "SELECT count(*) AS n FROM sites", "--format", "csv"); code != ExitOK || h.stdout.String() != "n\n2\n" {
		t.Errorf("flags after the SQL: exit %d, stdout %q, stderr %s", code, h.stdout, h.stderr)
	}
	env := h.env()
	env.Stdin = strings.NewReader("select 1 as a; select 'x;y' as b;")
	if code := Main(context.Background(), []string{"query", "--config", h.cfgPath, "-", "--format", "csv"}, env); code != ExitOK || h.stdout.String() != "a\n1\n\nb\nx;y\n" {
		t.Errorf("stdin: exit %d, stdout %q, stderr %s", code, h.stdout, h.stderr)
	}
	file := filepath.Join(h.dir, "q.sql")
	if err := os.WriteFile(file, []byte("-- two results\nSELECT 1 AS one;\nSELECT domain FROM sites ORDER BY domain;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := h.run("query", "-f", file); code != ExitOK || strings.Count(h.stdout.String(), "rows)") != 1 || strings.Count(h.stdout.String(), "row)") != 1 {
		t.Errorf("-f: exit %d\n%s%s", code, h.stdout, h.stderr)
	}
	if code := h.run("query", "--format", "json", "SELECT map_from_entries([('a', 1)]) AS m"); code != ExitOK || !strings.Contains(h.stdout.String(), `{"m": {"a": 1}}`) {
		t.Errorf("json with a MAP: exit %d\n%s%s", code, h.stdout, h.stderr)
	}
	if code := h.run("query", "SELECT body FROM raw_responses LIMIT 1"); code != ExitOK || !strings.Contains(h.stdout.String(), "bytes)") {
		t.Errorf("raw_responses body: exit %d, want a hex preview\n%s%s", code, h.stdout, h.stderr)
	}
}

// TestReadmeQueriesRender runs the README's five first queries (docs/queries.sql) through
// `sitewatch query -f` on a warehouse the simulator filled, and checks that every number is
// readable: no exponent, no Go struct dump, separators in large numbers.
func TestReadmeQueriesRender(t *testing.T) {
	h := newHarness(t, atlastest.Options{}, atlastest.Domains(4), "")
	if code := h.run("run", "--snapshot", testMonth); code != ExitOK {
		t.Fatalf("run exit %d\n%s", code, h.stderr)
	}
	if code := h.run("query", "-f", filepath.Join("..", "..", "docs", "queries.sql")); code != ExitOK {
		t.Fatalf("exit %d\n%s", code, h.stderr)
	}
	out := h.stdout.String()
	if n := strings.Count(out, " rows)\n") + strings.Count(out, " row)\n"); n != 5 {
		t.Errorf("%d results, want 5:\n%s", n, out)
	}
	if m := regexp.MustCompile(`\d[eE][+-]?\d|\{\d+ \d+ |0x[0-9a-f]+`).FindString(out); m != "" {
		t.Errorf("unreadable number %q in:\n%s", m, out)
	}
	if !regexp.MustCompile(`\d{1,3},\d{3}`).MatchString(out) {
		t.Errorf("no thousands separators in:\n%s", out)
	}
	if code := h.run("query", "--raw", "-f", filepath.Join("..", "..", "docs", "queries.sql")); code != ExitOK || regexp.MustCompile(`\d,\d{3}`).MatchString(h.stdout.String()) {
		t.Errorf("--raw: exit %d, separators left:\n%s", code, h.stdout)
	}
}

// TestTuneGC: sitewatch collects at GOGC 50 unless the environment sets GOGC, which then wins.
func TestTuneGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	tuneGC(func(string) string { return "" })
	if got := debug.SetGCPercent(100); got != defaultGCPercent {
		t.Errorf("GC percent without GOGC = %d, want %d", got, defaultGCPercent)
	}
	tuneGC(func(name string) string {
		if name == "GOGC" {
			return "200"
		}
		return ""
	})
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set, tuneGC changed the GC percent to %d", got)
	}
}
