package warehouse

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// TestReadersSpillApart runs two read-only opens whose sorts exceed their memory limit at the
// same time: each spills to a directory of its own, removed when it closes. Sharing DuckDB's
// default <file>.tmp/, one reader deleted the other's spill file and the process crashed.
func TestReadersSpillApart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "w.duckdb")
	w, err := Open(ctx, Options{DuckDBPath: path})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.DB().ExecContext(ctx, `CREATE TABLE big AS SELECT i, md5(i::VARCHAR) AS s FROM range(3000000) r(i)`); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	readers := make([]*Warehouse, 2)
	for i := range readers {
		if readers[i], err = Open(ctx, Options{DuckDBPath: path, ReadOnly: true, MemoryLimit: "64MB"}); err != nil {
			t.Fatal(err)
		}
	}
	if readers[0].spillDir == "" || readers[0].spillDir == readers[1].spillDir {
		t.Fatalf("spill directories %q and %q: want one of its own each", readers[0].spillDir, readers[1].spillDir)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(readers))
	for i, r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var n int64
			errs[i] = r.DB().QueryRowContext(ctx, `SELECT count(*) FROM (SELECT s FROM big ORDER BY s OFFSET 1)`).Scan(&n)
		}()
	}
	wg.Wait()
	for i, r := range readers {
		if errs[i] != nil {
			t.Errorf("reader %d: %v", i, errs[i])
		}
		dir := r.spillDir
		if err := r.Close(); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("reader %d's spill directory %s is still there after Close (%v)", i, dir, err)
		}
	}
}

// TestDeadReadersSpillDirsRemoved: a reader killed before Close (kill -9 of a run) leaves its
// spill directory; the next read-only open removes it once its process is gone, and leaves a
// live process's alone.
func TestDeadReadersSpillDirsRemoved(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "w.duckdb")
	w, err := Open(ctx, Options{DuckDBPath: path})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(filepath.Dir(path), fmt.Sprintf("%s%d-123.tmp", spillPrefix(path), gone.Process.Pid))
	live := filepath.Join(filepath.Dir(path), fmt.Sprintf("%s%d-456.tmp", spillPrefix(path), os.Getppid()))
	for _, dir := range []string{dead, live} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Open(ctx, Options{DuckDBPath: path, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("the dead reader's spill directory is still there (%v)", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a live process's spill directory was removed: %v", err)
	}
}

// TestReaderLimits: a read-only open runs under DefaultReadMemoryLimit, not DuckDB's 80 % of
// the machine's memory, and may spill at most readerMaxSpill (minMaxSpill for a small file),
// not DuckDB's 90 % of the free disk; Options override both.
func TestReaderLimits(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "w.duckdb")
	w, err := Open(ctx, Options{DuckDBPath: path})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name             string
		opts             Options
		wantMem, wantTmp string // as DuckDB prints them
	}{
		{"defaults", Options{}, "366.2 MiB", "2.0 GiB"}, // 384 MB (10^6 bytes), 2 GiB
		{"set", Options{MemoryLimit: "64MB", MaxSpill: "1MB"}, "61.0 MiB", "976.5 KiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.DuckDBPath, tc.opts.ReadOnly = path, true
			r, err := Open(ctx, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = r.Close() }()
			var mem, tmp string
			err = r.DB().QueryRowContext(ctx, `SELECT current_setting('memory_limit'), current_setting('max_temp_directory_size')`).Scan(&mem, &tmp)
			if err != nil {
				t.Fatal(err)
			}
			if mem != tc.wantMem || tmp != tc.wantTmp {
				t.Errorf("memory_limit %s, max_temp_directory_size %s; want %s, %s", mem, tmp, tc.wantMem, tc.wantTmp)
			}
		})
	}
}

// TestReaderSpillDirFallsBackToTemp: when the warehouse's directory takes no new directory,
// a reader spills to one of its own in the OS's temp directory, not DuckDB's shared default.
func TestReaderSpillDirFallsBackToTemp(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir := readerSpillDir(filepath.Join(tmp, "missing", "w.duckdb"), slog.New(slog.DiscardHandler))
	if filepath.Dir(dir) != tmp {
		t.Errorf("spill directory %q, want one in the temp directory %s", dir, tmp)
	}
}
