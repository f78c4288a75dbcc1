package lease_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"sitewatch/pipeline/lease"
)

// The fence's times, in fake time (testing/synctest) against an in-memory bucket: exact on
// any machine, however loaded. The tests beside them against the S3 gateway show the same
// behaviour through real connections, with no bound on wall time.

// cutBucket is a bucket whose connection a test cuts: while cut, every request hangs until
// its context ends, as a request whose bytes are dropped does.
type cutBucket struct {
	lease.Bucket
	cut atomic.Bool
}

func (b *cutBucket) hang(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

func (b *cutBucket) GetSmall(ctx context.Context, rel string) ([]byte, string, bool, error) {
	if b.cut.Load() {
		return nil, "", false, b.hang(ctx)
	}
	return b.Bucket.GetSmall(ctx, rel)
}

func (b *cutBucket) PutConditional(ctx context.Context, rel string, body []byte, ifMatch string) (string, error) {
	if b.cut.Load() {
		return "", b.hang(ctx)
	}
	return b.Bucket.PutConditional(ctx, rel, body, ifMatch)
}

func (b *cutBucket) DeleteConditional(ctx context.Context, rel, etag string) error {
	if b.cut.Load() {
		return b.hang(ctx)
	}
	return b.Bucket.DeleteConditional(ctx, rel, etag)
}

// lostAt returns a channel that receives the (fake) time at which h's context ends.
func lostAt(h *lease.Held) <-chan time.Time {
	at := make(chan time.Time, 1)
	context.AfterFunc(h.Context(), func() { at <- time.Now() })
	return at
}

// TestCutOffHolderStopsOnTime: a holder cut from the bucket admits no paid call later than
// the margin after the cut, and its context ends with ErrLost at TTL−margin of its last
// renewal — whether paid calls keep asking the fence (polled) or none does (idle: an export,
// a publish). A taker then takes over only after its own wait, after the holder's last call.
func TestCutOffHolderStopsOnTime(t *testing.T) {
	for _, polled := range []bool{true, false} {
		name := map[bool]string{true: "polled", false: "idle"}[polled]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { cutOffHolder(t, polled) })
		})
	}
}

