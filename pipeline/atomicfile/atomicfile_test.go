package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteReplaces: Write, then WriteFile, replace the file with their content and mode and
// leave nothing else beside it (the name has glob characters on purpose).
func TestWriteReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report[1].html")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := Write(path, 0o644, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err })
	if err != nil {
		t.Fatal(err)
	}
	assertFile(t, path, "new", 0o644)
	if err := WriteFile(path, []byte("newer"), 0o640); err != nil {
		t.Fatal(err)
	}
	assertFile(t, path, "newer", 0o640)
	assertOnly(t, dir, "report[1].html")
}

func assertFile(t *testing.T, path, content string, perm os.FileMode) {
	t.Helper()
	b, _ := os.ReadFile(path)
	fi, _ := os.Stat(path)
	if string(b) != content || fi.Mode().Perm() != perm {
		t.Errorf("file %q mode %v, want %q %v", b, fi.Mode().Perm(), content, perm)
	}
}

func TestWriteFailureLeavesTheOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sitewatch.prom")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("encode failed")
	err := Write(path, 0o644, func(w io.Writer) error { _, _ = io.WriteString(w, "half"); return boom })
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), path) {
		t.Fatalf("err = %v, want the writer's error naming %s", err, path)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("file %q after a failed write, want the old content", b)
	}
	assertOnly(t, dir, "sitewatch.prom")
}

// A write killed before its rename leaves a sibling; RemoveLeftovers deletes those of its
// file (even with glob characters in the name) and nothing else.
func TestRemoveLeftovers(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "w[1].duckdb.run.json")
	for _, name := range []string{".w[1].duckdb.run.json.tmp-1177587978", ".other.run.json.tmp-42", "w[1].duckdb.run.json"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := RemoveLeftovers(path); err != nil {
		t.Fatal(err)
	}
	assertOnly(t, dir, ".other.run.json.tmp-42", "w[1].duckdb.run.json")
}

func assertOnly(t *testing.T, dir string, want ...string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("directory holds %v, want %v", got, want)
	}
}
