package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sitewatch/internal/testenv"
	"sitewatch/pipeline"
	"sitewatch/pipeline/warehouse"
)

// discoverConfig is the watchlist of pipeline/discover/testdata/fixture.sql, written the way a
// user writes domains.yaml (CRLF, comments, quotes, an anchor, a trailing comment block).
var discoverConfig = strings.ReplaceAll(`# watchlist of the brand team
api:
  base_url: http://127.0.0.1:1
warehouse:
  duckdb: data/w.duckdb
domains:
  - &first w1.com   # our flagship
  - "w2.com"
  - 'w3.com'
  - w4.com
  - w5.com
  - https://www.W6.com/
  - giant.com
  - *first

# trailing notes
`, "\n", "\r\n")

// discoverProject writes the config and a warehouse holding the fixture with known answers
// (its header lists them); it returns the config path.
func discoverProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "domains.yaml")
	if err := os.WriteFile(cfg, []byte(discoverConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	wh, err := warehouse.Open(ctx, warehouse.Options{DuckDBPath: filepath.Join(dir, "data/w.duckdb")})
	if err != nil {
		t.Fatal(err)
	}
	fixture, err := os.ReadFile("../../pipeline/discover/testdata/fixture.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wh.DB().ExecContext(ctx, string(fixture)); err != nil {
		t.Fatalf("load fixture: %v", err)
	}
	if err := wh.Close(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// discoverRun runs sitewatch discover in-process on 2026-11-27.
func discoverRun(args ...string) (int, string, string) {
	var stdout, stderr syncBuffer
	env := Env{Env: pipeline.Env{Getenv: func(string) string { return "" },
		Now: func() time.Time { return time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC) }}, Stdout: &stdout, Stderr: &stderr}
	code := Main(context.Background(), append([]string{"discover"}, args...), env)
	return code, stdout.String(), stderr.String()
}

// wantOrder is the ranking the fixture's known answers give: six domains listing six.com put
// it above solo.com that one giant lists; newrise.com (new, rising) goes above static.com
// (same reach, static).
var wantOrder = []string{"six.com", "newrise.com", "static.com", "solo.com"}

func TestDiscoverTableCSVJSON(t *testing.T) {
	cfg := discoverProject(t)
	t.Run("table", func(t *testing.T) {
		code, out, errOut := discoverRun("--config", cfg)
		if code != ExitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var order []string
		for _, line := range strings.Split(out, "\n") {
			for _, d := range wantOrder {
				if strings.Contains(line, " "+d+" ") {
					order = append(order, d)
				}
			}
		}
		if !slices.Equal(order, wantOrder) {
			t.Errorf("table rows in order %v, want %v:\n%s", order, wantOrder, out)
		}
		for _, want := range []string{"discover 2026-10:", "similar to 6 of your 7, as many as last month; 41.0M visits, rank #812", "similar to 2 of your 7, new this month",
			"41.0M  ", "#812  ", "with at least 5,000 visits a month"} {
			if !strings.Contains(out, want) {
				t.Errorf("table lacks %q:\n%s", want, out)
			}
		}
		for _, gone := range []string{"rejected.com", "192.168.1.1", "not a host", "w1.com ", "tinyhigh.com", "NULL", "41000000"} {
			if strings.Contains(out, gone) {
				t.Errorf("table lists %q, which cannot be added:\n%s", gone, out)
			}
		}
	})
	t.Run("csv", func(t *testing.T) {
		code, out, errOut := discoverRun("--config", cfg, "--format", "csv")
		if code != ExitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if recs[0][0] != "rank" || recs[0][1] != "domain" || len(recs) != len(wantOrder)+1 {
			t.Fatalf("csv = %v", recs)
		}
		for i, d := range wantOrder {
			if recs[i+1][1] != d || recs[i+1][0] != strings.TrimSpace(string(rune('1'+i))) {
				t.Errorf("csv row %d = %v, want rank %d %s", i+1, recs[i+1], i+1, d)
			}
		}
		if recs[2][7] != "true" || recs[2][8] != "true" || recs[3][7] != "false" || recs[3][8] != "false" {
			t.Errorf("is_new/is_rising: newrise %v, static %v", recs[2][7:9], recs[3][7:9])
		}
	})
	t.Run("json", func(t *testing.T) {
		code, out, errOut := discoverRun("--config", cfg, "--format", "json", "--top", "2")
		if code != ExitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var rows []struct {
			Rank      int     `json:"rank"`
			Domain    string  `json:"domain"`
			WatchedBy int     `json:"watched_by"`
			Visits    float64 `json:"total_visits"`
			IsNew     bool    `json:"is_new"`
			Reason    string  `json:"reason"`
		}
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			t.Fatalf("json: %v\n%s", err, out)
		}
		if len(rows) != 2 || rows[0].Domain != "six.com" || rows[0].WatchedBy != 6 || rows[0].Visits != 41e6 || rows[1].Domain != "newrise.com" || !rows[1].IsNew {
			t.Errorf("json rows = %+v", rows)
		}
	})
}

// addedLines returns the 1-based numbers of the lines of data holding "# added by".
func addedLines(data []byte) []int {
	var out []int
	for i, l := range bytes.SplitAfter(data, []byte("\n")) {
		if bytes.Contains(l, []byte("# added by sitewatch discover")) {
			out = append(out, i+1)
		}
	}
	return out
}

func dropLines(data []byte, lines []int) []byte {
	var out []byte
	for i, l := range bytes.SplitAfter(data, []byte("\n")) {
		if !slices.Contains(lines, i+1) {
			out = append(out, l...)
		}
	}
	return out
}

func TestDiscoverAdd(t *testing.T) {
	cfg := discoverProject(t)
	t.Run("dry run shows the diff, writes nothing", func(t *testing.T) {
		code, out, errOut := discoverRun("--config", cfg, "--add", "2", "--dry-run")
		if code != ExitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		for _, want := range []string{"+++ ", "@@ -", "+  - six.com  # added by sitewatch discover 2026-11-27 from 2026-10", "+  - newrise.com", "would add 2 domains from 2026-10: 4 credits a month, 48 a year"} {
			if !strings.Contains(out, want) {
				t.Errorf("dry run output lacks %q:\n%s", want, out)
			}
		}
		if got, _ := os.ReadFile(cfg); string(got) != discoverConfig {
			t.Error("--dry-run changed the file")
		}
	})
	t.Run("budget 0 adds nothing and exits 3", func(t *testing.T) {
		code, _, errOut := discoverRun("--config", cfg, "--add", "3", "--budget", "0")
		if got, _ := os.ReadFile(cfg); code != ExitCredits || string(got) != discoverConfig || !strings.Contains(errOut, "nothing added") {
			t.Errorf("exit %d (want 3), file changed %v, stderr %q", code, string(got) != discoverConfig, errOut)
		}
	})
	t.Run("adds within the budget keeping every byte", func(t *testing.T) {
		code, out, errOut := discoverRun("--config", cfg, "--add", "3", "--budget", "5") // 5 credits: 2 domains
		if code != ExitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		got, _ := os.ReadFile(cfg)
		lines := addedLines(got)
		if len(lines) != 2 {
			t.Fatalf("added lines %v, want 2 (budget 5 credits, 2 a domain):\n%s", lines, got)
		}
		if !bytes.Equal(dropLines(got, lines), []byte(discoverConfig)) {
			t.Errorf("the file minus the added lines differs from the old file:\n%q", got)
		}
		if !strings.Contains(out, "added six.com (line 15): 2 credits a month, 24 a year") {
			t.Errorf("output:\n%s", out)
		}
		if prev, _ := os.ReadFile(cfg + ".prev"); string(prev) != discoverConfig {
			t.Error("the previous file is not kept as domains.yaml.prev")
		}
		// The next discover leaves out what was added; validate shows the new entries.
		_, out, _ = discoverRun("--config", cfg, "--format", "csv")
		if strings.Contains(out, "six.com") || !strings.Contains(out, "static.com") {
			t.Errorf("discover after --add:\n%s", out)
		}
		code, out, errOut = mainOut("", "validate", "--config", cfg)
		if code != ExitOK || !strings.Contains(out, "10 entries -> 9 domains") {
			t.Errorf("validate: exit %d\n%s%s", code, out, errOut)
		}
	})
}

// TestDiscoverFloorOffAndNoCandidate: --min-visits 0 lists tinyhigh.com (147 visits, no
// category) first, its visits a whole number and its category a dash, never NULL; --add with a
// floor no candidate reaches adds nothing and exits 1.
func TestDiscoverFloorOffAndNoCandidate(t *testing.T) {
	cfg := discoverProject(t)
	code, out, errOut := discoverRun("--config", cfg, "--min-visits", "0")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	first := ""
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "1 ") {
			first = l
		}
	}
	if !strings.Contains(first, "tinyhigh.com") || !strings.Contains(first, " 147 ") || !strings.Contains(first, "—") || strings.Contains(out, "NULL") {
		t.Errorf("--min-visits 0: first row %q, want tinyhigh.com with 147 visits and a dash for its category:\n%s", first, out)
	}
	code, _, errOut = discoverRun("--config", cfg, "--add", "2", "--min-visits", "999000000")
	if got, _ := os.ReadFile(cfg); code != ExitFailed || string(got) != discoverConfig || !strings.Contains(errOut, "nothing added") {
		t.Errorf("--add above every candidate: exit %d (want 1), file changed %v, stderr %q", code, string(got) != discoverConfig, errOut)
	}
}

