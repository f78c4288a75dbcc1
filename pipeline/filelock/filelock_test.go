//go:build unix

package filelock_test

import (
	"errors"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"sitewatch/internal/testenv"
	"sitewatch/pipeline/filelock"
)

// TestModes: shared locks go together; an exclusive one excludes every other; a released
// lock can be taken again.
func TestModes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.duckdb.lock")
	a, err := filelock.TryShared(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := filelock.TryShared(path)
	if err != nil {
		t.Fatalf("a second shared lock: %v", err)
	}
	if _, err := filelock.TryExclusive(path); !errors.Is(err, filelock.ErrHeld) {
		t.Fatalf("exclusive under shared locks = %v, want ErrHeld", err)
	}
	a.Release()
	b.Release()
	b.Release() // twice is fine
	x, err := filelock.TryExclusive(path)
	if err != nil {
		t.Fatalf("exclusive once released: %v", err)
	}
	if _, err := filelock.TryShared(path); !errors.Is(err, filelock.ErrHeld) {
		t.Fatalf("shared under an exclusive lock = %v, want ErrHeld", err)
	}
	x.Release()
}

// TestOtherProcess: a lock held by another process (flock(1) holding the file) is seen, and
// is gone once that process is killed. Both waits are hang guards (a minute): a loaded
// machine may take seconds to start flock(1) and to reap its child.
func TestOtherProcess(t *testing.T) {
	bin, err := exec.LookPath("flock")
	if err != nil {
		testenv.Missing(t, "flock(1) is not installed (Debian package util-linux)")
	}
	path := filepath.Join(t.TempDir(), "w.duckdb.lock")
	cmd := exec.Command(bin, "--exclusive", path, "sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its sleep inherits the lock: kill both
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		l, err := filelock.TryShared(path)
		if errors.Is(err, filelock.ErrHeld) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		l.Release()
		if time.Now().After(deadline) {
			t.Fatal("the other process's lock was never seen (a minute)")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
	deadline = time.Now().Add(time.Minute) // its child sleep dies a moment later
	for {
		l, err := filelock.TryExclusive(path)
		if err == nil {
			l.Release()
			return
		}
		if !errors.Is(err, filelock.ErrHeld) || time.Now().After(deadline) {
			t.Fatalf("after the holder was killed (a minute later): %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
