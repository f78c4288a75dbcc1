package lease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"sitewatch/pipeline/publish"
)

// Held is a lease taken: the context of the work it guards, the fence every paid call
// consults (Admit), and its release.
type Held struct {
	l      *Lease
	parent context.Context // the caller's: a signal ends it, and shortens the release
	ctx    context.Context
	cancel context.CancelCauseFunc
	// loopCancel ends the confirmation loop and its request in flight at once (release).
	loopCancel context.CancelFunc
	owner      string // Record.Owner of this take

	mu          sync.Mutex
	rec         Record
	etag        string
	renewSent   time.Time // when the renewal that wrote etag was sent (monotonic)
	confirmSent time.Time // when the last confirmation that succeeded was sent
	lostErr     error
	released    bool
	paused      bool          // paid calls are paused (logged once per pause)
	failing     bool          // the last confirmation failed (logged once per streak)
	changed     chan struct{} // closed and replaced at every change of the fence
	// logWindow, when set (WatchLog), is the second reason of the fence: a paid call is
	// admitted only while the answer log's last acknowledged cut was sent less than
	// logWindow (publish.log_interval + margin) ago.
	logWindow  time.Duration
	logCovered time.Time // when the last cut the bucket acknowledged was made
	logPaused  bool      // paid calls are paused for the answer log (logged once per pause)
	renewals   chan struct{}

	done chan struct{}
	once sync.Once

	signalMu    sync.Mutex
	signalledAt time.Time // when parent ended (a signal): the release's 2 s run from it
	stopWatch   func() bool
}

func (l *Lease) hold(ctx context.Context, rec Record, etag string, sent time.Time) *Held {
	hctx, cancel := context.WithCancelCause(ctx)
	loopCtx, loopCancel := context.WithCancel(hctx)
	h := &Held{l: l, parent: ctx, ctx: hctx, cancel: cancel, loopCancel: loopCancel, owner: rec.Owner, rec: rec, etag: etag,
		renewSent: sent, confirmSent: sent, changed: make(chan struct{}), done: make(chan struct{}), renewals: make(chan struct{}, 1)}
	h.stopWatch = context.AfterFunc(ctx, func() {
		h.signalMu.Lock()
		h.signalledAt = time.Now()
		h.signalMu.Unlock()
	})
	go h.keep(loopCtx)
	return h
}

// Context ends when the lease is lost (its cause wraps ErrLost) or released.
func (h *Held) Context() context.Context { return h.ctx }

