package atlastest

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// monthClock holds the data month the simulator serves and turns it: once at a deadline
// (Options.MonthTurnAfter) or when a test asks (SetMonth, TurnMonth). Each month has its own
// Generator, so a turn never mixes two months in one body.
type monthClock struct {
	seed int64
	gen  atomic.Pointer[Generator]

	mu      sync.Mutex  // serializes turns
	turnAt  time.Time   // when the pending turn happens
	pending atomic.Bool // a MonthTurnAfter turn has not happened yet
}

func newMonthClock(seed int64, month string, turnAfter time.Duration, start time.Time) *monthClock {
	c := &monthClock{seed: seed}
	c.gen.Store(NewGenerator(seed, month))
	if turnAfter > 0 {
		c.turnAt = start.Add(turnAfter)
		c.pending.Store(true)
	}
	return c
}

// generator returns the Generator of the month served now, first applying a pending
// MonthTurnAfter turn whose time has come. It reports the turn (from, to) when this call
// applied it.
func (c *monthClock) generator(now time.Time) (g *Generator, from, to string) {
	if c.pending.Load() && !now.Before(c.turnAt) {
		c.mu.Lock()
		if c.pending.Load() { // no other request applied it meanwhile
			from, to = c.advanceLocked()
			c.pending.Store(false) // after the new month is stored: who sees false sees it
		}
		c.mu.Unlock()
	}
	return c.gen.Load(), from, to
}

// set makes month the served month and returns the month served before.
func (c *monthClock) set(month string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.gen.Load().Month()
	c.gen.Store(NewGenerator(c.seed, month))
	return old
}

// advance serves the month after the current one and returns both.
func (c *monthClock) advance() (from, to string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.advanceLocked()
}

func (c *monthClock) advanceLocked() (from, to string) {
	old := c.gen.Load()
	c.gen.Store(NewGenerator(c.seed, old.month.AddDate(0, 1, 0).Format("2006-01")))
	return old.Month(), c.gen.Load().Month()
}

// generator returns the Generator of the month served now, logging a timed turn.
func (h *Handler) generator() *Generator {
	g, from, to := h.month.generator(time.Now())
	if from != "" {
		h.logTurn(from, to, "month-turn-after")
	}
	return g
}

// Month returns the data month served now, YYYY-MM: what meta.snapshot_date (its first
// day) and traffic.period of the next overview body say.
func (h *Handler) Month() string { return h.generator().Month() }

// SetMonth makes the simulator serve month (YYYY-MM) from the next request on, as the real
// API does when its data month turns. A pending MonthTurnAfter turn still happens at its
// time, one month past the month then served. It returns an error, changing nothing, for a
// malformed month.
func (h *Handler) SetMonth(month string) error {
	if _, err := parseMonth(month); err != nil {
		return fmt.Errorf("set simulator month: %w", err)
	}
	h.generator() // apply a turn that is due, so it is not applied on top of month later
	from := h.month.set(month)
	h.logTurn(from, month, "SetMonth")
	return nil
}

// TurnMonth advances the served data month by one (2026-12 turns to 2027-01) and returns the
// new month.
func (h *Handler) TurnMonth() string {
	h.generator() // apply a turn that is due first
	from, to := h.month.advance()
	h.logTurn(from, to, "TurnMonth")
	return to
}

func (h *Handler) logTurn(from, to, by string) {
	if l := h.opts.Logger; l != nil && from != to {
		l.LogAttrs(context.Background(), slog.LevelInfo, "data month turned",
			slog.String("from", from), slog.String("to", to), slog.String("by", by))
	}
}
