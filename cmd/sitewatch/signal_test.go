package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/lease/leasetest"
)

// signalBound is how soon a command must end after SIGTERM, whatever hangs (issue 32).
const signalBound = 5 * time.Second

// endsWithin runs `sitewatch args…` in-process, signals it (ctx cancelled, as main wires
// SIGTERM) once ready returns, and fails unless it returns within signalBound of the signal.
func endsWithin(t *testing.T, h *harness, ready func(), args ...string) int {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	signalled := make(chan time.Time, 1)
	go func() {
		ready()
		signalled <- time.Now()
		cancel()
	}()
	code := h.runCtx(ctx, 60*time.Second, args...)
	select {
	case at := <-signalled:
		if took := time.Since(at); took > signalBound {
			t.Errorf("sitewatch %v ended %v after SIGTERM, want within %v\n%s", args, took.Round(time.Millisecond), signalBound, h.stderr)
		}
	default:
		t.Errorf("sitewatch %v ended before the signal (exit %d)\n%s%s", args, code, h.stdout, h.stderr)
	}
	return code
}

// TestSignalWithHungBucketDuringRun: a run holding the lease, its bucket then cut (every byte
// lost: the confirmations and the lease's release hang), ends within 5 s of SIGTERM.
func TestSignalWithHungBucketDuringRun(t *testing.T) {
	gw := bucketGateway(t)
	h := newHarness(t, atlastest.Options{}, atlastest.Domains(20), "  rate_limit: 5\n")
	px := leasetest.NewProxy(t, gw.Endpoint)
	withPublish(t, h, px.URL, "")
	code := endsWithin(t, h, func() {
		for h.srv.Stats().Charged < 4 {
			time.Sleep(20 * time.Millisecond)
		}
		px.Cut()
		time.Sleep(500 * time.Millisecond) // a confirmation is now hanging
	}, "run")
	if code != ExitFailed {
		t.Errorf("exit %d, want %d", code, ExitFailed)
	}
	if out := h.stdout.String() + h.stderr.String(); strings.Contains(out, "StatusCode: 0") || strings.Contains(out, "RequestID") {
		t.Errorf("raw SDK text in the output:\n%s", out)
	}
}

// TestSignalWithHungBucketDuringPublishAndRestore: `publish` and `restore` waiting on a bucket
// that accepts TCP and never answers end within 5 s of SIGTERM.
func TestSignalWithHungBucketDuringPublishAndRestore(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end; runs without -short")
	}
	for _, cmd := range []string{"publish", "restore"} {
		t.Run(cmd, func(t *testing.T) {
			hang := newHangListener(t)
			h := newHarness(t, atlastest.Options{}, atlastest.Domains(2), "")
			if cmd == "publish" {
				if code := h.run("run", "--snapshot", testMonth); code != ExitOK {
					t.Fatalf("run: exit %d\n%s", code, h.stdout)
				}
			}
			withHungBucket(t, h, hang)
			code := endsWithin(t, h, func() { <-hang.accepted; time.Sleep(200 * time.Millisecond) }, cmd)
			if code != ExitFailed {
				t.Errorf("exit %d, want %d\n%s", code, ExitFailed, h.stderr)
			}
			if msg := h.stderr.String(); strings.Contains(msg, "StatusCode: 0") || strings.Contains(msg, "no AWS credentials") {
				t.Errorf("the signal is reported as something else:\n%s", msg)
			}
		})
	}
}
