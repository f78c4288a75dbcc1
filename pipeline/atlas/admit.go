package atlas

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/time/rate"

	"sitewatch/pipeline/model"
)

// admit reserves credits for an attempt about to start. It waits while in-flight attempts
// could still free the room (an unanswered call may turn out unpaid), and stops the client
// when the reserve, the run cap or the waste budget leaves no room even with nothing in
// flight. Until an answer has told the balance, only one attempt is in flight. refetch
// says the attempt repeats one the server may have charged: it takes one unit of the
// waste budget.
func (c *Client) admit(ctx context.Context, refetch bool) error {
	for {
		c.mu.Lock()
		if c.stopErr != nil {
			err := c.stopErr
			c.mu.Unlock()
			return err
		}
		others := c.budgetChanged() // taken before the check, so no change after it is missed
		wait, err := c.admissibleLocked(refetch)
		if err != nil {
			c.stopLocked(err)
			c.mu.Unlock()
			return err
		}
		if !wait {
			c.inflight++
			if refetch {
				c.stats.Refetches++
			}
			c.publishLocked()
			c.mu.Unlock()
			return nil
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-others:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (c *Client) admissibleLocked(refetch bool) (wait bool, err error) {
	stop := func(msg string, sentinel error) error { return &model.Error{Op: "start", Message: msg, Err: sentinel} }
	if refetch && c.stats.Refetches >= c.cfg.MaxWastedCredits {
		return false, stop(fmt.Sprintf("%d refetches of answers that may have been charged this run, the most api.max_wasted_credits allows", c.stats.Refetches), model.ErrWasteBudget)
	}
	reserve := c.cfg.MinCredits > 0
	if reserve && c.blind {
		return false, stop("a charged answer came without a readable X-Gateway-Remaining-Credits", model.ErrBalanceUnknown)
	}
	balanceKnown := c.remaining >= 0 || c.quota >= 0
	if c.inflight > 0 && (!c.seenResponse || (reserve && !balanceKnown)) {
		return true, nil
	}
	blocked := func(e error) (bool, error) {
		if c.inflight > 0 {
			return true, nil
		}
		return false, e
	}
	unit := c.unitCost
	if c.cfg.RunBudget != nil {
		if wait, err := c.sharedBudgetLocked(unit); wait || err != nil {
			return wait, err
		}
	} else if lim := c.cfg.MaxCreditsPerRun; lim > 0 && c.stats.CreditsSpent+(c.stats.Unanswered+c.inflight+1)*unit > lim {
		return blocked(stop(fmt.Sprintf("%d of %d credits spent this run", c.stats.CreditsSpent, lim), model.ErrRunBudget))
	}
	if c.remaining >= 0 && c.remaining-(c.inflight+1)*unit < c.cfg.MinCredits {
		if !reserve {
			// No reserve to lower: the wallet is simply empty.
			return blocked(stop(fmt.Sprintf("the wallet has %d credits left (X-Gateway-Remaining-Credits), a call costs %d; top it up", c.remaining, unit), model.ErrOutOfCredits))
		}
		return blocked(stop(fmt.Sprintf("%d credits remain, a call costs %d, reserve is %d", c.remaining, unit, c.cfg.MinCredits), model.ErrCreditReserve))
	}
	if c.quota >= 0 && c.quota-c.inflight-1 < c.cfg.MinCredits {
		return blocked(stop(fmt.Sprintf("%d requests of the marketplace monthly quota remain, reserve is %d", c.quota, c.cfg.MinCredits), model.ErrCreditReserve))
	}
	return false, nil
}

// sharedBudgetLocked checks one more call against the run budget shared with other clients:
// it waits while calls in flight (of any client) could still end uncharged, and stops the
// client when the total leaves no room with nothing in flight.
func (c *Client) sharedBudgetLocked(unit int64) (wait bool, err error) {
	b := c.cfg.RunBudget
	others, othersInflight, spent := b.others(c)
	if c.stats.CreditsSpent+(c.stats.Unanswered+c.inflight+1)*unit+others <= b.Limit {
		return false, nil
	}
	if c.inflight > 0 || othersInflight > 0 {
		return true, nil
	}
	return false, &model.Error{Op: "start", Message: fmt.Sprintf("%d of %d credits spent this run by all credit sources together (api.max_credits_per_run)",
		spent, b.Limit), Err: model.ErrRunBudget}
}

// unreserve gives back the reservation of an attempt that was never sent.
func (c *Client) unreserve(refetch bool) {
	c.mu.Lock()
	c.inflight--
	if refetch {
		c.stats.Refetches--
	}
	c.broadcastLocked()
	c.mu.Unlock()
}

// waitTurn waits out any 429 pause and takes a token. Only one goroutine at a time waits
// on the limiter, so a lowered rate or a pause applies to the very next call instead of
// to a queue of reservations made at the old rate. Every wait ends at once on a stop.
func (c *Client) waitTurn(ctx context.Context) error {
	select {
	case c.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-c.stopCh:
		return c.Err()
	}
	defer func() { <-c.turn }()
	for {
		if err := c.waitPause(ctx); err != nil {
			return err
		}
		now := c.clock.Now()
		r := c.limiter.ReserveN(now, 1)
		if !r.OK() {
			return fmt.Errorf("atlas: the rate limiter refused a token at %v requests/s", c.limiter.Limit())
		}
		if err := c.sleep(ctx, r.DelayFrom(now)); err != nil {
			r.CancelAt(c.clock.Now())
			return err
		}
		c.mu.Lock()
		until := c.pausedUntil
		c.mu.Unlock()
		if c.clock.Now().Before(until) {
			continue // a 429 arrived while we waited: honour it
		}
		return nil
	}
}

// waitPause waits until no 429 pause is in force.
func (c *Client) waitPause(ctx context.Context) error {
	for {
		c.mu.Lock()
		until, stopErr := c.pausedUntil, c.stopErr
		c.mu.Unlock()
		if stopErr != nil {
			return stopErr
		}
		d := until.Sub(c.clock.Now())
		if d <= 0 {
			return nil
		}
		if err := c.sleep(ctx, d); err != nil {
			return err
		}
	}
}

// paceFactor keeps the bucket a hair under the limit. Gateways count requests in fixed
// one-second windows; at exactly the limit, a few milliseconds of send jitter at a window
// edge put limit+1 requests in one window, and the 429's Retry-After then idles every call
// for a second. At 99.5% that takes 5 ms of jitter at the exact edge.
const paceFactor = 0.995

// bucketRate is the token rate for a requests/second limit.
func bucketRate(limit float64) rate.Limit { return rate.Limit(limit * paceFactor) }

// pause stops every new attempt until d from now (a 429's Retry-After), and slows the
// bucket: a 429 means the server counts our calls faster than we think we send them. The
// run's total paused time is bounded by MaxRateLimitWait: a pause that would pass it stops
// the client (model.ErrRateLimitWait) instead of being waited out.
func (c *Client) pause(d time.Duration, e *model.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	until := now.Add(d)
	if until.After(c.pausedUntil) {
		added := until.Sub(maxTime(now, c.pausedUntil))
		if c.stats.RateLimitWaited+added > c.cfg.MaxRateLimitWait {
			c.stopLocked(&model.Error{Op: "start", Status: e.Status, Code: e.Code, Message: fmt.Sprintf(
				"429 answers paused this run for %s in all; the next Retry-After (%s) would pass api.max_rate_limit_wait (%s)",
				c.stats.RateLimitWaited.Round(time.Millisecond), d.Round(time.Millisecond), c.cfg.MaxRateLimitWait), Err: model.ErrRateLimitWait})
			return
		}
		c.stats.RateLimitWaited += added
		c.pausedUntil = until
	}
	c.slow = max(minSlow, c.slow*slowOn429)
	c.limiter.SetLimitAt(now, bucketRate(c.limit*c.slow))
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// After a 429 the bucket runs at slowOn429 of its rate (down to minSlow of it), then regains
// recoverPerOK of the full rate with each charged answer.
const (
	slowOn429    = 0.9
	minSlow      = 0.5
	recoverPerOK = 0.01
)

// recoverLocked moves a slowed bucket back towards the full rate after a good answer.
func (c *Client) recoverLocked() {
	if c.slow >= 1 {
		return
	}
	c.slow = min(1, c.slow+recoverPerOK)
	c.limiter.SetLimitAt(c.clock.Now(), bucketRate(c.limit*c.slow))
}

// sleep waits d on the client's clock; a stop (a signal, a 402) or the end of ctx ends it
// at once: no one waits out a long Retry-After or a slow bucket after a stop.
func (c *Client) sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-c.stopCh:
		return c.Err()
	default:
	}
	if d <= 0 {
		return nil
	}
	select {
	case <-c.clock.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.stopCh:
		return c.Err()
	}
}

// acquireBytes waits until n more body bytes fit in MaxInflightBytes (a body alone always
// fits). It does not give up on a stop: the body being read was charged, and calls in
// flight finish. ctx is the attempt's: its time-out bounds the wait.
func (c *Client) acquireBytes(ctx context.Context, n int64) error {
	for {
		c.mu.Lock()
		if c.heldBytes == 0 || c.heldBytes+n <= c.cfg.MaxInflightBytes {
			c.heldBytes += n
			c.peakHeld = max(c.peakHeld, c.heldBytes)
			c.mu.Unlock()
			return nil
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// releaseBytes gives n body bytes back to the in-flight budget.
func (c *Client) releaseBytes(n int64) {
	if n == 0 {
		return
	}
	c.mu.Lock()
	c.heldBytes -= n
	c.broadcastLocked()
	c.mu.Unlock()
}
