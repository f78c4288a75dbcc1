package leasetest

import (
	"sync"
	"time"

	"sitewatch/pipeline/lease"
)

// Clock is a monotonic clock that moves only when a test calls Advance; timers made by After
// fire when it passes their deadline. It implements lease.Clock.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers []timer
	added  chan struct{} // closed and replaced when a timer is added
}

type timer struct {
	at time.Time
	ch chan time.Time
}

var _ lease.Clock = (*Clock)(nil)

// NewClock returns a clock reading an arbitrary fixed instant.
func NewClock() *Clock {
	return &Clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), added: make(chan struct{})}
}

// Now returns the clock's reading.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After returns a channel that receives the clock's reading once it has moved d on.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.timers = append(c.timers, timer{at: c.now.Add(d), ch: ch})
	close(c.added)
	c.added = make(chan struct{})
	return ch
}

// Advance moves the clock d on and fires every timer it passes.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		if t.at.After(c.now) {
			kept = append(kept, t)
			continue
		}
		t.ch <- c.now
	}
	c.timers = kept
}

// Waiting returns how many timers are pending.
func (c *Clock) Waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// WaitFor blocks until at least n timers are pending or timeout (real time) passes, and
// reports whether they are: a test's way to know a goroutine sleeps on the clock.
func (c *Clock) WaitFor(n int, timeout time.Duration) bool {
	deadline := time.After(timeout)
	for {
		c.mu.Lock()
		pending, added := len(c.timers), c.added
		c.mu.Unlock()
		if pending >= n {
			return true
		}
		select {
		case <-added:
		case <-deadline:
			return false
		}
	}
}
