package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/lease/leasetest"
	"sitewatch/pipeline/publish/s3test"
)

// signalBound is how soon a command must end after SIGTERM, whatever hangs (issue 32): the
// calls in flight abandoned SignalGrace (3 s) after the signal, the lease's release given up
// 2 s after it. Those times are checked in fake time, where a loaded machine cannot stretch
// them (pipeline/atlas TestSignalAbandonsHungCallsInFakeTime, pipeline/lease
// TestReleaseAfterSignalIsBriefInFakeTime); the command's own wind-down comes on top, seconds
// on a loaded machine, so the end-to-end tests here hold a command to ten times the bound:
// one still going then waited out what hangs (api.timeout of a minute here, a bucket's
// deadlines and retries, the next cron time) instead of the signal.
const signalBound = 5 * time.Second

// endsWithin runs `sitewatch args…` in-process, signals it (ctx cancelled, as main wires
// SIGTERM) once ready returns, and fails unless it returns within ten times signalBound of
// the signal.
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
	code := h.runCtx(ctx, 2*time.Minute, args...) // a hang guard: starting may take a loaded machine seconds
	select {
	case at := <-signalled:
		took := time.Since(at)
		t.Logf("sitewatch %v ended %v after SIGTERM", args, took.Round(time.Millisecond))
		if took >= 10*signalBound {
			t.Errorf("sitewatch %v ended %v after SIGTERM: it waited out what hangs, not the signal (want within %v, %v with its wind-down on a loaded machine)\n%s",
				args, took.Round(time.Millisecond), signalBound, 10*signalBound, h.stderr)
		}
	default:
		t.Errorf("sitewatch %v ended before the signal (exit %d)\n%s%s", args, code, h.stdout, h.stderr)
	}
	return code
}

// hangAPIBehindCuttableBucket holds every API call of h (never answered; held is signalled at
// the first, and api.timeout is a minute, so only a signal ends it) and publishes to gw through
// a proxy the test can cut.
func hangAPIBehindCuttableBucket(t *testing.T, h *harness, gw *s3test.Server) (<-chan struct{}, *leasetest.Proxy) {
	t.Helper()
	held := holdAPI(t, h, func(*http.Request) bool { return true })
	h.setConfig("  timeout: 5s\n", "  timeout: 1m\n") // the hung call would otherwise end at api.timeout
	px := leasetest.NewProxy(t, gw.Endpoint)
	withPublish(t, h, px.URL, "")
	return held, px
}

// TestSignalWithHungBucketDuringRun: a run holding the lease whose API call hangs (never
// answered) and whose bucket is then cut (every byte lost: the lease's confirmations and its
// release hang too) ends on SIGTERM: the hung call is abandoned after the signal's grace, the
// release gives up 2 s after the signal (signalBound: those times in fake time, here a run
// that waited out api.timeout instead).
func TestSignalWithHungBucketDuringRun(t *testing.T) {
	gw := bucketGateway(t)
	h := newHarness(t, atlastest.Options{}, atlastest.Domains(3), "")
	held, px := hangAPIBehindCuttableBucket(t, h, gw)
	code := endsWithin(t, h, func() {
		<-held // the run holds the lease and waits on its first call
		px.Cut()
		time.Sleep(300 * time.Millisecond)
	}, "run")
	if code != ExitFailed {
		t.Errorf("exit %d, want %d", code, ExitFailed)
	}
	if out := h.stdout.String() + h.stderr.String(); strings.Contains(out, "StatusCode: 0") || strings.Contains(out, "RequestID") {
		t.Errorf("raw SDK text in the output:\n%s", out)
	}
	if n := h.srv.Stats().Charged; n != 0 {
		t.Errorf("%d credits charged, want 0 (the only call was held)", n)
	}
}

// TestSignalWithHungBucketDuringPublishAndRestore: `publish` and `restore` waiting on a bucket
// that accepts TCP and never answers end on SIGTERM. That the signal, not a deadline, ended
// the wait is counted: the bucket saw one connection, the request the signal ended, where one
// that ignored the signal would be sent again at its first-byte deadline (3 s for the lease).
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
			if n := hang.count.Load(); n != 1 {
				t.Errorf("the hung bucket saw %d connections, want the one the signal ended: a request was retried after the signal\n%s", n, h.stderr)
			}
		})
	}
}

// TestScheduleEndsOnSignal (issue 32): `sitewatch schedule` with a bucket (the lease and the
// sync before each run) ends cleanly on SIGTERM, not at the next cron time or api.timeout
// (signalBound): idle between two runs, and while a run holds the lease with a call in
// flight that never answers and a bucket cut from it (the lease's confirmations and its
// release hang too).
func TestScheduleEndsOnSignal(t *testing.T) {
	domains := atlastest.Domains(3)
	t.Run("Idle", func(t *testing.T) {
		gw := bucketGateway(t)
		h := newHarness(t, atlastest.Options{}, domains, "")
		withPublish(t, h, gw.Endpoint, "  lease_ttl: 6s\n")
		code := endsWithin(t, h, func() {
			// The first run (catch-up: nothing held) completes the month; then it waits for
			// the next cron time (the 2nd of next month).
			// (h.stdout is the command's to set: the bucket tells instead.)
			waitFor(t, func() bool { return getObject(t, gw, "team/_manifests/snapshot_month="+testMonth+".json") != "" })
			// The run's last act is releasing its lease; the schedule then waits for the next tick.
			waitFor(t, func() bool { return getObject(t, gw, "team/_sitewatch/lease.json") == "" })
		}, "schedule")
		if code != ExitOK {
			t.Errorf("schedule idle: exit %d after a signal, want 0\n%s%s", code, h.stdout, tail(h.stderr.String(), 2000))
		}
		if n := h.srv.Stats().Charged; n != int64(2*len(domains)+1) {
			t.Errorf("%d credits charged, want the month's %d", n, 2*len(domains)+1)
		}
		if log := h.stderr.String(); strings.Contains(log, "level=ERROR") {
			t.Errorf("schedule idle logged an error on a signal:\n%s", tail(log, 2000))
		}
	})
	t.Run("RunInFlight", func(t *testing.T) {
		gw := bucketGateway(t) // a bucket of its own: nothing to pull, the first call is the run's
		h := newHarness(t, atlastest.Options{}, domains, "")
		held, px := hangAPIBehindCuttableBucket(t, h, gw)
		code := endsWithin(t, h, func() {
			<-held // the scheduled run holds the lease and waits on its first call
			px.Cut()
			time.Sleep(300 * time.Millisecond)
		}, "schedule")
		if code != ExitOK {
			t.Errorf("schedule with a run in flight: exit %d after a signal, want 0\n%s%s", code, h.stdout, tail(h.stderr.String(), 2000))
		}
		if out := h.stdout.String() + h.stderr.String(); strings.Contains(out, "StatusCode: 0") || strings.Contains(out, "RequestID") {
			t.Errorf("raw SDK text in the output:\n%s", out)
		}
		if n := h.srv.Stats().Charged; n != 0 {
			t.Errorf("%d credits charged, want 0 (the only call was held)", n)
		}
	})
}