func cutOffHolder(t *testing.T, polled bool) {
	mem := newMemBucket()
	cb := &cutBucket{Bucket: mem}
	var log syncBuffer
	opts := lease.Options{TTL: 6 * time.Second, InFlight: time.Second, Command: "sitewatch run", Logger: logger(&log)}
	a := lease.New(cb, opts)
	tm := a.Timing() // margin 1.5 s, confirm 0.5 s, renew 2 s
	h, err := a.Hold(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	lost := lostAt(h)
	// A renewal (at 2 s) and confirmations went through; cut between two confirmations, at a
	// phase where a holder that only noticed the loss when a hung request timed out would
	// notice it half a second late.
	time.Sleep(3200 * time.Millisecond)
	synctest.Wait()
	if ok, err := admitsNow(h); !ok {
		t.Fatalf("a confirmed holder does not admit: %v", err)
	}
	cut := time.Now()
	lastAdmit := cut
	cb.cut.Store(true)
	if polled {
		for {
			ok, err := admitsNow(h)
			if ok {
				lastAdmit = time.Now()
			}
			if err != nil {
				if !errors.Is(err, lease.ErrLost) {
					t.Fatalf("fence error %v, want ErrLost", err)
				}
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if !strings.Contains(log.String(), "paid calls paused") {
			t.Errorf("the pause was not logged:\n%s", log.String())
		}
	}
	var at time.Time
	select {
	case at = <-lost:
	case <-time.After(tm.TTL):
		t.Fatal("the holder's context did not end after its lease could not be renewed")
	}
	if d := lastAdmit.Sub(cut); d >= tm.Margin {
		t.Errorf("the cut-off holder admitted a paid call %v after the cut, not within the margin %v", d, tm.Margin)
	}
	// The loss comes at TTL−margin of the last renewal sent (the record it wrote expires TTL
	// after it): exactly, in fake time.
	if want := lastRenewal(t, mem, opts.TTL).Add(tm.TTL - tm.Margin); !at.Equal(want) {
		t.Errorf("the loss came %v after the cut, want at TTL−margin of the last renewal, %v after it", at.Sub(cut), want.Sub(cut))
	}
	if cause := context.Cause(h.Context()); !errors.Is(cause, lease.ErrLost) || !strings.Contains(cause.Error(), "could not be renewed") {
		t.Errorf("cause %v, want ErrLost naming the missed renewal", cause)
	}

	takeOverAfter(t, mem, opts, lastAdmit)
}

// lastRenewal is when the lease in b was last renewed: its record expires ttl after that.
func lastRenewal(t *testing.T, b *memBucket, ttl time.Duration) time.Time {
	t.Helper()
	body, _, found, err := b.GetSmall(context.Background(), lease.Key)
	if err != nil || !found {
		t.Fatalf("the lease is not in the bucket: found %v, %v", found, err)
	}
	var rec lease.Record
	if err := json.Unmarshal(body, &rec); err != nil {
		t.Fatal(err)
	}
	return rec.Expires.Add(-ttl)
}

// TestChangedLeaseStopsHolderWithinAConfirmation: a lease deleted or rewritten by another
// runner stops its holder at its next confirmation (Confirm, 5 s at a 10-minute TTL), not at
// its next renewal, naming what happened; its fence then refuses.
func TestChangedLeaseStopsHolderWithinAConfirmation(t *testing.T) {
	other, _ := json.Marshal(lease.Record{Owner: "other-2", Host: "other-host", PID: 2, Command: "sitewatch run"})
	for _, tc := range []struct {
		name, want string
		change     func(b *memBucket)
	}{
		{"deleted", "was deleted", func(b *memBucket) { delete(b.objects, lease.Key) }},
		{"replaced", "taken over by other-host", func(b *memBucket) {
			b.version++
			b.objects[lease.Key] = memObject{body: other, etag: "other"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newMemBucket()
				var log syncBuffer
				l := lease.New(b, lease.Options{TTL: 10 * time.Minute, Logger: logger(&log)})
				h, err := l.Hold(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				defer h.Release()
				lost := lostAt(h)
				time.Sleep(l.Timing().Confirm / 2)
				changed := time.Now()
				b.set(tc.change)
				var at time.Time
				select {
				case at = <-lost:
				case <-time.After(l.Timing().TTL):
					t.Fatal("the holder did not stop")
				}
				if d := at.Sub(changed); d > l.Timing().Confirm {
					t.Errorf("the holder stopped %v after the change, want within a confirmation (%v)", d, l.Timing().Confirm)
				}
				if cause := context.Cause(h.Context()); !errors.Is(cause, lease.ErrLost) || !strings.Contains(cause.Error(), tc.want) {
					t.Errorf("cause %v, want ErrLost with %q", cause, tc.want)
				}
				if err := h.Admit(context.Background()); !errors.Is(err, lease.ErrLost) {
					t.Errorf("the fence after the loss = %v, want ErrLost", err)
				}
			})
		})
	}
}

// TestReleaseAfterSignalIsBriefInFakeTime: with the bucket hung, a release after a signal
// returns 2 s after the signal at most, however late it starts (here 1 s after, the command's
// own wind-down), and at once when it starts later than that.
func TestReleaseAfterSignalIsBriefInFakeTime(t *testing.T) {
	for _, windDown := range []time.Duration{0, time.Second, 3 * time.Second} {
		t.Run(windDown.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cb := &cutBucket{Bucket: newMemBucket()}
				ctx, signal := context.WithCancel(context.Background())
				h, err := lease.New(cb, lease.Options{TTL: time.Minute}).Hold(ctx)
				if err != nil {
					t.Fatal(err)
				}
				cb.cut.Store(true)
				signalled := time.Now()
				signal()
				time.Sleep(windDown)
				h.Release()
				if took, most := time.Since(signalled), max(2*time.Second, windDown); took > most {
					t.Errorf("release ended %v after the signal, want within %v", took, most)
				}
			})
		})
	}
}
