package lease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"sitewatch/pipeline/publish"
)

// errGone: the lease object disappeared while a taker looked at it (released): create again.
var errGone = errors.New("the lease was released meanwhile")

// maxCreates bounds the creates of one take that find the lease released between two looks.
const maxCreates = 3

// create writes body as the lease if none exists (taking over one that stays unchanged for
// the taker's wait), then checks that the service refused a second create. It returns the
// new ETag and when the write that succeeded was sent.
func (l *Lease) create(ctx context.Context, body []byte) (string, time.Time, error) {
	var etag string
	var sent time.Time
	var err error
	for range maxCreates {
		sent = l.opts.Clock.Now()
		etag, err = l.b.PutConditional(ctx, Key, body, "")
		if errors.Is(err, publish.ErrPrecondition) {
			etag, sent, err = l.takeOver(ctx, body)
		}
		if !errors.Is(err, errGone) {
			break
		}
	}
	if err != nil {
		return "", sent, err
	}
	// The same create again must be refused: a service that ignores the condition would let
	// a second runner overwrite this lease and pay for the same month.
	if _, err := l.b.PutConditional(ctx, Key, body, ""); !errors.Is(err, publish.ErrPrecondition) {
		if err == nil {
			_ = l.b.DeleteConditional(ctx, Key, etag) // best effort: a lease that guards nothing
			return "", sent, fmt.Errorf("lease %s: %w", l.b.URL(Key), ErrNoConditionalWrites)
		}
		return "", sent, err
	}
	return etag, sent, nil
}

// takeOver replaces the existing lease once it has stayed unchanged for the taker's wait,
// measured on this machine's monotonic clock from when it was first seen. The expiry the
// holder wrote only decides whether to wait at all: a lease that looks alive by this
// machine's clock is refused at once, naming its holder.
func (l *Lease) takeOver(ctx context.Context, body []byte) (string, time.Time, error) {
	old, tag, found, err := l.b.GetSmall(ctx, Key)
	seen := l.opts.Clock.Now() // after the answer: the version existed by then
	if err != nil {
		return "", seen, err
	}
	if !found {
		return "", seen, errGone
	}
	holder := parseRecord(old)
	if l.opts.Now().Before(holder.Expires) {
		return "", seen, &HeldError{URL: l.b.URL(Key), Holder: holder}
	}
	wait := l.timing.TakerWait(holder)
	l.opts.Logger.Info("the bucket lease looks expired: watching it before taking it over (a live holder would renew it; no clock of another machine is trusted)",
		"lease", l.b.URL(Key), "holder", holder.String(), "wait", wait.String())
	if err := l.watch(ctx, tag, seen.Add(wait)); err != nil {
		return "", seen, err
	}
	sent := l.opts.Clock.Now()
	etag, err := l.b.PutConditional(ctx, Key, body, tag)
	if errors.Is(err, publish.ErrPrecondition) { // another runner took it over first
		return "", sent, &HeldError{URL: l.b.URL(Key), Holder: l.current(ctx, holder)}
	}
	if err == nil {
		l.opts.Logger.Warn("took over an expired bucket lease (its holder stopped without releasing it)",
			"lease", l.b.URL(Key), "previous_holder", holder.String(), "watched", wait.String())
	}
	return etag, sent, err
}

// watch looks at the lease every Confirm until until (this machine's clock): a new version
// means its holder lives (*HeldError), none means it was released (errGone).
func (l *Lease) watch(ctx context.Context, tag string, until time.Time) error {
	for {
		left := until.Sub(l.opts.Clock.Now())
		if left <= 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting to take over the expired bucket lease %s: %w", l.b.URL(Key), context.Cause(ctx))
		case <-l.opts.Clock.After(min(left, l.timing.Confirm)):
		}
		body, now, found, err := l.b.GetSmall(ctx, Key)
		switch {
		case err != nil:
			continue // the takeover's If-Match decides; a failed look only misses a renewal's news
		case !found:
			return errGone
		case now != tag:
			return &HeldError{URL: l.b.URL(Key), Holder: parseRecord(body)}
		}
	}
}

// current is the lease's record now, or fallback when it cannot be read.
func (l *Lease) current(ctx context.Context, fallback Record) Record {
	if body, _, found, err := l.b.GetSmall(ctx, Key); err == nil && found {
		return parseRecord(body)
	}
	return fallback
}

// parseRecord reads a lease record; an unreadable one is an anonymous, expired lease.
func parseRecord(body []byte) Record {
	var r Record
	if err := json.Unmarshal(body, &r); err != nil {
		return Record{Host: "an unreadable lease record"}
	}
	return r
}
