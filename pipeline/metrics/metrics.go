// Package metrics exposes what sitewatch runs do as Prometheus metrics: served by `schedule
// --listen` at /metrics (with /healthz), or written by `run --metrics-file` for
// node_exporter's textfile collector.
package metrics

import (
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Options tune a Recorder.
type Options struct {
	// HealthGrace is how long into a calendar month (UTC) /healthz tolerates that month not
	// being complete (config health_grace; default 72h).
	HealthGrace time.Duration
	// Now is the clock of /healthz (default time.Now).
	Now func() time.Time
	// Logger receives the "metrics listening on …" line of Serve (default: none).
	Logger *slog.Logger
	// StallBound is how long a run may show no progress before /healthz calls it stuck
	// (default DefaultStallBound).
	StallBound time.Duration
}

// DefaultHealthGrace is the HealthGrace of a zero Options.
const DefaultHealthGrace = 72 * time.Hour

// Outcomes are the runs.status values a finished run may have; sitewatch_runs_total exports
// each at 0 from the start. RunFinished takes any other value too.
var Outcomes = []string{"complete", "up_to_date", "stopped_credits", "unauthorized", "failed", "interrupted", "abandoned"}

// Progress is a run's cumulative counters so far; the Recorder adds the increase since the
// previous Progress of the same run to its counters.
type Progress struct {
	// Month is the month the run loads, once an answer told it ("" keeps the month of
	// RunStarted): a run started on an empty warehouse learns it from its first answer.
	Month        string
	Loaded       int           // domains of the month loaded so far (all runs of the month)
	Requests     map[int]int64 // HTTP answers by status code; 0 counts attempts that got no answer
	RateLimited  int64         // 429 answers
	Retries      int64         // attempts beyond the first of a request
	CreditsSpent int64         // credits charged
	CreditsLeft  int64         // last known wallet; -1 unknown
	// Sources are the credits of each credit source (api.sources; one for a single source).
	Sources []SourceCredits
}

// SourceCredits is one credit source's spend so far in the run and what it has left.
type SourceCredits struct {
	Name  string
	Spent int64 // credits charged this run
	Left  int64 // last known balance or quota; -1 unknown
}

// Recorder holds the metrics. Its methods are safe for concurrent use, and a nil *Recorder
// does nothing, so a run without metrics needs no checks.
type Recorder struct {
	opts    Options
	reg     *prometheus.Registry // sitewatch_… only: what the textfile gets
	runtime *prometheus.Registry // Go and process collectors, served at /metrics only

	runs                   *prometheus.CounterVec
	requests               *prometheus.CounterVec
	rateLimited, retries   prometheus.Counter
	creditsSpent           prometheus.Counter
	creditsLeft            prometheus.Gauge
	sourceSpent            *prometheus.CounterVec
	sourceLeft             *prometheus.GaugeVec
	loaded, total          *prometheus.GaugeVec
	inProgress, publishing prometheus.Gauge
	lastStart, lastEnd     prometheus.Gauge
	lastDuration           prometheus.Gauge
	duration               prometheus.Histogram
	lastComplete           prometheus.Gauge
	lastCompleteInfo       *prometheus.GaugeVec
	lastCompleteFinishedAt prometheus.Gauge

	mu        sync.Mutex
	month     string    // the month of the current (or last) run
	started   time.Time // start of the current run; zero when none runs
	prev      Progress  // the last Progress of the current run
	completed string    // the latest complete month, "" none known
	phase     phase     // what the process does now, for the stall rule of /healthz
	domains   int       // watchlist domains of the current (or last) run

	attention      attentionMetrics // attention.go
	attentionMonth string           // the month of the needs-attention series, "" none
}

// New returns a Recorder with every metric registered at its zero value.
func New(opts Options) *Recorder {
	if opts.HealthGrace <= 0 {
		opts.HealthGrace = DefaultHealthGrace
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.StallBound <= 0 {
		opts.StallBound = DefaultStallBound
	}
	r := &Recorder{opts: opts, reg: prometheus.NewRegistry(), runtime: prometheus.NewRegistry()}
	r.runtime.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	r.register()
	r.runtime.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "sitewatch_healthy",
		Help: "1 when /healthz answers 200 (the current month is complete, or within its grace period), else 0.",
	}, func() float64 {
		if ok, _ := r.Healthy(); ok {
			return 1
		}
		return 0
	}))
	return r
}

