package metrics

import (
	"fmt"
	"time"
)

// DefaultStallBound is how long a run may go without a new answer (or a step of its end:
// commit, export, publish) before /healthz calls it stuck, when Options.StallBound is 0. It
// exceeds the longest silence a healthy run has: api.max_rate_limit_wait (15m by default)
// of 429 waits plus a few timed-out attempts.
const DefaultStallBound = 20 * time.Minute

// phase is what the process does now: "" idle, "run" fetching or finishing a run, "publish"
// uploading a month. since is the last sign of progress in it; bound how long it may last
// without one.
type phase struct {
	name  string
	since time.Time
	bound time.Duration
}

// Phase records that the process enters the step name (e.g. "publish") now, at the
// Recorder's clock; it is stuck when no further sign of progress comes within bound (0:
// Options.StallBound). An empty name ends the step: the process idles.
func (r *Recorder) Phase(name string, bound time.Duration) {
	if r == nil {
		return
	}
	at := r.opts.Now()
	if bound <= 0 {
		bound = r.opts.StallBound
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.phase = phase{name: name, since: at, bound: bound}
	v := 0.0
	if name == "publish" {
		v = 1
	}
	r.publishing.Set(v)
}

// active restarts the current phase's clock (callers hold r.mu).
func (r *Recorder) active(at time.Time) {
	if r.phase.name != "" {
		r.phase.since = at
	}
}

// stuck says whether the current phase has shown no progress within its bound at now.
func (r *Recorder) stuck(now time.Time) (bool, string) {
	r.mu.Lock()
	p := r.phase
	r.mu.Unlock()
	if p.name == "" || now.Sub(p.since) <= p.bound {
		return false, ""
	}
	return true, fmt.Sprintf("unhealthy: the %s is stuck: no progress for %s since %s (bound %s); a hung network peer is the usual cause: "+
		"check the API, the bucket and the webhook, and stop the process with SIGTERM", p.name, now.Sub(p.since).Round(time.Second),
		p.since.UTC().Format(time.RFC3339), p.bound)
}

// MonthLoaded sets the loaded count of month, the month a run loaded, at its end: the series
// then shows the month the run loaded even when it learnt that month only from its answers.
func (r *Recorder) MonthLoaded(month string, loaded int) {
	if r == nil || month == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.moveTo(month)
	r.loaded.WithLabelValues(month).Set(float64(loaded))
}
