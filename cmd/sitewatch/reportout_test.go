package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sitewatch/internal/testenv"
	"sitewatch/pipeline/atlas/atlastest"
)

// TestReportNeverOverwritesData: --out naming the warehouse, its WAL, a file in the Parquet
// tree, or an existing non-HTML file is refused (exit 2) and the file is untouched; a previous
// report is replaced, and --force replaces anything else.
func TestReportNeverOverwritesData(t *testing.T) {
	h := newHarness(t, atlastest.Options{}, atlastest.Domains(2), "")
	if code := h.run("run"); code != ExitOK {
		t.Fatalf("run exit %d\n%s", code, h.stdout)
	}
	duck := filepath.Join(h.dir, "data/w.duckdb")
	parquetFile, _ := filepath.Glob(filepath.Join(h.dir, "data/parquet/sites/*/*.parquet"))
	notes := filepath.Join(h.dir, "notes.txt")
	if err := os.WriteFile(notes, []byte("my notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(h.dir, "link.html")
	if err := os.Symlink(duck, link); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{duck, duck + ".wal", parquetFile[0], notes, link, filepath.Join(h.dir, "data/parquet/x.html")} {
		before, _ := os.ReadFile(out)
		if code := h.run("report", "--out", out); code != ExitUsage {
			t.Errorf("--out %s: exit %d, want %d\n%s", out, code, ExitUsage, h.stderr)
		}
		if after, _ := os.ReadFile(out); !bytes.Equal(before, after) {
			t.Errorf("--out %s: the file changed", out)
		}
	}
	report := filepath.Join(h.dir, "report.html")
	for i := range 2 { // a previous report is replaced
		if code := h.run("report", "--out", report); code != ExitOK {
			t.Fatalf("report #%d exit %d\n%s", i+1, code, h.stderr)
		}
	}
	if code := h.run("report", "--out", notes, "--force"); code != ExitOK {
		t.Fatalf("--force exit %d\n%s", code, h.stderr)
	}
	if b, _ := os.ReadFile(notes); !strings.Contains(strings.ToLower(string(b[:min(len(b), 100)])), "<!doctype html") {
		t.Errorf("--force did not write the report")
	}
}

// TestDefaultReportFileIsGitIgnored: the file `sitewatch report` writes by default
// (report-YYYY-MM.html) is ignored, so following the README leaves no untracked file.
func TestDefaultReportFileIsGitIgnored(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		testenv.Missing(t, "git not installed")
	}
	for _, name := range []string{"report-2026-11.html", "report.html", "report-2026-11-domains.csv"} {
		if err := exec.Command("git", "-C", "../..", "check-ignore", "-q", "--no-index", name).Run(); err != nil {
			t.Errorf("%s is not ignored by .gitignore (git check-ignore: %v)", name, err)
		}
	}
}

// TestReportWritesEveryDomainBesideIt: the report writes <name>-domains.csv beside the page,
// one row per loaded domain with unrounded figures, and says so; an existing file of that name
// that the report did not write is refused (exit 2, untouched) unless --force.
func TestReportWritesEveryDomainBesideIt(t *testing.T) {
	h := newHarness(t, atlastest.Options{}, atlastest.Domains(3), "")
	if code := h.run("run"); code != ExitOK {
		t.Fatalf("run exit %d\n%s", code, h.stdout)
	}
	page := filepath.Join(h.dir, "r.html")
	if code := h.run("report", "--out", page); code != ExitOK {
		t.Fatalf("report exit %d\n%s", code, h.stderr)
	}
	csvPath := filepath.Join(h.dir, "r-domains.csv")
	if !strings.Contains(h.stdout.String(), csvPath) {
		t.Errorf("the report does not say it wrote %s: %q", csvPath, h.stdout)
	}
	b, err := os.ReadFile(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "\ufeffDomain,Title,Category,Visits,MoM,YoY,Global rank") {
		t.Fatalf("CSV: %d lines, want a header and 3 domains:\n%s", len(lines), b)
	}
	for _, d := range atlastest.Domains(3) {
		if !strings.Contains(string(b), "\n"+d+",") {
			t.Errorf("CSV lacks %s", d)
		}
	}
	if html, _ := os.ReadFile(page); !bytes.Contains(html, []byte("Every loaded domain (3)")) {
		t.Errorf("the page's All domains table does not say it holds every domain")
	}

	mine := filepath.Join(h.dir, "mine-domains.csv")
	if err := os.WriteFile(mine, []byte("a,b\n1,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := h.run("report", "--out", filepath.Join(h.dir, "mine.html")); code != ExitUsage {
		t.Errorf("a CSV the report did not write: exit %d, want %d\n%s", code, ExitUsage, h.stderr)
	}
	if after, _ := os.ReadFile(mine); string(after) != "a,b\n1,2\n" {
		t.Errorf("the user's CSV changed: %q", after)
	}
	if _, err := os.Stat(filepath.Join(h.dir, "mine.html")); err == nil {
		t.Errorf("the page was written although its CSV was refused")
	}
}
