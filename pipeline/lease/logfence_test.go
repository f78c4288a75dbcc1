package lease_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"sitewatch/pipeline/lease"
	"sitewatch/pipeline/lease/leasetest"
)

// TestAnswerLogIsTheFencesSecondReason (issue 42): with the answer log watched, a holder
// whose lease is confirmed but whose log acknowledged no cut for log_interval + margin admits
// no paid call, says why, and admits again as soon as a cut is acknowledged. The clock is
// moved by hand: the lease's confirmations go through at every step.
func TestAnswerLogIsTheFencesSecondReason(t *testing.T) {
	p := bucket(t, gateway(t).Endpoint)
	clock := leasetest.NewClock()
	var log syncBuffer
	l := lease.New(p, lease.Options{TTL: time.Minute, InFlight: time.Second, Clock: clock, Logger: logger(&log)})
	h, err := l.Hold(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	const interval = 500 * time.Millisecond
	window := interval + l.Timing().Margin // 3.5 s at a 1m TTL
	h.WatchLog(interval)
	step := l.Timing().Confirm // 1 s: a confirmation at each step keeps the lease's side open
	for elapsed := time.Duration(0); elapsed+step < window; elapsed += step {
		if ok, err := admitsNow(h); !ok {
			t.Fatalf("paused after %v of %v without a cut: %v", elapsed, window, err)
		}
		advanceConfirmed(t, clock, step)
	}
	advanceConfirmed(t, clock, step) // past the window: the lease is confirmed, the log is not
	if ok, _ := admitsNow(h); ok {
		t.Fatalf("admits a paid call with no acknowledged cut for more than %v", window)
	}
	if !strings.Contains(log.String(), "paid calls paused: the answer log could not write") {
		t.Errorf("the pause does not name the answer log:\n%s", log.String())
	}
	h.Logged(clock.Now())
	if ok, err := admitsNow(h); !ok {
		t.Fatalf("still paused after a cut was acknowledged: %v", err)
	}
	if !strings.Contains(log.String(), "the answer log wrote to the bucket again") {
		t.Errorf("the resume is not logged:\n%s", log.String())
	}
}

// advanceConfirmed moves clock by d once the holder's loop waits on it, and returns when the
// confirmation that step triggers is done (the loop waits again). Both waits on the real clock
// are hang guards (a minute): each spans a request to the gateway, which a loaded machine may
// stretch.
func advanceConfirmed(t *testing.T, clock *leasetest.Clock, d time.Duration) {
	t.Helper()
	if !clock.WaitFor(1, time.Minute) {
		t.Fatal("the holder's loop never waited on its clock (a minute)")
	}
	clock.Advance(d)
	if !clock.WaitFor(1, time.Minute) {
		t.Fatal("the confirmation after the step never ended (a minute)")
	}
}