func TestDiscoverAddRefusesReadOnlyFile(t *testing.T) {
	cfg := discoverProject(t)
	makeUnwritable(t, cfg)
	code, _, errOut := discoverRun("--config", cfg, "--add", "1")
	if got, _ := os.ReadFile(cfg); code != ExitUsage || string(got) != discoverConfig {
		t.Errorf("exit %d (want 2), file changed %v: %s", code, string(got) != discoverConfig, errOut)
	}
}

func TestDiscoverUsage(t *testing.T) {
	for _, args := range [][]string{{"--budget", "4"}, {"--dry-run"}, {"--add", "0"}, {"--add", "1", "--budget", "-3"}, {"--format", "xml"}, {"--top", "-1"}, {"--min-visits", "-5"}} {
		if code, _, _ := discoverRun(args...); code != ExitUsage {
			t.Errorf("discover %v: exit %d, want 2", args, code)
		}
	}
}

// makeUnwritable makes path not writable for this process: mode 0444, and for root (whom
// modes do not bind) the immutable attribute, removed again at cleanup.
func makeUnwritable(t *testing.T, path string) {
	t.Helper()
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		return
	}
	if out, err := exec.Command("chattr", "+i", path).CombinedOutput(); err != nil {
		testenv.Missing(t, "running as root and chattr +i failed (%v: %s): no way to make a file unwritable here", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("chattr", "-i", path).Run() })
}
