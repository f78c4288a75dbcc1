package filehash

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// aged writes body to name under dir with a modification time an hour ago: older than
// racyWindow, as a month exported before its publish is.
func aged(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	return p
}

// counted returns a compute function answering sum and counting its calls.
func counted(sum string, calls *int) func() (string, error) {
	return func() (string, error) { *calls++; return sum, nil }
}

func TestSumIsReadOnceWhileTheFilesStayTheSame(t *testing.T) {
	root := t.TempDir()
	a := aged(t, root, "t/snapshot_month=2026-10/data_0.parquet", "aaaa")
	b := aged(t, root, "t/snapshot_month=2026-10/data_1.parquet", "bbbb")
	calls := 0
	c := Open(root)
	if got, err := c.Sum("k", []string{a, b}, counted("s1", &calls)); err != nil || got != "s1" {
		t.Fatalf("first Sum = %q, %v", got, err)
	}
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	// A new process: the cache file alone answers.
	if got, _ := Open(root).Sum("k", []string{a, b}, counted("other", &calls)); got != "s1" || calls != 1 {
		t.Fatalf("unchanged files: Sum = %q after %d computations, want s1 after 1", got, calls)
	}

	t.Run("ChangedInPlace", func(t *testing.T) {
		// Same size, a new modification time: computed again.
		if err := os.WriteFile(b, []byte("BBBB"), 0o644); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-30 * time.Minute)
		_ = os.Chtimes(b, old, old)
		calls = 0
		c := Open(root)
		if got, _ := c.Sum("k", []string{a, b}, counted("s2", &calls)); got != "s2" || calls != 1 {
			t.Errorf("a file rewritten in place: Sum = %q after %d computations, want s2 after 1", got, calls)
		}
		_ = c.Save()
	})
	t.Run("RenamedIntoPlace", func(t *testing.T) {
		// What an export does: a new file renamed over the old one, same size and time.
		fi, _ := os.Stat(a)
		tmp := aged(t, root, "t/snapshot_month=2026-10/.staging", "AAAA")
		_ = os.Chtimes(tmp, fi.ModTime(), fi.ModTime())
		if err := os.Rename(tmp, a); err != nil {
			t.Fatal(err)
		}
		calls = 0
		if got, _ := Open(root).Sum("k", []string{a, b}, counted("s3", &calls)); got != "s3" || calls != 1 {
			t.Errorf("a file renamed into place with the same size and time: Sum = %q after %d computations, want s3 after 1", got, calls)
		}
	})
	t.Run("FileListChanged", func(t *testing.T) {
		calls = 0
		if got, _ := Open(root).Sum("k", []string{a}, counted("s4", &calls)); got != "s4" || calls != 1 {
			t.Errorf("one file fewer: Sum = %q after %d computations, want s4 after 1", got, calls)
		}
	})
}

func TestRecentFilesAreNotTrusted(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "x.parquet")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	calls := 0
	c := Open(root)
	_, _ = c.Sum("k", []string{p}, counted("s", &calls))
	_, _ = c.Sum("k", []string{p}, counted("s", &calls))
	if calls != 2 {
		t.Errorf("a file written just now was summed %d times in two calls, want 2: a change within the clock's tick would go unseen", calls)
	}
	// Seen from later: the file is now old enough, and its sum is kept.
	c.now = func() time.Time { return time.Now().Add(racyWindow + time.Second) }
	_, _ = c.Sum("k", []string{p}, counted("s", &calls))
	_, _ = c.Sum("k", []string{p}, counted("s", &calls))
	if calls != 3 {
		t.Errorf("%d computations, want 3: once old enough, the sum is kept", calls)
	}
}

func TestSaveKeepsOtherCachesAndDropsRemovedFiles(t *testing.T) {
	root := t.TempDir()
	a := aged(t, root, "a.parquet", "a")
	b := aged(t, root, "b.parquet", "b")
	first, second := Open(root), Open(root)
	_, _ = first.Sum("a", []string{a}, counted("sa", new(int)))
	_, _ = second.Sum("b", []string{b}, counted("sb", new(int)))
	if err := first.Save(); err != nil {
		t.Fatal(err)
	}
	if err := second.Save(); err != nil {
		t.Fatal(err)
	}
	calls := 0
	c := Open(root)
	_, _ = c.Sum("a", []string{a}, counted("x", &calls))
	_, _ = c.Sum("b", []string{b}, counted("x", &calls))
	if calls != 0 {
		t.Errorf("%d computations after two caches saved one sum each, want 0", calls)
	}
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	_, _ = c.Sum("c", []string{b}, counted("sc", new(int)))
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	if _, ok := Open(root).entries["a"]; ok {
		t.Error("the sum of a removed file is still saved")
	}
}

func TestUnreadableCacheIsEmpty(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, File), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := aged(t, root, "x.parquet", "x")
	calls := 0
	if got, err := Open(root).Sum("k", []string{p}, counted("s", &calls)); err != nil || got != "s" || calls != 1 {
		t.Errorf("Sum over a malformed cache = %q, %v after %d computations, want s after 1", got, err, calls)
	}
	if _, err := Open(root).Sum("k", []string{filepath.Join(root, "missing.parquet")}, counted("s", &calls)); err == nil {
		t.Error("Sum of a missing file gave no error")
	}
	var nilCache *Cache
	if got, _ := nilCache.Sum("k", []string{p}, counted("n", &calls)); got != "n" {
		t.Errorf("a nil cache answered %q, want what compute gives", got)
	}
}
