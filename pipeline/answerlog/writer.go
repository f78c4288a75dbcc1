package answerlog

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"sitewatch/pipeline/publish"
	"sitewatch/pipeline/warehouse"
)

// Fence is the lease's side of the log: Logged moves it (everything committed before cut is
// in the bucket), Renewals asks for a cut at each renewal. *lease.Held implements it.
type Fence interface {
	Logged(cut time.Time)
	Renewals() <-chan struct{}
}

// Options configure a Writer.
type Options struct {
	RunID string
	// Interval is publish.log_interval: the longest between two cuts while answers arrive.
	Interval time.Duration
	// Attempt bounds one write of a segment (the lease's margin): a write that hangs longer is
	// abandoned and sent again on a fresh connection.
	Attempt time.Duration
	// Flush commits the warehouse's pending batch, so a cut holds every answer the run
	// received before it (the batch window does not add to the bound).
	Flush  func(ctx context.Context) error
	Fence  Fence
	Logger *slog.Logger
	// Now is the clock of the cuts: the lease's monotonic clock (default time.Now).
	Now func() time.Time
}

// Writer writes what a run commits to the bucket's answer log.
type Writer struct {
	b    Bucket
	opts Options

	mu      sync.Mutex
	pending warehouse.LogRows // committed, not yet cut

	// Owned by the loop (and by Close after it): one write in flight.
	seq      int
	unacked  []cutSegment // the last cut's segments not yet acknowledged
	cutAt    time.Time    // when that cut was made
	failing  bool         // the last write failed (logged once per streak)
	acked    map[string]publish.SeenLog
	answers  int // answers acknowledged
	segments int

	stop chan struct{}
	done chan struct{}
}

type cutSegment struct {
	key, month string
	seq        int
	cut        time.Time
	body       []byte
	answers    int
}

// New returns the Writer of one run; Take is its warehouse's OnCommit callback, Run its loop.
func New(b Bucket, opts Options) *Writer {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Attempt <= 0 {
		opts.Attempt = 5 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Writer{b: b, opts: opts, acked: map[string]publish.SeenLog{}, stop: make(chan struct{}), done: make(chan struct{})}
}

// DefaultInterval is publish.log_interval's default: with the fence's margin it bounds what a
// takeover pays again (docs/sharing.md).
const DefaultInterval = 500 * time.Millisecond

// Take adds rows a commit wrote to what the next cut holds.
func (w *Writer) Take(rows warehouse.LogRows) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending.Append(rows)
}

// Run cuts and writes segments every Interval and at each lease renewal until Close (or
// ctx ends). Start it in its own goroutine.
//
// The cuts fall due on a fixed grid of Interval from the start; those that fell due while a
// write hung are made as one, at once, when it returns (as a ticker's one pending tick would).
// The grid is kept here rather than in a time.Ticker: whether a ticker still held a tick
// that fell due while nobody received varied from run to run under testing/synctest, so a
// seed of pipeline/fencesim did not replay.
func (w *Writer) Run(ctx context.Context) {
	defer close(w.done)
	var renewals <-chan struct{}
	if w.opts.Fence != nil {
		renewals = w.opts.Fence.Renewals()
	}
	due := time.Now().Add(w.opts.Interval)
	for {
		if !w.wait(ctx, due, renewals) || w.stopping(ctx) {
			return
		}
		if now := time.Now(); !now.Before(due) {
			due = due.Add(w.opts.Interval * (now.Sub(due)/w.opts.Interval + 1))
		}
		w.step(ctx)
	}
}

// wait returns true at due (at once if it passed) or at a renewal, false at Close or ctx's
// end. A renewal pending with the cut due is taken with it: one cut serves both (left
// pending it made a second cut right after, or not, as select picked between two ready
// channels).
func (w *Writer) wait(ctx context.Context, due time.Time, renewals <-chan struct{}) bool {
	if left := time.Until(due); left > 0 {
		t := time.NewTimer(left)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-w.stop:
			return false
		case <-t.C:
		case <-renewals:
		}
	}
	select {
	case <-renewals:
	default:
	}
	return true
}

// stopping says whether Close (or ctx's end) came with the tick the loop just took: select
// picks at random among ready cases, and a loop that took a tick after Close each time a
// write hung on a cut kept Close waiting an Attempt longer each time, past its bound
// (found by pipeline/fencesim: a seed did not replay).
func (w *Writer) stopping(ctx context.Context) bool {
	select {
	case <-w.stop:
		return true
	default:
		return ctx.Err() != nil
	}
}

