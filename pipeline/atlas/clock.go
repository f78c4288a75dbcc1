package atlas

import "time"

// Clock is the time the client paces and waits by: 429 pauses, Retry-After, backoff
// between retries and the rate limiter's waits. Tests pass a controllable one so that
// minutes of waiting run in milliseconds; nil in Config means the real clock. Per-attempt
// time-outs (Config.Timeout) stay on real time: they bound a real connection.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has passed on this clock.
	After(d time.Duration) <-chan time.Time
}

// RealClock is the wall clock (the default of Config.Clock, and of the run core's).
type RealClock struct{}

// Now is time.Now.
func (RealClock) Now() time.Time { return time.Now() }

// After is time.After.
func (RealClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