// Admit is the fence: it returns nil while the lease is confirmed, so a paid call may start.
// While no confirmation was sent within the margin it waits (paid calls are paused, and
// resume when a confirmation succeeds); it returns an error wrapping ErrLost once the lease
// is lost or could not be confirmed in time, ErrReleased after Release, or ctx's error.
func (h *Held) Admit(ctx context.Context) error {
	t := h.l.timing
	for {
		h.mu.Lock()
		switch {
		case h.lostErr != nil:
			err := h.lostErr
			h.mu.Unlock()
			return err
		case h.released:
			h.mu.Unlock()
			return fmt.Errorf("lease %s: %w", h.l.b.URL(Key), ErrReleased)
		}
		now := h.l.opts.Clock.Now()
		switch f := t.fenceAt(now, h.renewSent, h.confirmSent); {
		case f == fenceOpen && h.logOpenLocked(now):
			h.mu.Unlock()
			return nil
		case f == fenceLost:
			h.loseLocked(h.expiredErr())
			err := h.lostErr
			h.mu.Unlock()
			return err
		case f == fenceOpen:
			// paused for the answer log: logOpenLocked said so
		case !h.paused:
			h.paused = true
			h.l.opts.Logger.Warn("paid calls paused: the bucket lease could not be confirmed within its margin; they resume when it is, and stop for good if it is not by the deadline",
				"lease", h.l.b.URL(Key), "margin", t.Margin.String(), "deadline_in", t.lostAt(h.renewSent).Sub(now).Round(time.Millisecond).String())
		}
		ch, wake := h.changed, t.lostAt(h.renewSent).Sub(now)
		h.mu.Unlock()
		select {
		case <-ch:
		case <-h.l.opts.Clock.After(wake):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// keep confirms the lease every Confirm (renewing it every Renew) until released or lost. It
// wakes at the fence's deadline too, so the held context ends when the lease is lost even
// while no paid call asks the fence (an export, a publish): on time, not a Confirm later.
func (h *Held) keep(ctx context.Context) {
	defer close(h.done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.l.opts.Clock.After(min(h.l.timing.Confirm, h.untilLost())):
		}
		if h.check(ctx) {
			return
		}
	}
}

// untilLost is the time left before the fence closes for good without a new renewal.
func (h *Held) untilLost() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.l.timing.lostAt(h.renewSent).Sub(h.l.opts.Clock.Now())
}

// check confirms or renews the lease once and moves the fence; it reports whether the
// lease is lost. A request takes at most the margin, and never past the fence's deadline:
// one that hangs longer could not keep the fence open anyway.
func (h *Held) check(ctx context.Context) (lost bool) {
	h.mu.Lock()
	sent := h.l.opts.Clock.Now()
	renew := sent.Sub(h.renewSent) >= h.l.timing.Renew
	rec, etag := h.rec, h.etag
	left := h.l.timing.lostAt(h.renewSent).Sub(sent)
	if left <= 0 {
		h.loseLocked(h.expiredErr())
		h.mu.Unlock()
		return true
	}
	h.mu.Unlock()
	rctx, cancel := context.WithTimeout(ctx, min(h.l.timing.Margin, left))
	defer cancel()
	var err error
	if renew {
		err = h.renew(rctx, rec, etag, sent)
	} else {
		err = h.confirm(rctx, etag, sent)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case errors.Is(err, ErrLost):
		h.loseLocked(err)
		return true
	case err != nil && ctx.Err() != nil:
		return true // released or the work ended: not a failure of the bucket
	case err != nil:
		if !h.failing {
			h.failing = true
			h.l.opts.Logger.Warn("could not confirm the bucket lease; retrying", "lease", h.l.b.URL(Key), "err", err)
		}
	}
	if h.l.timing.fenceAt(h.l.opts.Clock.Now(), h.renewSent, h.confirmSent) == fenceLost {
		h.loseLocked(h.expiredErr())
		return true
	}
	return false
}

// confirm reads the lease: it must still be the version this holder wrote.
func (h *Held) confirm(ctx context.Context, etag string, sent time.Time) error {
	body, now, found, err := h.l.b.GetSmall(ctx, Key)
	if err != nil {
		return err
	}
	if !found {
		return h.deletedErr()
	}
	if now != etag {
		other := parseRecord(body)
		if other.Owner != h.owner {
			return h.takenErr(other)
		}
		h.adopt(now) // a renewal of ours landed though its answer was lost
	}
	h.confirmed(sent, false, "", Record{})
	return nil
}

// renew writes a new version of the record (If-Match on the version this holder wrote).
func (h *Held) renew(ctx context.Context, rec Record, etag string, sent time.Time) error {
	rec.Expires = h.l.opts.Now().UTC().Add(h.l.opts.TTL)
	body, _ := json.Marshal(rec)
	next, err := h.l.b.PutConditional(ctx, Key, body, etag)
	if errors.Is(err, publish.ErrPrecondition) {
		return h.confirm(ctx, etag, sent) // deleted, taken over, or an earlier renewal of ours landed
	}
	if err != nil {
		return err
	}
	h.confirmed(sent, true, next, rec)
	return nil
}

// adopt takes etag as this holder's version (its record, written by an earlier renewal whose
// answer was lost). The renewal time is not moved: that write was sent after it.
func (h *Held) adopt(etag string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.etag = etag
}

// confirmed moves the fence after a confirmation sent at sent succeeded (renewed: it wrote
// the version etag holding rec).
func (h *Held) confirmed(sent time.Time, renewed bool, etag string, rec Record) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if renewed {
		h.renewSent, h.etag, h.rec = sent, etag, rec
		select {
		case h.renewals <- struct{}{}:
		default: // one pending is enough
		}
	}
	if sent.After(h.confirmSent) {
		h.confirmSent = sent
	}
	if h.paused || h.failing {
		h.l.opts.Logger.Info("the bucket lease is confirmed again: paid calls resume", "lease", h.l.b.URL(Key))
	}
	h.paused, h.failing = false, false
	h.broadcastLocked()
}

func (h *Held) broadcastLocked() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// loseLocked ends the held context with err (the first loss only) and wakes every waiting
// Admit.
func (h *Held) loseLocked(err error) {
	if h.lostErr != nil {
		return
	}
	h.lostErr = err
	h.l.opts.Logger.Error("stopping: no paid call starts any more", "lease", h.l.b.URL(Key), "err", err)
	h.cancel(err)
	h.broadcastLocked()
}

func (h *Held) deletedErr() error {
	return fmt.Errorf("%w: %s was deleted while this runner held it (a takeover: another runner may hold it now)", ErrLost, h.l.b.URL(Key))
}

func (h *Held) takenErr(other Record) error {
	return fmt.Errorf("%w: %s was taken over by %s running %q", ErrLost, h.l.b.URL(Key), other, other.Command)
}

// expiredErr: the deadline passed without a confirmed renewal (the caller holds h.mu).
func (h *Held) expiredErr() error {
	t := h.l.timing
	return fmt.Errorf("%w: %s could not be renewed for %v (publish.lease_ttl %v minus the margin %v, on this machine's clock): another runner may take it over now",
		ErrLost, h.l.b.URL(Key), t.TTL-t.Margin, t.TTL, t.Margin)
}