// Close stops the loop and makes a last cut, written within bound: the answers committed
// since the last segment reach the bucket before the run's publish. It returns the
// segments acknowledged (for the sync state: their month's publish folds them).
func (w *Writer) Close(ctx context.Context, bound time.Duration) map[string]publish.SeenLog {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
	cctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	for cctx.Err() == nil {
		w.step(cctx)
		w.mu.Lock()
		empty := w.pending.Len() == 0
		w.mu.Unlock()
		if len(w.unacked) == 0 && empty {
			break
		}
		select { // a failed write: try again after an interval, on a fresh connection
		case <-cctx.Done():
		case <-time.After(w.opts.Interval):
		}
	}
	if len(w.unacked) > 0 {
		w.opts.Logger.Warn("answer log: the last answers could not be written to the bucket; the run's publish saves them (or the next publish on this machine)",
			"run", w.opts.RunID, "segments", len(w.unacked))
	}
	w.opts.Logger.Debug("answer log closed", "run", w.opts.RunID, "segments", w.segments, "answers", w.answers)
	return w.acked
}

// step writes the last cut's segments if they are not acknowledged yet, else makes a new cut
// and writes it; each acknowledged cut moves the fence.
func (w *Writer) step(ctx context.Context) {
	if len(w.unacked) == 0 && !w.cut(ctx) {
		return
	}
	for len(w.unacked) > 0 {
		if !w.write(ctx, w.unacked[0]) {
			return
		}
		w.unacked = w.unacked[1:]
	}
	if w.opts.Fence != nil {
		w.opts.Fence.Logged(w.cutAt)
	}
}

// cut takes what was committed before now into segments (one per month); it reports whether
// the cut holds anything to write. An empty cut moves the fence at once: nothing paid is
// only on this machine.
func (w *Writer) cut(ctx context.Context) bool {
	at := w.opts.Now()
	if w.opts.Flush != nil {
		if err := w.opts.Flush(ctx); err != nil {
			w.opts.Logger.Warn("answer log: could not commit the pending answers before a cut", "err", err)
			return false
		}
	}
	w.mu.Lock()
	rows := w.pending
	w.pending = warehouse.LogRows{}
	w.mu.Unlock()
	if rows.Len() == 0 {
		if w.opts.Fence != nil {
			w.opts.Fence.Logged(at)
		}
		return false
	}
	for _, m := range rows.Months() {
		mr := rows.Month(m)
		w.seq++
		s := segment{Version: segmentVersion, RunID: w.opts.RunID, Seq: w.seq, Month: m, Rows: mr}
		body, err := encode(s)
		if err != nil { // JSON of plain rows and an in-memory zstd: never fails
			w.opts.Logger.Error("answer log: could not encode a segment", "err", err)
			continue
		}
		w.unacked = append(w.unacked, cutSegment{key: publish.LogKey(m, w.opts.RunID, w.seq), month: m, seq: w.seq, cut: at, body: body, answers: len(mr.Raws)})
	}
	w.cutAt = at
	return len(w.unacked) > 0
}

// write sends one segment (If-None-Match: *), at most Attempt long; it reports whether the
// bucket holds it. A key that exists is an earlier attempt of this write that landed though
// its answer was lost: the key is this run's alone.
func (w *Writer) write(ctx context.Context, s cutSegment) bool {
	actx, cancel := context.WithTimeout(ctx, w.opts.Attempt)
	defer cancel()
	etag, err := w.b.PutConditional(actx, s.key, s.body, "")
	if errors.Is(err, publish.ErrPrecondition) {
		err = nil
	}
	if err != nil {
		if !w.failing {
			w.failing = true
			w.opts.Logger.Warn("answer log: could not write a segment to the bucket; retrying (paid calls pause if it lasts longer than publish.log_interval plus the lease's margin)",
				"segment", w.b.URL(s.key), "err", err)
		}
		return false
	}
	if w.failing {
		w.failing = false
		w.opts.Logger.Info("answer log: writing to the bucket again", "segment", w.b.URL(s.key))
	}
	w.acked[s.key] = publish.SeenLog{Month: s.month, ETag: strings.Trim(etag, `"`)}
	w.segments++
	w.answers += s.answers
	// Tests read from this line what a taker could pull: every answer committed before cut was
	// in the bucket from acked on (a segment cut before a network cut may be acknowledged only
	// after it heals, when a taker has pulled without it).
	w.opts.Logger.Debug("answer log: segment acknowledged", "segment", s.seq, "run", w.opts.RunID, "answers", s.answers,
		"cut", s.cut.UTC().Format(time.RFC3339Nano), "acked", time.Now().UTC().Format(time.RFC3339Nano), "key", s.key)
	return true
}
