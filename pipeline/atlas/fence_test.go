package atlas

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/model"
	"sitewatch/schema"
)

// TestFence: the money path's table for the lease fence. Every paid call passes it right
// before it is sent: an open fence lets the calls through; a closed one (the lease lost)
// stops the client before any charge; a paused one holds the calls until it opens; a stop of
// the client (a signal) ends a paused wait at once.
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
			if tc.stopAfter > 0 && time.Since(start) > tc.stopAfter+time.Second {
				t.Errorf("a stop ended the paused wait after %v", time.Since(start))
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

// TestSignalAbandonsHungCalls: after a signal stops the client, a call the API never answers
// is abandoned SignalGrace later (not at api.timeout), so the run ends within seconds.
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
	if took > SignalGrace+2*time.Second || took < SignalGrace {
		t.Errorf("the hung call ended %v after the start, want about SignalGrace (%v) after the signal", took, SignalGrace)
	}
}