// Bounds of the release: it tries briefly, and more briefly after a signal; a lease it could
// not delete expires by itself.
const (
	releaseTimeout     = 10 * time.Second
	releaseAfterSignal = 2 * time.Second
)

// Release stops confirming and deletes the lease if it is still this holder's. It returns
// within releaseAfterSignal of a signal (the caller's context ending), whatever hangs.
func (h *Held) Release() {
	h.once.Do(func() {
		h.loopCancel()
		<-h.done
		h.mu.Lock()
		h.released = true
		lost, etag, expires := h.lostErr, h.etag, h.rec.Expires
		h.broadcastLocked()
		h.mu.Unlock()
		defer h.cancel(nil)
		if lost != nil {
			return // not this holder's any more
		}
		h.stopWatch()
		h.signalMu.Lock()
		signalled := h.signalledAt
		h.signalMu.Unlock()
		ctx, stop := releaseContext(h.parent, signalled)
		defer stop()
		if err := h.deleteOwn(ctx, etag); err != nil {
			h.l.opts.Logger.Warn("could not release the bucket lease; it expires by itself", "lease", h.l.b.URL(Key), "expires", expires, "err", err)
		}
	})
}

// deleteOwn deletes the lease at etag, or at the version it holds now when that is still this
// holder's record: a renewal cut off by the release (or by a deadline) may have landed though
// its answer never came back, and a release that gave up then left the lease to block every
// other runner until it expired (lease_ttl: 10 minutes by default). Another holder's lease is
// left alone.
func (h *Held) deleteOwn(ctx context.Context, etag string) error {
	err := h.l.b.DeleteConditional(ctx, Key, etag)
	if !errors.Is(err, publish.ErrPrecondition) {
		return err
	}
	body, now, found, err := h.l.b.GetSmall(ctx, Key)
	if err != nil || !found || now == etag || parseRecord(body).Owner != h.owner {
		return err
	}
	if err := h.l.b.DeleteConditional(ctx, Key, now); !errors.Is(err, publish.ErrPrecondition) {
		return err
	}
	return nil // changed again meanwhile: not this holder's to delete
}

// releaseContext bounds a release: releaseTimeout, and releaseAfterSignal from the moment
// parent ended (signalled; zero: not yet), whichever comes first.
func releaseContext(parent context.Context, signalled time.Time) (context.Context, func()) {
	deadline := time.Now().Add(releaseTimeout)
	if parent.Err() != nil {
		if signalled.IsZero() {
			signalled = time.Now()
		}
		deadline = signalled.Add(releaseAfterSignal)
	}
	ctx, cancel := context.WithDeadline(context.WithoutCancel(parent), deadline)
	stop := context.AfterFunc(parent, func() { time.AfterFunc(releaseAfterSignal, cancel) })
	return ctx, func() { stop(); cancel() }
}

// WatchLog makes the answer log (pipeline/answerlog) the fence's second reason: from now on a
// paid call is admitted only while the log's last cut the bucket acknowledged (Logged) was
// made less than interval + margin ago, exactly as it is only while the lease's last
// confirmation was sent less than the margin ago. Calls pause while the log cannot write and
// resume when a write succeeds; the lease's own deadline still decides when it is lost.
func (h *Held) WatchLog(interval time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.logWindow = interval + h.l.timing.Margin
	h.logCovered = h.l.opts.Clock.Now()
	h.broadcastLocked()
}

// Renewals receives after each renewal of the lease: the answer log cuts a segment then too.
func (h *Held) Renewals() <-chan struct{} { return h.renewals }

// Logged moves the log's side of the fence: everything committed before cut (on this
// clock) is in the bucket, acknowledged.
func (h *Held) Logged(cut time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !cut.After(h.logCovered) {
		return
	}
	h.logCovered = cut
	if h.logPaused {
		h.logPaused = false
		h.l.opts.Logger.Info("the answer log wrote to the bucket again: paid calls resume", "lease", h.l.b.URL(Key))
	}
	h.broadcastLocked()
}

// logOpenLocked says whether the answer log admits a paid call at now (always without a
// log); it logs the start of a pause once. The caller holds h.mu.
func (h *Held) logOpenLocked(now time.Time) bool {
	if h.logWindow <= 0 || now.Before(h.logCovered.Add(h.logWindow)) {
		return true
	}
	if !h.logPaused {
		h.logPaused = true
		h.l.opts.Logger.Warn("paid calls paused: the answer log could not write its new answers to the bucket within publish.log_interval plus the lease's margin; they resume when it does",
			"lease", h.l.b.URL(Key), "window", h.logWindow.String())
	}
	return false
}
