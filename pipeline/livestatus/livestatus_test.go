package livestatus

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func sample() Status {
	left := int64(476)
	eta := 40.0
	return Status{RunID: "r-1", Month: "2026-11", State: StateRunning, Loaded: 12, Total: 28, Requests: 35,
		RateLimited: 1, CreditsSpent: 24, CreditsLeft: &left, Rate: 2.9, ETASeconds: &eta,
		StartedAt: time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC), UpdatedAt: time.Now().UTC().Truncate(time.Second)}
}

func TestWriteRead(t *testing.T) {
	path := Path(filepath.Join(t.TempDir(), "w.duckdb"))
	if !strings.HasSuffix(path, "w.duckdb.run.json") {
		t.Errorf("Path = %s", path)
	}
	if _, err := Read(path); !errors.Is(err, ErrNoRun) {
		t.Fatalf("Read of a missing file: %v, want ErrNoRun", err)
	}
	want := sample()
	if err := Write(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	if got.PID != os.Getpid() || got.Host != host {
		t.Errorf("PID %d host %q, want this process's %d %q", got.PID, got.Host, os.Getpid(), host)
	}
	if got.Loaded != 12 || *got.CreditsLeft != 476 || *got.ETASeconds != 40 || !got.StartedAt.Equal(want.StartedAt) {
		t.Errorf("read back %+v, want %+v", got, want)
	}
	if !got.Alive() {
		t.Error("this process's own status is not alive")
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
}

func TestReadGarbage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.duckdb.run.json")
	if err := os.WriteFile(path, []byte("{half"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Read(path)
	if err == nil || !strings.Contains(err.Error(), "remove it") || !strings.Contains(err.Error(), path) {
		t.Errorf("Read of garbage: %v, want an error naming the file and what to do", err)
	}
}

// TestPIDGone: a run whose process died leaves a running file; Alive says so.
func TestPIDGone(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	s := sample()
	s.PID = cmd.Process.Pid // exited and reaped: no such process now
	s.Host, _ = os.Hostname()
	if s.Alive() {
		t.Errorf("PID %d of an exited process is alive", s.PID)
	}
	s.PID = os.Getpid()
	s.State = StateFinal
	if s.Alive() {
		t.Error("a final status is alive")
	}
}

// TestRebootedSinceUpdate: after a power cut the PID in the file may belong to another
// process; a file last updated before the machine booted is not alive.
func TestRebootedSinceUpdate(t *testing.T) {
	boot, ok := bootTime()
	if !ok {
		t.Fatal("no btime in /proc/stat")
	}
	s := sample()
	s.PID, s.Host = os.Getpid(), ""
	s.UpdatedAt = boot.Add(-time.Hour)
	if s.Alive() {
		t.Errorf("a file updated before the boot (%v) is alive", boot)
	}
	s.UpdatedAt = time.Now()
	if !s.Alive() {
		t.Error("a fresh file of this process is not alive")
	}
	if s.Stale(time.Now()) || !s.Stale(time.Now().Add(StaleAfter+time.Second)) {
		t.Error("Stale does not follow StaleAfter")
	}
}

func TestOtherHostUsesAge(t *testing.T) {
	s := sample()
	s.Host, s.PID = "some-other-host.invalid", 1
	if !s.Alive() {
		t.Error("a fresh file from another host is not alive")
	}
	s.UpdatedAt = time.Now().Add(-2 * StaleAfter)
	if s.Alive() {
		t.Error("a stale file from another host is alive")
	}
}

// TestWriteIsAtomic: a reader polling while a writer rewrites the file never sees a partial
// or unparsable file.
func TestWriteIsAtomic(t *testing.T) {
	path := Path(filepath.Join(t.TempDir(), "w.duckdb"))
	if err := Write(path, sample()); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s := sample()
		for i := 0; !stop.Load(); i++ {
			s.Requests = int64(i)
			s.Message = strings.Repeat("x", i%4096) // sizes vary, so a torn read would show
			if err := Write(path, s); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for i := 0; i < 2000; i++ {
		if _, err := Read(path); err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
	}
	stop.Store(true)
	wg.Wait()
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("%d files beside the warehouse, want the progress file only", len(entries))
	}
}

func TestKeeper(t *testing.T) {
	path := Path(filepath.Join(t.TempDir(), "w.duckdb"))
	var loaded atomic.Int64
	snapshot := func() Status {
		s := sample()
		s.Loaded = int(loaded.Load())
		return s
	}
	k := Start(path, 20*time.Millisecond, snapshot, nil)
	got, err := Read(path)
	if err != nil {
		t.Fatalf("Start did not write the file at once: %v", err)
	}
	if got.State != StateRunning {
		t.Errorf("state %q, want running", got.State)
	}
	loaded.Store(20)
	deadline := time.Now().Add(time.Minute) // a hang guard: the keeper refreshes every 20 ms
	for got.Loaded != 20 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		if got, err = Read(path); err != nil {
			t.Fatal(err)
		}
	}
	if got.Loaded != 20 {
		t.Fatalf("the file was not refreshed within a minute: loaded %d, want 20", got.Loaded)
	}
	loaded.Store(28)
	if err := k.Finish("complete", ""); err != nil {
		t.Fatal(err)
	}
	if err := k.Finish("failed", "second call"); err != nil {
		t.Errorf("second Finish: %v", err)
	}
	got, _ = Read(path)
	if got.State != StateFinal || got.Outcome != "complete" || got.Loaded != 28 || got.ETASeconds != nil {
		t.Errorf("final file %+v, want state final, outcome complete, loaded 28, no ETA", got)
	}
	time.Sleep(60 * time.Millisecond)
	if again, _ := Read(path); again.State != StateFinal {
		t.Error("the file was rewritten after Finish")
	}
	var nilKeeper *Keeper
	if err := nilKeeper.Finish("complete", ""); err != nil {
		t.Errorf("nil Finish: %v", err)
	}
}

// A run killed between Write's create and rename leaves a temporary sibling; the next run's
// Keeper removes it and leaves other files alone.
func TestStartRemovesLeftovers(t *testing.T) {
	dir := t.TempDir()
	path := Path(filepath.Join(dir, "w.duckdb"))
	leftover := filepath.Join(dir, ".w.duckdb.run.json.tmp-1177587978")
	unrelated := filepath.Join(dir, ".other.duckdb.run.json.tmp-42")
	for _, name := range []string{leftover, unrelated} {
		if err := os.WriteFile(name, []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	k := Start(path, time.Hour, sample, nil)
	if err := k.Finish("complete", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(leftover); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the leftover of a killed write is still there (stat: %v)", err)
	}
	if _, err := os.Stat(unrelated); err != nil {
		t.Errorf("another warehouse's file was touched: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".w.duckdb.run.json.tmp-") {
			t.Errorf("temporary file left after Start and Finish: %s", e.Name())
		}
	}
}
