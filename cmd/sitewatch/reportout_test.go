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
	for _, name := range []string{"report-2026-11.html", "report.html"} {
		if err := exec.Command("git", "-C", "../..", "check-ignore", "-q", "--no-index", name).Run(); err != nil {
			t.Errorf("%s is not ignored by .gitignore (git check-ignore: %v)", name, err)
		}
	}
}