func (r *Recorder) register() {
	f := promFactory{r.reg}
	r.runs = f.counterVec("sitewatch_runs_total", "Runs finished, by outcome (the status recorded in the runs table).", "outcome")
	for _, o := range Outcomes {
		r.runs.WithLabelValues(o) // exported at 0, so increase() sees the first run of each outcome
	}
	r.requests = f.counterVec("sitewatch_requests_total", "HTTP requests to the API, by status code of the answer (code=\"0\": no answer).", "code")
	r.rateLimited = f.counter("sitewatch_rate_limited_total", "429 (rate limited) answers from the API.")
	r.retries = f.counter("sitewatch_retries_total", "Request attempts beyond the first (retries after 429, 5xx or network errors).")
	r.creditsSpent = f.counter("sitewatch_credits_spent_total", "API credits charged.")
	r.creditsLeft = f.gauge("sitewatch_credits_remaining", "API credits left in the wallet, as last reported by the API.")
	r.sourceSpent = f.counterVec("sitewatch_source_credits_spent_total", "API credits charged, by the credit source that paid (api.sources name; the mode for a single source).", "source")
	r.sourceLeft = f.gaugeVec("sitewatch_source_credits_remaining", "Credits (or marketplace quota) left, by credit source, as last reported by the API.", "source")
	r.loaded = f.gaugeVec("sitewatch_domains_loaded", "Watchlist domains loaded in the month of the current (or last) run.", "month")
	r.total = f.gaugeVec("sitewatch_domains_total", "Watchlist domains of the current (or last) run.", "month")
	r.inProgress = f.gauge("sitewatch_run_in_progress", "1 while a run is in progress.")
	r.publishing = f.gauge("sitewatch_publish_in_progress", "1 while a run uploads its month to publish.url.")
	r.lastStart = f.gauge("sitewatch_last_run_start_timestamp_seconds", "Unix time the last run started.")
	r.lastEnd = f.gauge("sitewatch_last_run_end_timestamp_seconds", "Unix time the last run ended.")
	r.lastDuration = f.gauge("sitewatch_last_run_duration_seconds", "Duration of the last finished run.")
	r.duration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "sitewatch_run_duration_seconds",
		Help:    "Duration of finished runs.",
		Buckets: []float64{1, 10, 60, 300, 900, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 24 * 3600},
	})
	r.reg.MustRegister(r.duration)
	r.lastComplete = f.gauge("sitewatch_last_complete_month_timestamp_seconds", "First day (00:00 UTC) of the latest complete month, as a Unix time; 0 when none is known.")
	r.lastCompleteInfo = f.gaugeVec("sitewatch_last_complete_month_info", "1, labelled with the latest complete month (YYYY-MM).", "month")
	r.attention = f.attention()
	r.lastCompleteFinishedAt = f.gauge("sitewatch_last_complete_month_completed_timestamp_seconds", "Unix time the latest complete month was found complete.")
}

type promFactory struct{ reg *prometheus.Registry }

func (f promFactory) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	f.reg.MustRegister(c)
	return c
}

func (f promFactory) counterVec(name, help, label string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{label})
	f.reg.MustRegister(c)
	return c
}

func (f promFactory) gauge(name, help string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	f.reg.MustRegister(g)
	return g
}

func (f promFactory) gaugeVec(name, help, label string) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{label})
	f.reg.MustRegister(g)
	return g
}

// RunStarted records the start of a run of month (YYYY-MM) over total watchlist domains.
func (r *Recorder) RunStarted(month string, total int, at time.Time) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if month != r.month { // one month's series at a time: the old month's would never change again
		r.loaded.Reset()
		r.total.Reset()
	}
	r.month, r.started, r.prev, r.domains = month, at, Progress{}, total
	r.total.WithLabelValues(month).Set(float64(total))
	r.loaded.WithLabelValues(month)
	r.inProgress.Set(1)
	r.lastStart.Set(unix(at))
	r.phase = phase{name: "run", since: r.opts.Now(), bound: r.opts.StallBound} // the clock of Healthy
}

