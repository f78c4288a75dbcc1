package atlas

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/model"
	"sitewatch/schema"
)

// TestFence: the money path's table for the lease fence. Every paid call passes it right
// before it is sent: an open fence lets the calls through; a closed one (the lease lost)
// stops the client before any charge; a paused one holds the calls until it opens; a stop of
// the client (a signal) ends a paused wait. That it ends it at once, not SignalGrace later
// when the signal abandons the calls in flight, is TestFencePausedInFakeTime's: on the real
// clock a loaded machine may stretch the 100 ms before the stop past any bound.
func TestFence(t *testing.T) {
	lost := errors.New("the bucket lease was lost")
	reqs := []model.Request{{Endpoint: schema.EndpointOverview, Domain: "a.com"}, {Endpoint: schema.EndpointOverview, Domain: "b.com"},
		{Endpoint: schema.EndpointSimilar, Domain: "a.com"}}
	for _, tc := range []struct {
		name        string
		fence       func(calls *atomic.Int64, open <-chan struct{}) func(context.Context) error
		stopAfter   time.Duration // stop the client (a signal) after this; 0: never
		openAfter   time.Duration // open a paused fence after this; 0: never
		wantCharged int64
		wantErr     error
	}{
		{name: "Open", fence: func(calls *atomic.Int64, _ <-chan struct{}) func(context.Context) error {
			return func(context.Context) error { calls.Add(1); return nil }
		}, wantCharged: 3},
		{name: "Lost", fence: func(calls *atomic.Int64, _ <-chan struct{}) func(context.Context) error {
			return func(context.Context) error { calls.Add(1); return lost }
		}, wantCharged: 0, wantErr: lost},
		{name: "LostAfterOne", fence: func(calls *atomic.Int64, _ <-chan struct{}) func(context.Context) error {
			return func(context.Context) error {
				if calls.Add(1) > 1 {
					return lost
				}
				return nil
			}
		}, wantCharged: 1, wantErr: lost},
		{name: "PausedThenOpen", openAfter: 100 * time.Millisecond, fence: pausedFence, wantCharged: 3},
		{name: "PausedThenSignal", stopAfter: 100 * time.Millisecond, fence: pausedFence, wantCharged: 0, wantErr: context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, atlastest.Options{})
			c := newClient(t, srv, Config{Concurrency: 1})
			var calls atomic.Int64
			open := make(chan struct{})
			c.SetFence(tc.fence(&calls, open))
			if tc.openAfter > 0 {
				time.AfterFunc(tc.openAfter, func() { close(open) })
			}
			if tc.stopAfter > 0 {
				time.AfterFunc(tc.stopAfter, func() { c.Stop(context.Canceled) })
			}
			start := time.Now()
			err := c.FetchAll(context.Background(), reqs, func(model.Result) {})
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Errorf("FetchAll = %v, want %v", err, tc.wantErr)
			}
			if got := srv.Stats().Charged; got != tc.wantCharged {
				t.Errorf("charged %d, want %d", got, tc.wantCharged)
			}
			if tc.openAfter > 0 && time.Since(start) < tc.openAfter {
				t.Errorf("calls went through a paused fence (%v < %v)", time.Since(start), tc.openAfter)
			}
		})
	}
}

