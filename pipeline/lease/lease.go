// Package lease keeps one writer per bucket across machines. A runner takes the lease before
// its first credit by creating one object with a conditional PUT (If-None-Match: *) that holds
// its owner, host, start and expiry; it renews it (If-Match on the ETag it wrote) every third
// of its TTL while it works and deletes it at the end. A second runner finds the object and
// fails fast naming the holder, having spent nothing. A lease past its expiry (its holder
// died) may be taken over, with If-Match on the expired record's ETag, and the takeover is
// logged. Every take checks that the service honours conditional writes.
package lease

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"sitewatch/pipeline/publish"
)

// Key is the lease object's key under the publish prefix (outside every table directory).
const Key = "_sitewatch/lease.json"

// Bucket is what the lease needs of the bucket; *publish.Publisher implements it.
type Bucket interface {
	GetSmall(ctx context.Context, rel string) (body []byte, etag string, found bool, err error)
	PutConditional(ctx context.Context, rel string, body []byte, ifMatch string) (string, error)
	DeleteConditional(ctx context.Context, rel, etag string) error
	URL(rel string) string
}

var _ Bucket = (*publish.Publisher)(nil)

// Record is the lease object's content.
type Record struct {
	Owner   string    `json:"owner"` // unique per take
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	Command string    `json:"command"`
	Started time.Time `json:"started"`
	Expires time.Time `json:"expires"`
}

func (r Record) String() string {
	return fmt.Sprintf("%s (pid %d) since %s, expires %s", r.Host, r.PID, r.Started.UTC().Format(time.RFC3339), r.Expires.UTC().Format(time.RFC3339))
}

// HeldError: another runner holds the lease.
type HeldError struct {
	URL    string
	Holder Record
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("another sitewatch holds the bucket lease %s: %s running %q; nothing was spent. Wait for it to finish (or for the lease to expire, if it died), then rerun",
		e.URL, e.Holder, e.Holder.Command)
}

// ErrNoConditionalWrites: the service ignored If-None-Match: * on PUT.
var ErrNoConditionalWrites = errors.New("the storage service does not honour conditional writes (If-None-Match: * on PUT), so it cannot keep two runners from paying for the same month: use a service that does (AWS S3, MinIO, R2, versitygw), or set publish.lease: off if only one runner ever uses this bucket")

// ErrLost: the lease was taken over or removed while held; the work it guarded stops.
var ErrLost = errors.New("the bucket lease was lost")

// Options tune a Lease.
type Options struct {
	TTL     time.Duration // default 10m
	Command string        // what the holder does ("run", "publish"), shown to others
	Logger  *slog.Logger
	Now     func() time.Time
}

// Lease takes and holds the bucket lease; it implements pipeline.Lease.
type Lease struct {
	b    Bucket
	opts Options
}

