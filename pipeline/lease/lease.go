// Package lease keeps one payer per bucket across machines, without trusting any machine's
// wall clock. A runner takes the lease before its first credit by creating one object with a
// conditional PUT (If-None-Match: *) that names it; while it holds the lease it confirms it
// every few seconds (a GET that must show its own version) and renews it (If-Match on the
// ETag it wrote) every third of its TTL; at the end it deletes it.
//
// The lease is a fence, not a promise: the holder admits a paid call only while its last
// confirmation was sent less than a margin ago and its last renewal less than TTL−margin
// ago, measured on its own monotonic clock (Timing). A runner that finds the lease expired
// does not compare the expiry written in it with its own clock to take it: it watches the
// lease's version, unchanged, for TTL+margin+api.timeout of its own monotonic clock, and
// then takes it over with If-Match on that version. A lease deleted or replaced while held
// stops its holder within seconds (its next confirmation), and is logged as a takeover.
// Every take checks that the service honours conditional writes.
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

// Record is the lease object's content. Started and Expires are the holder's wall clock:
// shown to people, and a hint whether to wait for a lease at all; no decision that keeps two
// payers apart reads them.
type Record struct {
	Owner   string    `json:"owner"` // unique per take
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	Command string    `json:"command"`
	Started time.Time `json:"started"`
	Expires time.Time `json:"expires"`
	// TTLMillis and InFlightMillis are the holder's lease_ttl and api.timeout: a taker waits
	// for the longer of its own and these.
	TTLMillis      int64 `json:"ttl_ms,omitempty"`
	InFlightMillis int64 `json:"in_flight_ms,omitempty"`
}

func (r Record) ttl() time.Duration      { return time.Duration(r.TTLMillis) * time.Millisecond }
func (r Record) inFlight() time.Duration { return time.Duration(r.InFlightMillis) * time.Millisecond }

func (r Record) String() string {
	return fmt.Sprintf("%s (pid %d) since %s, expires %s by its clock", r.Host, r.PID, r.Started.UTC().Format(time.RFC3339), r.Expires.UTC().Format(time.RFC3339))
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

// ErrLost: the lease was taken over, deleted, or could not be confirmed in time while held;
// the work it guarded stops.
var ErrLost = errors.New("the bucket lease was lost")

// ErrReleased: the fence was consulted after the lease was given back.
var ErrReleased = errors.New("the bucket lease was released")

// Clock is the monotonic clock the fence reads; tests move one by hand (leasetest.Clock).
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Options tune a Lease.
type Options struct {
	TTL time.Duration // default 10m
	// InFlight is the longest a call admitted before the fence closed may last: api.timeout
	// (default 30s). A taker waits it out after the TTL.
	InFlight time.Duration
	Command  string // what the holder does ("run", "publish"), shown to others
	Logger   *slog.Logger
	// Now is the wall clock written into the record (default time.Now); Clock is the
	// monotonic clock of every decision (default the real one).
	Now   func() time.Time
	Clock Clock
}

// Lease takes and holds the bucket lease.
type Lease struct {
	b      Bucket
	opts   Options
	timing Timing
}

// New returns the lease of bucket b.
func New(b Bucket, opts Options) *Lease {
	if opts.TTL <= 0 {
		opts.TTL = 10 * time.Minute
	}
	if opts.InFlight <= 0 {
		opts.InFlight = 30 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Clock == nil {
		opts.Clock = realClock{}
	}
	return &Lease{b: b, opts: opts, timing: TimingFor(opts.TTL, opts.InFlight)}
}

// Timing returns the fence's timing of this lease.
func (l *Lease) Timing() Timing { return l.timing }

// Take is Hold for callers that need only the held context: it ends with ErrLost as its
// cause when the lease is lost; release gives the lease back.
func (l *Lease) Take(ctx context.Context) (context.Context, func(), error) {
	h, err := l.Hold(ctx)
	if err != nil {
		return nil, nil, err
	}
	return h.Context(), h.Release, nil
}

// Hold takes the lease, or fails with a *HeldError naming the holder, ErrNoConditionalWrites,
// ctx's error (a signal while it waited to take an expired lease over) or a storage error.
func (l *Lease) Hold(ctx context.Context) (*Held, error) {
	rec := l.record()
	body, _ := json.Marshal(rec)
	etag, sent, err := l.create(ctx, body)
	if err != nil {
		return nil, err
	}
	return l.hold(ctx, rec, etag, sent), nil
}

func (l *Lease) record() Record {
	host, _ := os.Hostname()
	now := l.opts.Now().UTC()
	var rnd [8]byte
	_, _ = rand.Read(rnd[:]) // never fails (crypto/rand)
	return Record{Owner: fmt.Sprintf("%s-%d-%x", host, os.Getpid(), rnd), Host: host, PID: os.Getpid(), Command: l.opts.Command,
		Started: now, Expires: now.Add(l.opts.TTL), TTLMillis: l.opts.TTL.Milliseconds(), InFlightMillis: l.opts.InFlight.Milliseconds()}
}