// pausedFence waits until open is closed or its context ends.
func pausedFence(_ *atomic.Int64, open <-chan struct{}) func(context.Context) error {
	return func(ctx context.Context) error {
		select {
		case <-open:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// TestFencePausedInFakeTime: in fake time (testing/synctest, the simulator's handler called in
// memory), a paused fence holds the calls exactly until it opens, and a stop of the client (a
// signal) ends the paused wait at once: at the stop, not SignalGrace later.
func TestFencePausedInFakeTime(t *testing.T) {
	reqs := []model.Request{{Endpoint: schema.EndpointOverview, Domain: "a.com"}, {Endpoint: schema.EndpointOverview, Domain: "b.com"}}
	for _, tc := range []struct {
		name                 string
		openAfter, stopAfter time.Duration // 0: never
		wantCharged          int64
		wantErr              error
	}{
		{name: "PausedThenOpen", openAfter: 100 * time.Millisecond, wantCharged: 2},
		{name: "PausedThenSignal", stopAfter: 100 * time.Millisecond, wantErr: context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sim, err := atlastest.NewHandler(atlastest.Options{Rate: 50, Keys: map[string]int64{canary: 1000}})
				if err != nil {
					t.Fatal(err)
				}
				c, err := New(Config{BaseURL: "http://127.0.0.1:1", APIKey: canary, RateLimit: 50, Concurrency: 1,
					HTTPClient: &http.Client{Transport: atlastest.Transport{Handler: sim}}})
				if err != nil {
					t.Fatal(err)
				}
				open := make(chan struct{})
				var firstPassed time.Time
				c.SetFence(func(ctx context.Context) error {
					err := pausedFence(nil, open)(ctx)
					if err == nil && firstPassed.IsZero() {
						firstPassed = time.Now()
					}
					return err
				})
				if tc.openAfter > 0 {
					time.AfterFunc(tc.openAfter, func() { close(open) })
				}
				if tc.stopAfter > 0 {
					time.AfterFunc(tc.stopAfter, func() { c.Stop(context.Canceled) })
				}
				start := time.Now()
				err = c.FetchAll(context.Background(), reqs, func(model.Result) {})
				took := time.Since(start)
				if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
					t.Errorf("FetchAll = %v, want %v", err, tc.wantErr)
				}
				if got := sim.Stats().Charged; got != tc.wantCharged {
					t.Errorf("charged %d, want %d", got, tc.wantCharged)
				}
				if tc.openAfter > 0 && firstPassed.Sub(start) != tc.openAfter {
					t.Errorf("the first call passed the paused fence %v after the start, want when it opened (%v)", firstPassed.Sub(start), tc.openAfter)
				}
				if tc.stopAfter > 0 && took != tc.stopAfter {
					t.Errorf("a stop %v after the start ended the paused wait %v after it, want at once", tc.stopAfter, took)
				}
			})
		})
	}
}

// TestSignalAbandonsHungCalls: after a signal stops the client, a call the API never answers
// (on a real connection) is abandoned, not left to api.timeout, so the run ends within
// seconds. It cannot end before SignalGrace; that it ends exactly then is
// TestSignalAbandonsHungCallsInFakeTime's (a loaded machine stretches the real clock), so
// here a call still held at api.timeout (a minute, twenty times SignalGrace) was not abandoned.
func TestSignalAbandonsHungCalls(t *testing.T) {
	hung := make(chan struct{})
	srv := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		select { // never answers: neither the signal nor the client's own timeout is heard here
		case <-hung:
		case <-r.Context().Done():
		}
	})
	defer close(hung)
	c := newClient(t, nil, Config{BaseURL: srv.URL, Timeout: time.Minute, Concurrency: 1})
	time.AfterFunc(100*time.Millisecond, func() { c.Stop(fmt.Errorf("interrupted by a signal: %w", context.Canceled)) })
	start := time.Now()
	err := c.FetchAll(context.Background(), []model.Request{{Endpoint: schema.EndpointOverview, Domain: "a.com"}}, func(model.Result) {})
	took := time.Since(start)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("FetchAll = %v, want the signal's stop", err)
	}
	if took < SignalGrace {
		t.Errorf("the hung call ended %v after the start, before SignalGrace (%v) after the signal: the calls in flight get that long to finish", took, SignalGrace)
	}
	if took >= time.Minute {
		t.Errorf("the hung call ended %v after the start: at api.timeout (1m), not abandoned SignalGrace (%v) after the signal", took, SignalGrace)
	}
}

// hungTransport carries every request nowhere: it hangs until the request's context ends, as
// an API that never answers does, and fails it with that context's error (no socket, so a
// synctest bubble's fake clock runs the client's timers).
type hungTransport struct{}

func (hungTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// TestSignalAbandonsHungCallsInFakeTime: a call the API never answers is abandoned exactly
// SignalGrace after the signal that stopped the client, in fake time (testing/synctest),
// whatever the machine's load; api.timeout (a minute) would have ended it much later.
func TestSignalAbandonsHungCallsInFakeTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, err := New(Config{BaseURL: "http://127.0.0.1:1", APIKey: canary, RateLimit: 50, Timeout: time.Minute, Concurrency: 1,
			HTTPClient: &http.Client{Transport: hungTransport{}}})
		if err != nil {
			t.Fatal(err)
		}
		const signalAt = 100 * time.Millisecond
		time.AfterFunc(signalAt, func() { c.Stop(fmt.Errorf("interrupted by a signal: %w", context.Canceled)) })
		start := time.Now()
		err = c.FetchAll(context.Background(), []model.Request{{Endpoint: schema.EndpointOverview, Domain: "a.com"}}, func(model.Result) {})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("FetchAll = %v, want the signal's stop", err)
		}
		if took := time.Since(start); took != signalAt+SignalGrace {
			t.Errorf("the hung call ended %v after the signal, want SignalGrace (%v)", took-signalAt, SignalGrace)
		}
	})
}
