package warehouse

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCompareToRelease(t *testing.T) {
	tests := []struct {
		name       string
		today      float64
		wantSlower bool
		wantWord   string
	}{
		{"Same", 0.89, false, "within 10%"},
		{"TenPercentWorse", 0.979, false, "within 10%"},
		{"Slower", 0.99, true, "slower"},
		{"Faster", 0.70, false, "faster"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line, slower := compareToRelease(tt.today, 0.89, "f03e3ef")
			if slower != tt.wantSlower || !strings.HasSuffix(line, tt.wantWord) || !strings.Contains(line, "(f03e3ef) 0.89") {
				t.Errorf("compareToRelease(%v, 0.89) = %q, %v; want %q, slower %v", tt.today, line, slower, tt.wantWord, tt.wantSlower)
			}
		})
	}
}

func TestReadReleaseRatio(t *testing.T) {
	dir := t.TempDir()
	pkg := filepath.Join(dir, "pipeline", "warehouse")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := readReleaseRatio(pkg); err == nil {
		t.Fatal("no README.md: want an error")
	}
	row := "| rebuild | `go test …` | ours ÷ DuckDB 1.5.6 **0.85–0.93**; `ratio_vs_current_duckdb` of the last release (f03e3ef): **0.89** |\n"
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# x\n"+row), 0o644); err != nil {
		t.Fatal(err)
	}
	ratio, commit, err := readReleaseRatio(pkg)
	if err != nil || ratio != 0.89 || commit != "f03e3ef" {
		t.Fatalf("readReleaseRatio = %v, %q, %v; want 0.89, f03e3ef", ratio, commit, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# x\nno figure\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := readReleaseRatio(pkg); err == nil || !strings.Contains(err.Error(), "no release figure") {
		t.Fatalf("README without the figure: err = %v, want one naming the missing figure", err)
	}
}