// New returns the lease of bucket b.
func New(b Bucket, opts Options) *Lease {
	if opts.TTL <= 0 {
		opts.TTL = 10 * time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Lease{b: b, opts: opts}
}

// Take takes the lease, or fails with a *HeldError naming the holder, ErrNoConditionalWrites,
// or a storage error. The returned context ends with ErrLost as its cause when a renewal
// finds the lease taken; release stops the renewals and deletes the lease.
func (l *Lease) Take(ctx context.Context) (context.Context, func(), error) {
	rec := l.record()
	etag, err := l.create(ctx, rec)
	if err != nil {
		return nil, nil, err
	}
	h := &held{l: l, rec: rec, etag: etag, stop: make(chan struct{}), done: make(chan struct{})}
	hctx, cancel := context.WithCancelCause(ctx)
	go h.renew(hctx, cancel)
	return hctx, func() { h.release(cancel) }, nil
}

func (l *Lease) record() Record {
	host, _ := os.Hostname()
	now := l.opts.Now().UTC()
	var rnd [8]byte
	_, _ = rand.Read(rnd[:]) // never fails (crypto/rand)
	return Record{Owner: fmt.Sprintf("%s-%d-%x", host, os.Getpid(), rnd), Host: host, PID: os.Getpid(), Command: l.opts.Command,
		Started: now, Expires: now.Add(l.opts.TTL)}
}

// create writes rec if no live lease exists, taking over an expired one, and checks that the
// service refused a second create.
func (l *Lease) create(ctx context.Context, rec Record) (string, error) {
	body, _ := json.Marshal(rec)
	etag, err := l.b.PutConditional(ctx, Key, body, "")
	if errors.Is(err, publish.ErrPrecondition) {
		etag, err = l.takeOver(ctx, body)
	}
	if err != nil {
		return "", err
	}
	// The same create again must be refused: a service that ignores the condition would let
	// a second runner overwrite this lease and pay for the same month.
	if _, err := l.b.PutConditional(ctx, Key, body, ""); !errors.Is(err, publish.ErrPrecondition) {
		if err == nil {
			_ = l.b.DeleteConditional(ctx, Key, etag) // best effort: a lease that guards nothing
			return "", fmt.Errorf("lease %s: %w", l.b.URL(Key), ErrNoConditionalWrites)
		}
		return "", err
	}
	return etag, nil
}

// takeOver replaces the existing lease if it expired.
func (l *Lease) takeOver(ctx context.Context, body []byte) (string, error) {
	old, oldTag, found, err := l.b.GetSmall(ctx, Key)
	if err != nil {
		return "", err
	}
	if !found { // released meanwhile: create again
		return l.b.PutConditional(ctx, Key, body, "")
	}
	var holder Record
	if err := json.Unmarshal(old, &holder); err == nil && l.opts.Now().Before(holder.Expires) {
		return "", &HeldError{URL: l.b.URL(Key), Holder: holder}
	}
	etag, err := l.b.PutConditional(ctx, Key, body, oldTag)
	if errors.Is(err, publish.ErrPrecondition) { // another runner took it over first
		return "", &HeldError{URL: l.b.URL(Key), Holder: holder}
	}
	if err == nil {
		l.opts.Logger.Warn("took over an expired bucket lease (its holder stopped without releasing it)",
			"lease", l.b.URL(Key), "previous_holder", holder.String())
	}
	return etag, err
}

// held is a lease taken.
type held struct {
	l    *Lease
	mu   sync.Mutex
	rec  Record
	etag string
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// renew extends the lease every third of its TTL until released; a renewal that finds the
// lease changed cancels the holder's context.
func (h *held) renew(ctx context.Context, cancel context.CancelCauseFunc) {
	defer close(h.done)
	t := time.NewTicker(h.l.opts.TTL / 3)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := h.extend(ctx); err != nil {
			if errors.Is(err, publish.ErrPrecondition) {
				h.l.opts.Logger.Error("the bucket lease was taken over while held: stopping", "lease", h.l.b.URL(Key))
				cancel(fmt.Errorf("%w: %s was replaced by another runner", ErrLost, h.l.b.URL(Key)))
				return
			}
			// A failed renewal is retried at the next tick; the lease lasts 3 ticks.
			h.l.opts.Logger.Warn("could not renew the bucket lease; retrying", "lease", h.l.b.URL(Key), "err", err)
		}
	}
}

func (h *held) extend(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	rec := h.rec
	rec.Expires = h.l.opts.Now().UTC().Add(h.l.opts.TTL)
	body, _ := json.Marshal(rec)
	etag, err := h.l.b.PutConditional(ctx, Key, body, h.etag)
	if err != nil {
		return err
	}
	h.rec, h.etag = rec, etag
	return nil
}

// release stops renewing and deletes the lease if it is still this holder's.
func (h *held) release(cancel context.CancelCauseFunc) {
	h.once.Do(func() {
		close(h.stop)
		<-h.done
		defer cancel(nil)
		ctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
		defer stop()
		h.mu.Lock()
		defer h.mu.Unlock()
		if err := h.l.b.DeleteConditional(ctx, Key, h.etag); err != nil && !errors.Is(err, publish.ErrPrecondition) {
			h.l.opts.Logger.Warn("could not release the bucket lease; it expires by itself", "lease", h.l.b.URL(Key), "expires", h.rec.Expires, "err", err)
		}
	})
}
