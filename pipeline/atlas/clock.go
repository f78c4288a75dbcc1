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

// realClock is the wall clock.
type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
