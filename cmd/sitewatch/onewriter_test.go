package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/wire"
)

// TestRestoreForceUnderARunningRun (issue 32, scenario 4): `restore --force` while a run of the
// same warehouse is paying exits 1 at once, naming the run, and moves nothing aside; the run
// then completes, every answer paid once, its warehouse file in place. "At once" is what the
// refusal must never do instead, not how fast the machine is (a loaded one stretches any
// wait): wait for the warehouse, which is logged and lasts up to wire.LockWait (a minute).
func TestRestoreForceUnderARunningRun(t *testing.T) {
	gw := bucketGateway(t)
	domains := atlastest.Domains(6)
	h := newHarness(t, atlastest.Options{}, domains, "")
	var passed atomic.Int32
	held := holdAPI(t, h, func(*http.Request) bool { return passed.Add(1) == 6 })
	withPublish(t, h, gw.Endpoint, "")
	run, out := startHeld(t, h, held, "run")
	start := time.Now()
	code := h.run("restore", "--force")
	took := time.Since(start)
	if code != ExitFailed {
		t.Errorf("restore --force under a running run: exit %d, want %d\n%s%s", code, ExitFailed, h.stdout, h.stderr)
	}
	if msg := h.stderr.String(); !strings.Contains(msg, "`sitewatch run`") || !strings.Contains(msg, "is writing") || !strings.Contains(msg, "nothing was changed") {
		t.Errorf("the refusal does not name the running run:\n%s", msg)
	}
	t.Logf("refused after %v", took.Round(time.Millisecond))
	if strings.Contains(h.stderr.String(), "waiting for the warehouse") || took >= wire.LockWait {
		t.Errorf("restore --force took %v to refuse: it waited for the warehouse (up to %v), want a refusal at once\n%s", took, wire.LockWait, h.stderr)
	}
	if aside, _ := filepath.Glob(filepath.Join(h.dir, "data", "w.duckdb.before-restore-*")); len(aside) != 0 {
		t.Errorf("the refused restore moved the live warehouse aside: %v", aside)
	}
	if err := run.Wait(); err != nil { // the held call times out (api.timeout 5s) and is retried
		t.Fatalf("the run did not complete after the refused restore: %v\n%s", err, out)
	}
	if !strings.Contains(out.String(), "complete") {
		t.Errorf("the run's summary does not say complete:\n%s", out)
	}
	paidExactlyOnce(t, h, domains)
}

// TestTwoRestoresInOneDirectory: a second `restore --force` while the first is still
// downloading exits 1 at once instead of deleting the first's work; once the first was killed,
// the next restore completes and both warehouses it replaced are kept aside.
func TestTwoRestoresInOneDirectory(t *testing.T) {
	gw := bucketGateway(t)
	domains := atlastest.Domains(4)
	// Without the bucket lease: the killed restore would hold it for its TTL, and this test is
	// about the warehouse file (TestRestoreForceUnderARunningRun runs with the lease).
	a := publishedMachine(t, gw, atlastest.Options{}, domains, "  lease: off\n")
	px, held, release := holdBucket(t, gw, http.MethodGet, "/_manifests/")
	a.setConfig("endpoint: "+gw.Endpoint, "endpoint: "+px)
	first, _ := startHeld(t, a, held, "restore", "--force")
	if code := a.run("restore", "--force"); code != ExitFailed || !strings.Contains(a.stderr.String(), "another sitewatch command") {
		t.Errorf("a second restore --force beside the first: exit %d, want %d naming the other\n%s", code, ExitFailed, a.stderr)
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	release()
	if code := a.run("restore", "--force"); code != ExitOK {
		t.Fatalf("restore --force after the first was killed: exit %d\n%s%s", code, a.stdout, a.stderr)
	}
	if code := a.run("restore", "--force"); code != ExitOK { // again, within the same second or not
		t.Fatalf("a second restore --force: exit %d\n%s%s", code, a.stdout, a.stderr)
	}
	aside, _ := filepath.Glob(filepath.Join(a.dir, "data", "w.duckdb.before-restore-*[0-9Z]"))
	if len(aside) != 2 {
		t.Errorf("%d warehouses kept aside, want 2 (one per restore): %v", len(aside), aside)
	}
	for _, p := range aside {
		if fi, err := os.Stat(p); err != nil || fi.Size() == 0 {
			t.Errorf("kept-aside warehouse %s: %v", p, err)
		}
	}
}
