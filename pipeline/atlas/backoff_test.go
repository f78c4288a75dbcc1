package atlas

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/model"
	"sitewatch/schema"
)

// recordingClock is a fakeClock that also keeps every wait of a second or more (the
// backoff's; the rate limiter's waits at 50/s are far shorter).
type recordingClock struct {
	*fakeClock
	mu    sync.Mutex
	waits []time.Duration
}

func (r *recordingClock) After(d time.Duration) <-chan time.Time {
	if d >= time.Second {
		r.mu.Lock()
		r.waits = append(r.waits, d)
		r.mu.Unlock()
	}
	return r.fakeClock.After(d)
}

// The transient-failure schedule is backoff.ExponentialBackOff on the client's clock:
// intervals double from RetryInitial up to RetryMax within ±50 %, and RetryMaxElapsed ends
// the retries of a call before MaxAttempts does.
func TestBackoffSchedule(t *testing.T) {
	tests := []struct {
		name       string
		maxElapsed time.Duration
		nominal    []time.Duration // the intervals waited, before jitter
		timeUp     bool
	}{
		{"AttemptBound", time.Hour, []time.Duration{4, 8, 16, 16, 16}, false},
		// 10 s allows one or two waits (the jitter decides), never the five MaxAttempts allows.
		{"ElapsedBound", 10 * time.Second, []time.Duration{4, 8}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, atlastest.Options{FailRate: 1})
			clock := &recordingClock{fakeClock: newFakeClock()}
			c := newClient(t, srv, Config{Clock: clock, RetryInitial: 4 * time.Second, RetryMax: 16 * time.Second,
				RetryMaxElapsed: tt.maxElapsed, MaxAttempts: 6})
			res := c.Fetch(context.Background(), model.Request{Endpoint: schema.EndpointOverview, Domain: "example.com"})
			if res.Err == nil {
				t.Fatal("Fetch succeeded against a server failing every call")
			}
			var sum time.Duration
			for _, d := range clock.waits {
				sum += d
			}
			switch {
			case !tt.timeUp && len(clock.waits) != len(tt.nominal):
				t.Fatalf("waited %v, want %d backoff waits", clock.waits, len(tt.nominal))
			case tt.timeUp && (len(clock.waits) == 0 || len(clock.waits) > len(tt.nominal) || sum > tt.maxElapsed):
				t.Fatalf("waited %v (%v in all), want 1 to %d waits within %v", clock.waits, sum, len(tt.nominal), tt.maxElapsed)
			}
			for i, got := range clock.waits {
				want := tt.nominal[i] * time.Second
				if got < want/2 || got > want*3/2 {
					t.Errorf("wait %d = %v, want within ±50%% of %v", i+1, got, want)
				}
			}
			if got := strings.Contains(res.Err.Error(), "took longer than their bound"); got != tt.timeUp {
				t.Errorf("error %q: names the elapsed bound = %t, want %t", res.Err, got, tt.timeUp)
			}
		})
	}
}
