package lease_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"sitewatch/pipeline/lease"
	"sitewatch/pipeline/lease/leasetest"
	"sitewatch/pipeline/publish"
)

// syncBuffer is a log sink several goroutines write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func logger(buf *syncBuffer) *slog.Logger { return slog.New(slog.NewTextHandler(buf, nil)) }

// admitsNow reports whether h admits a paid call at once (the fence is open).
func admitsNow(h *lease.Held) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := h.Admit(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		return false, nil // paused
	}
	return err == nil, err
}

// writeStale writes a lease record as a holder that died would have left it: expired by
// every clock's reading, with the given TTL and in-flight bound.
func writeStale(t *testing.T, p *publish.Publisher, ttl, inFlight time.Duration) string {
	t.Helper()
	rec := lease.Record{Owner: "dead-1", Host: "dead-host", PID: 1, Command: "sitewatch run", Started: time.Now().Add(-time.Hour),
		Expires: time.Now().Add(-time.Minute), TTLMillis: ttl.Milliseconds(), InFlightMillis: inFlight.Milliseconds()}
	body, _ := json.Marshal(rec)
	etag, err := p.PutConditional(context.Background(), lease.Key, body, "")
	if err != nil {
		t.Fatal(err)
	}
	return etag
}

// TestPartitionedHolderStopsPaying: a holder cut from the bucket by a proxy that drops every
// byte (real connections that hang, not errors) stops admitting paid calls within the margin
// of the cut and loses the lease (its context ends with ErrLost); a taker with the same
// settings then takes over only after its own wait, after the holder's last admitted call.
// The exact times are TestCutOffHolderStopsOnTime's, in fake time: here a loaded machine may
// stretch any wait, so only what holds under any load is asserted.
func TestPartitionedHolderStopsPaying(t *testing.T) {
	srv := gateway(t)
	px := leasetest.NewProxy(t, srv.Endpoint)
	var log syncBuffer
	opts := lease.Options{TTL: 6 * time.Second, InFlight: time.Second, Command: "sitewatch run", Logger: logger(&log)}
	a := lease.New(bucket(t, px.URL), opts)
	tm := a.Timing() // margin 1.5s, confirm 0.5s
	h, err := a.Hold(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	time.Sleep(2500 * time.Millisecond) // a renewal (every 2s) and confirmations go through
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	err = h.Admit(ctx)
	cancel()
	if err != nil {
		t.Fatalf("a confirmed holder does not admit: %v", err)
	}
	cut := time.Now()
	px.Cut()
	// lastAdmit is taken before the call that admitted: the fence decided after it, so it
	// bounds the decision from below whatever the scheduler does after.
	var lastAdmit time.Time
	for {
		asked := time.Now()
		ok, err := admitsNow(h)
		if ok {
			lastAdmit = asked
		}
		if err != nil {
			if !errors.Is(err, lease.ErrLost) {
				t.Fatalf("fence error %v, want ErrLost", err)
			}
			break
		}
		if time.Since(cut) > 10*tm.TTL {
			t.Fatalf("the cut-off holder still holds its lease %v after the cut (TTL %v)", time.Since(cut), tm.TTL)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if lastAdmit.Sub(cut) > tm.Margin {
		t.Errorf("the cut-off holder admitted a paid call asked %v after the cut, more than the margin %v", lastAdmit.Sub(cut), tm.Margin)
	}
	<-h.Context().Done() // ErrLost from Admit means the context has ended
	if !errors.Is(context.Cause(h.Context()), lease.ErrLost) || !strings.Contains(context.Cause(h.Context()).Error(), "could not be renewed") {
		t.Errorf("cause %v, want ErrLost naming the missed renewal", context.Cause(h.Context()))
	}
	if !strings.Contains(log.String(), "paid calls paused") {
		t.Errorf("the pause was not logged:\n%s", log.String())
	}

	takeOverAfter(t, bucket(t, srv.Endpoint), opts, lastAdmit)
}

// takeOverAfter: a taker with opts's TTL and in-flight bound, on bucket b (not cut off), whose
// clock runs an hour ahead, sees the cut-off holder's lease expired, watches it for its own wait
// and takes it over; the holder's last call, admitted at lastAdmit, has ended by then.
func takeOverAfter(t *testing.T, b lease.Bucket, opts lease.Options, lastAdmit time.Time) {
	t.Helper()
	var takerLog syncBuffer
	taker := lease.New(b, lease.Options{TTL: opts.TTL, InFlight: opts.InFlight, Logger: logger(&takerLog),
		Now: func() time.Time { return time.Now().Add(time.Hour) }})
	start := time.Now()
	hb, err := taker.Hold(context.Background())
	if err != nil {
		t.Fatalf("takeover: %v", err)
	}
	defer hb.Release()
	took := time.Now()
	if wait := taker.Timing().TakerWait(lease.Record{}); took.Sub(start) < wait {
		t.Errorf("the taker took over after %v of its own time, want at least TTL+margin+in-flight = %v", took.Sub(start), wait)
	}
	if !lastAdmit.Add(opts.InFlight).Before(took) {
		t.Errorf("the cut-off holder's last call (admitted at %v, in flight up to %v) may overlap the takeover at %v", lastAdmit, opts.InFlight, took)
	}
	if !strings.Contains(takerLog.String(), "took over an expired bucket lease") {
		t.Errorf("the takeover was not logged:\n%s", takerLog.String())
	}
}

// TestTakerWaitsItsOwnTime: with a controllable clock, a taker that finds a dead holder's
// lease takes it over at exactly TTL+margin+in-flight of its own clock after first seeing it,
// never before, whatever the expiry written in the lease says.
func TestTakerWaitsItsOwnTime(t *testing.T) {
	p := bucket(t, gateway(t).Endpoint)
	writeStale(t, p, time.Minute, 10*time.Second)
	clock := leasetest.NewClock()
	var log syncBuffer
	b := lease.New(p, lease.Options{TTL: time.Minute, InFlight: 10 * time.Second, Clock: clock, Logger: logger(&log)})
	wait := b.Timing().TakerWait(lease.Record{}) // 1m + 3s + 10s
	if wait != 73*time.Second {
		t.Fatalf("TakerWait = %v, want 1m13s", wait)
	}
	type taken struct {
		h   *lease.Held
		err error
	}
	done := make(chan taken, 1)
	go func() { h, err := b.Hold(context.Background()); done <- taken{h, err} }()
	var elapsed time.Duration
	for elapsed < wait-time.Millisecond {
		if !clock.WaitFor(1, time.Minute) { // a hang guard: between waits the taker asks the gateway
			t.Fatal("the taker never waited on its clock (a minute)")
		}
		select {
		case r := <-done:
			t.Fatalf("the taker took the lease after %v of its clock, before %v (err %v)", elapsed, wait, r.err)
		default:
		}
		step := min(500*time.Millisecond, wait-time.Millisecond-elapsed)
		clock.Advance(step)
		elapsed += step
	}
	clock.Advance(time.Millisecond)
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("takeover after the wait: %v", r.err)
		}
		r.h.Release()
	case <-time.After(time.Minute): // a hang guard for the takeover's request to the gateway
		t.Fatal("the taker did not take the lease once its wait was over (a minute)")
	}
	if !strings.Contains(log.String(), "took over an expired bucket lease") || !strings.Contains(log.String(), "dead-host") {
		t.Errorf("the takeover was not logged naming the previous holder:\n%s", log.String())
	}
}

// TestClockAheadDoesNotTakeALiveLease: a taker whose wall clock runs an hour ahead sees a live
// lease as expired; it watches it, sees the holder renew, and fails naming the holder; the
// holder keeps its lease.
func TestClockAheadDoesNotTakeALiveLease(t *testing.T) {
	p := bucket(t, gateway(t).Endpoint)
	h, err := lease.New(p, lease.Options{TTL: 3 * time.Second, InFlight: time.Second, Command: "sitewatch run"}).Hold(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	ahead := lease.New(p, lease.Options{TTL: 3 * time.Second, InFlight: time.Second, Now: func() time.Time { return time.Now().Add(time.Hour) }})
	_, err = ahead.Hold(context.Background())
	var held *lease.HeldError
	if !errors.As(err, &held) || held.Holder.Command != "sitewatch run" {
		t.Fatalf("take by a clock an hour ahead = %v, want a *HeldError naming the live holder", err)
	}
	if h.Context().Err() != nil {
		t.Errorf("the live holder lost its lease: %v", context.Cause(h.Context()))
	}
	if ok, err := admitsNow(h); !ok {
		t.Errorf("the live holder stopped admitting: %v", err)
	}
}

// TestDeletedLeaseStopsHolder: deleting the lease object stops its holder within seconds (its
// next confirmation), not at its next renewal, and the loss is logged as a takeover.
func TestDeletedLeaseStopsHolder(t *testing.T) {
	p := bucket(t, gateway(t).Endpoint)
	var log syncBuffer
	l := lease.New(p, lease.Options{TTL: 10 * time.Minute, Logger: logger(&log)}) // confirms every 5s
	h, err := l.Hold(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	_, etag, _, err := p.GetSmall(context.Background(), lease.Key)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.DeleteConditional(context.Background(), lease.Key, etag); err != nil {
		t.Fatal(err)
	}
	stoppedWithin(t, h, l.Timing().Confirm+2*time.Second, "was deleted")
	if !strings.Contains(log.String(), "a takeover") {
		t.Errorf("the deletion was not logged as a takeover:\n%s", log.String())
	}
}

// TestReplacedLeaseStopsHolder: a lease rewritten by another runner stops its holder within
// seconds, naming the new holder.
func TestReplacedLeaseStopsHolder(t *testing.T) {
	p := bucket(t, gateway(t).Endpoint)
	var log syncBuffer
	l := lease.New(p, lease.Options{TTL: 10 * time.Minute, Logger: logger(&log)})
	h, err := l.Hold(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	_, etag, _, err := p.GetSmall(context.Background(), lease.Key)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := json.Marshal(lease.Record{Owner: "other-2", Host: "other-host", PID: 2, Command: "sitewatch run", Expires: time.Now().Add(time.Hour)})
	if _, err := p.PutConditional(context.Background(), lease.Key, other, etag); err != nil {
		t.Fatal(err)
	}
	stoppedWithin(t, h, l.Timing().Confirm+2*time.Second, "taken over by other-host")
	h.Release()
	if body, _, found, _ := p.GetSmall(context.Background(), lease.Key); !found || !strings.Contains(string(body), "other-host") {
		t.Errorf("the stopped holder's release removed the new holder's lease: found %v %s", found, body)
	}
}

// stoppedWithin checks that h's context ends with ErrLost naming want, and that its fence
// then refuses. It waits ten times d: the bound itself is checked in fake time
// (TestChangedLeaseStopsHolderWithinAConfirmation); this only tells a hang.
func stoppedWithin(t *testing.T, h *lease.Held, d time.Duration, want string) {
	t.Helper()
	select {
	case <-h.Context().Done():
	case <-time.After(10 * d):
		t.Fatalf("the holder did not stop within %v", 10*d)
	}
	cause := context.Cause(h.Context())
	if !errors.Is(cause, lease.ErrLost) || !strings.Contains(cause.Error(), want) {
		t.Errorf("cause %v, want ErrLost with %q", cause, want)
	}
	if err := h.Admit(context.Background()); !errors.Is(err, lease.ErrLost) {
		t.Errorf("the fence after the loss = %v, want ErrLost", err)
	}
}

// TestReleaseAfterSignalIsBrief: with the bucket hung (real connections dropping every byte),
// a release after a signal returns without waiting out the release's full 10 s; the lease then
// expires by itself. Its 2 s bound is TestReleaseAfterSignalIsBriefInFakeTime's.
func TestReleaseAfterSignalIsBrief(t *testing.T) {
	srv := gateway(t)
	px := leasetest.NewProxy(t, srv.Endpoint)
	ctx, signal := context.WithCancel(context.Background())
	h, err := lease.New(bucket(t, px.URL), lease.Options{TTL: time.Minute}).Hold(ctx)
	if err != nil {
		t.Fatal(err)
	}
	px.Cut()
	signalled := time.Now()
	signal()
	time.Sleep(time.Second) // the command's own wind-down
	h.Release()
	if took := time.Since(signalled); took >= 10*time.Second {
		t.Errorf("release ended %v after the signal: it waited out its full timeout, the signal did not shorten it", took)
	}
}