// Progress adds what the current run did since its previous Progress. Counters never go
// down: a value below the previous one (a new run without RunStarted) counts from zero.
func (r *Recorder) Progress(p Progress) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for code, n := range p.Requests {
		r.requests.WithLabelValues(strconv.Itoa(code)).Add(delta(n, r.prev.Requests[code]))
	}
	r.rateLimited.Add(delta(p.RateLimited, r.prev.RateLimited))
	r.retries.Add(delta(p.Retries, r.prev.Retries))
	r.creditsSpent.Add(delta(p.CreditsSpent, r.prev.CreditsSpent))
	if p.CreditsLeft >= 0 {
		r.creditsLeft.Set(float64(p.CreditsLeft))
	}
	r.moveTo(p.Month)
	r.sourcesLocked(p.Sources)
	if r.month != "" {
		r.loaded.WithLabelValues(r.month).Set(float64(p.Loaded))
	}
	if moved(p, r.prev) {
		r.active(r.opts.Now())
	}
	r.prev = p
	r.prev.Requests = make(map[int]int64, len(p.Requests)) // the caller may reuse its map
	for code, n := range p.Requests {
		r.prev.Requests[code] = n
	}
}

// moveTo switches the month series to month when the run learnt another month than the one
// it started with (callers hold r.mu).
func (r *Recorder) moveTo(month string) {
	if month == "" || month == r.month {
		return
	}
	r.loaded.Reset()
	r.total.Reset()
	r.month = month
	r.total.WithLabelValues(month).Set(float64(r.domains))
}

// moved says whether p shows progress over prev: a new answer or a newly loaded domain.
func moved(p, prev Progress) bool {
	if p.Loaded != prev.Loaded || p.CreditsSpent != prev.CreditsSpent || p.Retries != prev.Retries {
		return true
	}
	var a, b int64
	for _, n := range p.Requests {
		a += n
	}
	for _, n := range prev.Requests {
		b += n
	}
	return a != b
}

func delta(now, before int64) float64 {
	if now < before {
		return float64(now)
	}
	return float64(now - before)
}

// RunFinished records the end of the current run with its outcome (a runs.status value:
// complete, up_to_date, stopped_credits, failed, interrupted, …).
func (r *Recorder) RunFinished(outcome string, at time.Time) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs.WithLabelValues(outcome).Inc()
	r.inProgress.Set(0)
	r.lastEnd.Set(unix(at))
	if !r.started.IsZero() {
		d := at.Sub(r.started).Seconds()
		r.duration.Observe(d)
		r.lastDuration.Set(d)
	}
	r.started = time.Time{}
	r.phase = phase{}
}

// MonthComplete records that month (YYYY-MM) is complete in the warehouse, found so at `at`
// (a run completed it, or the daemon found it so on start). An older month than the latest
// known is ignored. It returns an error for a month that is not YYYY-MM.
func (r *Recorder) MonthComplete(month string, at time.Time) error {
	if r == nil {
		return nil
	}
	first, err := time.Parse("2006-01", month)
	if err != nil {
		return fmt.Errorf("metrics: complete month %q is not YYYY-MM", month)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if month < r.completed {
		return nil
	}
	if month != r.completed {
		r.lastCompleteInfo.Reset()
		r.lastCompleteFinishedAt.Set(unix(at))
	}
	r.completed = month
	r.lastComplete.Set(unix(first))
	r.lastCompleteInfo.WithLabelValues(month).Set(1)
	return nil
}

func unix(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// sourcesLocked adds each source's spend since the previous Progress and sets what it has left.
func (r *Recorder) sourcesLocked(now []SourceCredits) {
	before := map[string]int64{}
	for _, s := range r.prev.Sources {
		before[s.Name] = s.Spent
	}
	for _, s := range now {
		r.sourceSpent.WithLabelValues(s.Name).Add(delta(s.Spent, before[s.Name]))
		if s.Left >= 0 {
			r.sourceLeft.WithLabelValues(s.Name).Set(float64(s.Left))
		}
	}
}
