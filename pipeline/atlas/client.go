// Package atlas is the client of the Site Intelligence API ("atlas"), direct gateway or
// marketplace listing.
//
// It paces calls with a token bucket at min(configured rate, the server's
// X-RateLimit-Limit), keeps enough calls in flight to use the whole limit, retries what
// is worth retrying (429 after Retry-After; 5xx, time-outs and resets with jittered
// exponential backoff from cenkalti/backoff, bounded by attempts and by elapsed time; a charged broken 200 body at most once per call, within a per-run
// waste budget), decodes every 200 body once into its wire type, and never starts a call
// that could break the credit reserve (min_credits) or the per-run cap
// (max_credits_per_run). Every wait (429 pause, backoff, rate limiter, reserve) wakes at
// once on Stop. A Client is meant for one run: once it has stopped (402, 401, reserve,
// cap, waste or wait budget, misconfiguration, unreachable, legacy body) every later call
// returns the same stop reason without calling the API. docs/readme/atlas.md lists every
// bound.
package atlas

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"golang.org/x/time/rate"

	"sitewatch/pipeline/model"
	"sitewatch/pipeline/secret"
)

// Mode selects how the API is reached.
type Mode string

// The two ways to reach the API.
const (
	// ModeDirect calls the gateway at BaseURL + "/atlas/<operation>" with the API key.
	ModeDirect Mode = "direct"
	// ModeMarketplace calls a marketplace listing at BaseURL + "/<operation>" with the
	// x-marketplace-host and x-marketplace-key headers (and the API key as Bearer, if set).
	ModeMarketplace Mode = "marketplace"
)

// Defaults used when the Config field is zero, and the floors the client enforces.
const (
	DefaultRateLimit      = 3
	DefaultTimeout        = 30 * time.Second
	DefaultMaxAttempts    = 6
	DefaultMaxRateLimited = 20
	DefaultMaxRetryAfter  = 2 * time.Minute
	DefaultRetryInitial   = 500 * time.Millisecond
	DefaultRetryMax       = 30 * time.Second
	// DefaultRetryMaxElapsed bounds the time one call spends retrying transient failures,
	// counted from its first failure; the attempt bound (DefaultMaxAttempts) usually ends it first.
	DefaultRetryMaxElapsed = 2 * time.Minute
	// retryMultiplier and retryJitter shape the backoff: each interval doubles, drawn
	// uniformly within ±50 % of its nominal value.
	retryMultiplier         = 2
	retryJitter             = 0.5
	DefaultMaxWastedCredits = 5
	DefaultMaxRateLimitWait = 15 * time.Minute
	// DefaultMaxBodyBytes caps one body: API bodies are a few KB, country metadata ~30 KB.
	DefaultMaxBodyBytes = 16 << 20
	// DefaultMaxInflightBytes caps the bodies held by all calls in flight together.
	DefaultMaxInflightBytes = 64 << 20
	servicePrefix           = "/atlas"
)

// Config configures a Client. Only BaseURL and the keys are required.
type Config struct {
	BaseURL         string // gateway base; direct mode adds /atlas
	Mode            Mode   // "" means ModeDirect
	APIKey          string // Bearer (direct: required; marketplace: optional, required by some listings)
	UseXAPIKey      bool   // send X-API-Key instead of Authorization: Bearer (direct)
	MarketplaceHost string // value of x-marketplace-host (marketplace)
	MarketplaceKey  string // value of x-marketplace-key (marketplace)
	// AllowInsecureHTTP lets a plain http:// BaseURL name a host other than this machine.
	AllowInsecureHTTP bool
	// RateLimit is the requests/second ceiling (0 => DefaultRateLimit); the server's
	// X-RateLimit-Limit can only lower it.
	RateLimit float64
	// MinCredits: never start a call that would take remaining credits (or the remaining
	// marketplace quota) below this. With a reserve, a charged answer without a readable
	// balance stops the client (model.ErrBalanceUnknown).
	MinCredits int64
	// MaxCreditsPerRun: never start a call that could spend past it; 0 = no cap.
	MaxCreditsPerRun int64
	// RunBudget, when set, is a max_credits_per_run shared with other clients (one per
	// credit source): it caps their total, and MaxCreditsPerRun is then ignored.
	RunBudget *RunBudget
	// MaxWastedCredits bounds the refetches of calls whose answer may have been charged but
	// was unusable (a broken 200 body, or no answer after the request was sent): each call
	// is refetched at most once, and the run at most this many times (0 =>
	// DefaultMaxWastedCredits); then the client stops with model.ErrWasteBudget.
	MaxWastedCredits int64
	// MaxRateLimitWait bounds the total time the run stays paused by 429 answers (0 =>
	// DefaultMaxRateLimitWait); a pause that would pass it stops the client with
	// model.ErrRateLimitWait.
	MaxRateLimitWait time.Duration
	Timeout          time.Duration // per HTTP attempt; 0 => DefaultTimeout
	// Concurrency is the most requests in flight; 0 => ceil(3*RateLimit)+1, enough to keep
	// the bucket full when calls take up to about 3 s.
	Concurrency int
	MaxAttempts int // HTTP attempts per request, 429s not counted; 0 => DefaultMaxAttempts
	// MaxRateLimited bounds the 429 answers one request takes before it gives up
	// (model.ErrRateLimited); 0 => DefaultMaxRateLimited. 429s are free and every call waits out
	// their Retry-After together, so the bound is looser than MaxAttempts.
	MaxRateLimited int
	MaxRetryAfter  time.Duration // cap on an honoured Retry-After (429 and 503); 0 => DefaultMaxRetryAfter
	// RetryInitial and RetryMax shape the exponential backoff of 5xx, time-outs, resets and
	// broken bodies (0 => DefaultRetryInitial, DefaultRetryMax). Jitter is ±50%.
	RetryInitial time.Duration
	RetryMax     time.Duration
	// RetryMaxElapsed bounds the time one call keeps retrying transient failures, from its
	// first failure (0 => DefaultRetryMaxElapsed); past it the call gives up with its last error.
	RetryMaxElapsed time.Duration
	// MaxBodyBytes caps one body (0 => DefaultMaxBodyBytes); a bigger 200 body is an
	// model.ErrBodyTooLarge failure. MaxInflightBytes caps the bodies of all calls in flight
	// together (0 => DefaultMaxInflightBytes); a call takes the room its body may need
	// before reading it (Content-Length, else MaxBodyBytes) and gives back the rest after.
	MaxBodyBytes     int64
	MaxInflightBytes int64
	// HTTPClient carries the requests (nil => a tuned default). Whatever is passed, the
	// client follows no redirect: a redirect would forward the key headers.
	HTTPClient *http.Client
	Clock      Clock        // nil => the real clock
	Logger     *slog.Logger // nil => discard; every key is removed before it is called
}

// String describes c without its keys, so printing a Config never leaks them.
func (c Config) String() string {
	return fmt.Sprintf("atlas.Config{BaseURL:%q Mode:%q APIKey:%s MarketplaceHost:%q MarketplaceKey:%s RateLimit:%g MinCredits:%d MaxCreditsPerRun:%d MaxWastedCredits:%d MaxRateLimitWait:%s Timeout:%s Concurrency:%d AllowInsecureHTTP:%t}",
		secret.RedactURL(c.BaseURL), c.Mode, mask(c.APIKey), c.MarketplaceHost, mask(c.MarketplaceKey),
		c.RateLimit, c.MinCredits, c.MaxCreditsPerRun, c.MaxWastedCredits, c.MaxRateLimitWait, c.Timeout,
		c.Concurrency, c.AllowInsecureHTTP)
}

// GoString is String, so %#v does not leak the keys either.
func (c Config) GoString() string { return c.String() }

// LogValue keeps the keys out of slog output.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

func mask(key string) string {
	if key == "" {
		return `""`
	}
	return redacted
}

// MaxCredits is the most credits a run of calls API calls can spend under cfg, assuming
// the specified cost of 1 credit per charged answer: one charged answer per call, plus the
// refetches the waste budget allows, within max_credits_per_run. `run --dry-run` prints it
// as its "at most".
func MaxCredits(calls int, cfg Config) int {
	if calls <= 0 {
		return 0
	}
	waste := cfg.MaxWastedCredits
	if waste <= 0 {
		waste = DefaultMaxWastedCredits
	}
	most := int64(calls) + min(waste, int64(calls))
	if cfg.MaxCreditsPerRun > 0 {
		most = min(most, cfg.MaxCreditsPerRun)
	}
	return int(most)
}

// Client calls the API. Its methods are safe for concurrent use.
type Client struct {
	cfg         Config
	base        string // scheme://host[/path] without trailing slash, plus /atlas in direct mode
	baseURL     string // api.base_url, redacted, for messages
	hc          *http.Client
	log         *slog.Logger
	clock       Clock
	limiter     *rate.Limiter
	turn        chan struct{} // one goroutine at a time waits on the limiter
	secrets     *secrets
	concurrency int
	stopCh      chan struct{}
	fence       func(context.Context) error // fence.go: the bucket lease's admission, or nil
	abortCtx    context.Context             // abort.go: ends SignalGrace after a signal's stop
	abort       context.CancelFunc

	// onSend, if set, is called (outside locks) just before each HTTP attempt; benchmarks use it.
	onSend func(time.Time)

	mu           sync.Mutex
	changed      chan struct{} // closed and replaced whenever admission or byte budget state changes
	inflight     int64         // attempts started and not yet answered (credit reservations)
	seenResponse bool          // an HTTP answer has arrived
	blind        bool          // a charged answer came without a readable balance or quota
	unitCost     int64         // credits one call may cost: the highest X-Gateway-Credit-Cost seen, at least 1
	remaining    int64         // -1 unknown
	quota        int64         // -1 unknown
	limit        float64       // current bucket rate before slowing: min(config, server header)
	slow         float64       // fraction of limit the bucket runs at, below 1 after 429s
	limitFrom    time.Time     // send time of the attempt whose header set limit
	pausedUntil  time.Time     // no attempt starts before this (after a 429)
	heldBytes    int64         // body bytes held by calls in flight
	peakHeld     int64         // the most heldBytes has been (tests check the budget with it)
	stopErr      error
	stats        model.Stats
}

// New checks cfg and returns a Client. It returns a *ConfigError (naming the setting to
// fix, never a key) when the base URL, mode, keys or bounds are unusable; a key with
// surrounding whitespace or control characters wraps ErrBadKey.
func New(cfg Config) (*Client, error) {
	base, err := checkConfig(&cfg)
	if err != nil {
		return nil, err
	}
	applyDefaults(&cfg)
	conc := cfg.Concurrency
	if conc <= 0 {
		conc = int(math.Ceil(cfg.RateLimit*3)) + 1
	}
	sec := newSecrets(cfg.APIKey, cfg.MarketplaceKey)
	log := slog.New(slog.DiscardHandler)
	if cfg.Logger != nil {
		log = secret.RedactingLogger(cfg.Logger, sec.redact)
	}
	c := &Client{
		cfg:         cfg,
		base:        base,
		baseURL:     secret.RedactURL(cfg.BaseURL),
		hc:          noRedirects(cfg.HTTPClient, conc),
		log:         log,
		clock:       cfg.Clock,
		limiter:     rate.NewLimiter(bucketRate(cfg.RateLimit), 1),
		turn:        make(chan struct{}, 1),
		secrets:     sec,
		concurrency: conc,
		stopCh:      make(chan struct{}),
		changed:     make(chan struct{}),
		unitCost:    1,
		remaining:   -1,
		quota:       -1,
		limit:       cfg.RateLimit,
		slow:        1,
	}
	c.stats.CreditsRemaining, c.stats.QuotaRemaining = -1, -1
	c.stats.ByStatus = map[int]int64{}
	c.abortCtx, c.abort = context.WithCancel(context.Background())
	return c, nil
}

// checkConfig validates what New cannot default and returns the request base.
func checkConfig(cfg *Config) (string, error) {
	if cfg.Mode == "" {
		cfg.Mode = ModeDirect
	}
	if err := secret.CheckBaseURL(cfg.BaseURL, cfg.AllowInsecureHTTP); err != nil {
		return "", &ConfigError{Setting: "api.base_url", Err: err}
	}
	u, _ := url.Parse(strings.TrimSpace(cfg.BaseURL)) // secret.CheckBaseURL parsed it
	base := strings.TrimRight(u.Scheme+"://"+u.Host+u.EscapedPath(), "/")
	if err := checkKey("ATLAS_API_KEY", cfg.APIKey); err != nil {
		return "", err
	}
	if err := checkKey("ATLAS_MARKETPLACE_KEY", cfg.MarketplaceKey); err != nil {
		return "", err
	}
	switch cfg.Mode {
	case ModeDirect:
		if cfg.APIKey == "" {
			return "", &ConfigError{Setting: "ATLAS_API_KEY", Err: fmt.Errorf("not set: direct mode sends the API key as Bearer or X-API-Key")}
		}
		base += servicePrefix
	case ModeMarketplace:
		if cfg.MarketplaceHost == "" {
			return "", &ConfigError{Setting: "api.marketplace_host", Err: fmt.Errorf("required in marketplace mode (the x-marketplace-host value)")}
		}
		if cfg.MarketplaceKey == "" {
			return "", &ConfigError{Setting: "ATLAS_MARKETPLACE_KEY", Err: fmt.Errorf("not set: marketplace mode needs the listing key")}
		}
	default:
		return "", &ConfigError{Setting: "api.mode", Err: fmt.Errorf("%q is not direct or marketplace", cfg.Mode)}
	}
	switch {
	case cfg.RateLimit < 0 || math.IsNaN(cfg.RateLimit) || math.IsInf(cfg.RateLimit, 0):
		return "", &ConfigError{Setting: "api.rate_limit", Err: fmt.Errorf("%g must be a positive number of requests per second", cfg.RateLimit)}
	case cfg.MinCredits < 0 || cfg.MaxCreditsPerRun < 0 || cfg.MaxWastedCredits < 0:
		return "", &ConfigError{Setting: "api.min_credits, api.max_credits_per_run and api.max_wasted_credits", Err: fmt.Errorf("must not be negative")}
	case cfg.MaxRateLimitWait < 0 || cfg.MaxBodyBytes < 0 || cfg.MaxInflightBytes < 0:
		return "", &ConfigError{Setting: "api.max_rate_limit_wait", Err: fmt.Errorf("must not be negative")}
	}
	return base, nil
}

func applyDefaults(cfg *Config) {
	setDefault := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	if cfg.RateLimit == 0 {
		cfg.RateLimit = DefaultRateLimit
	}
	if cfg.MaxRateLimited <= 0 {
		cfg.MaxRateLimited = DefaultMaxRateLimited
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.MaxWastedCredits == 0 {
		cfg.MaxWastedCredits = DefaultMaxWastedCredits
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxInflightBytes == 0 {
		cfg.MaxInflightBytes = DefaultMaxInflightBytes
	}
	cfg.MaxInflightBytes = max(cfg.MaxInflightBytes, cfg.MaxBodyBytes)
	setDefault(&cfg.Timeout, DefaultTimeout)
	setDefault(&cfg.MaxRetryAfter, DefaultMaxRetryAfter)
	setDefault(&cfg.RetryInitial, DefaultRetryInitial)
	setDefault(&cfg.RetryMax, DefaultRetryMax)
	setDefault(&cfg.RetryMaxElapsed, DefaultRetryMaxElapsed)
	setDefault(&cfg.MaxRateLimitWait, DefaultMaxRateLimitWait)
	if cfg.Clock == nil {
		cfg.Clock = RealClock{}
	}
}

// noRedirects returns an http.Client that follows no redirect: hc's copy if given, else a
// tuned default. A redirect would forward the key headers to wherever it points; the API
// never redirects, so a redirect means a wrong base URL and is reported as such.
func noRedirects(hc *http.Client, conc int) *http.Client {
	var out http.Client
	if hc != nil {
		out = *hc
	} else {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConns = conc + 8
		tr.MaxIdleConnsPerHost = conc + 8
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		out.Transport = tr
	}
	out.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &out
}

// Concurrency is the most requests FetchAll keeps in flight.
func (c *Client) Concurrency() int { return c.concurrency }

// Stats returns a snapshot of the counters.
func (c *Client) Stats() model.Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.ByStatus = make(map[int]int64, len(c.stats.ByStatus))
	for k, v := range c.stats.ByStatus {
		s.ByStatus[k] = v
	}
	s.CreditsRemaining, s.QuotaRemaining, s.RateLimit = c.remaining, c.quota, c.limit
	s.PacedRate = c.limit * c.slow
	s.InFlight = c.inflight
	return s
}

// Err returns the reason the client stopped, or nil while it may still start requests.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopErr
}

// FetchAll fetches reqs with up to Concurrency in flight, paced by the token bucket,
// calling handle for every started request as it finishes (never concurrently; in-flight
// calls finish and are handed over even after a stop). It returns nil when every request
// was attempted, or the stop reason (model.IsStop: model.ErrOutOfCredits, model.ErrCreditReserve,
// model.ErrRunBudget, model.ErrUnauthorized, *UnreachableError, ...) or ctx.Err(). Requests never
// started are not passed to handle. Per-request failures are in Result.Err only. The
// bytes of a Result's body count against MaxInflightBytes until handle returns.
func (c *Client) FetchAll(ctx context.Context, reqs []model.Request, handle func(model.Result)) error {
	if err := c.Err(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, r := range reqs {
		if _, err := c.requestURL(r); err != nil {
			return err
		}
	}
	i := 0
	next := func() (model.Request, bool) {
		if i == len(reqs) {
			return model.Request{}, false
		}
		i++
		return reqs[i-1], true
	}
	return c.fetchFrom(ctx, next, min(c.concurrency, len(reqs)), handle)
}

// FetchFrom is FetchAll over the requests next hands out, one at a time, until it reports
// none left (next is called from one goroutine; it may block). Each request must be valid
// (its URL builds). It lets several clients share one queue of calls.
func (c *Client) FetchFrom(ctx context.Context, next func() (model.Request, bool), handle func(model.Result)) error {
	if err := c.Err(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.fetchFrom(ctx, next, c.concurrency, handle)
}

func (c *Client) fetchFrom(ctx context.Context, next func() (model.Request, bool), workers int, handle func(model.Result)) error {
	type held struct {
		res   model.Result
		bytes int64
	}
	jobs := make(chan model.Request)
	results := make(chan held)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range jobs {
				res, n := c.fetch(ctx, r)
				if res.Attempts > 0 {
					results <- held{res, n}
				} else {
					c.releaseBytes(n)
				}
			}
		}()
	}
	go c.feed(ctx, next, jobs)
	go func() {
		wg.Wait()
		close(results)
	}()
	for h := range results {
		handle(h.res)
		c.releaseBytes(h.bytes)
	}
	if err := c.Err(); err != nil {
		return err
	}
	return ctx.Err()
}

// feed hands the requests of next to the workers until none is left, the client stops or
// ctx ends.
func (c *Client) feed(ctx context.Context, next func() (model.Request, bool), jobs chan<- model.Request) {
	defer close(jobs)
	for {
		select {
		case <-c.stopCh:
			return
		case <-ctx.Done():
			return
		default:
		}
		r, ok := next()
		if !ok {
			return
		}
		select {
		case jobs <- r:
		case <-c.stopCh:
			return
		case <-ctx.Done():
			return
		}
	}
}

// Fetch makes one request, with its retries, and returns its Result. If the client has
// stopped, or stops before the request could start, Result.Err is the stop reason and
// Attempts is 0. A stop reason met by this request (402, 401, ...) also stops the client.
func (c *Client) Fetch(ctx context.Context, req model.Request) model.Result {
	res, n := c.fetch(ctx, req)
	c.releaseBytes(n)
	return res
}

// fetch is Fetch that leaves the body's bytes counted in the in-flight budget; the caller
// releases them (returned) once the body is handed over.
func (c *Client) fetch(ctx context.Context, req model.Request) (model.Result, int64) {
	f := fetchState{res: model.Result{Request: req}}
	for {
		if err := f.exhausted(c); err != nil {
			f.res.Err = err
			c.log.Warn("atlas request failed after retries", "endpoint", req.Endpoint, "domain", req.Domain,
				"attempts", f.res.Attempts, "status", f.last.Status, "error", err.Error())
			return f.res, 0
		}
		refetch := f.maybeCharged > 0 && !f.refetched
		out := c.attempt(ctx, req, refetch)
		if !out.sent {
			f.res.Err = f.notSent(out.err)
			return f.res, 0
		}
		f.record(c, out, refetch)
		switch out.kind {
		case outcomeOK:
			f.res.Body, f.res.Overview, f.res.Similar, f.res.Countries = out.body, out.overview, out.similar, out.countries
			c.count(func(s *model.Stats) { s.Succeeded++ })
			return f.res, out.held
		case outcomePermanent:
			f.res.Err = out.err
			c.log.Info("atlas request rejected", "endpoint", req.Endpoint, "domain", req.Domain, "error", out.err.Error())
			return f.res, 0
		case outcomeFatal:
			c.stop(out.err)
			f.res.Err = out.err
			return f.res, 0
		case outcomeCanceled:
			f.res.Err = out.err
			return f.res, 0
		case outcomeRateLimited:
			// The pause was already set for everyone; the next turn waits for it.
			f.last, f.limited = out.err.(*model.Error), f.limited+1
		case outcomeTransient:
			f.last = out.err.(*model.Error)
			if f.exhausted(c) != nil {
				continue
			}
			if err := c.backoff(ctx, req, &f, out.retryAfter); err != nil {
				f.res.Err = f.gaveUp(err)
				if errors.Is(err, errRetryTimeUp) {
					f.res.Err = f.withNote(err.Error()) // the call's own failure, not a stop
				}
				return f.res, 0
			}
		}
	}
}

// fetchState is what one request's retry loop knows.
type fetchState struct {
	res          model.Result
	last         *model.Error
	limited      int  // attempts answered 429: free, so they have their own, larger bound
	maybeCharged int  // failed attempts the server may have charged (broken 200, no answer)
	refetched    bool // the one refetch this call may make was sent
	// schedule is the transient-failure backoff, made at the call's first failure (most
	// calls never fail, so most never allocate one).
	schedule *backoff.ExponentialBackOff
}

// exhausted returns the error to give up with, or nil while another attempt is allowed.
func (f *fetchState) exhausted(c *Client) error {
	switch {
	case f.last == nil:
		return nil
	case f.maybeCharged > 1 || (f.maybeCharged == 1 && f.refetched):
		return f.withNote(fmt.Sprintf("gave up after one refetch (the answer may have been charged %d times)", f.maybeCharged))
	case f.res.Attempts-f.limited >= c.cfg.MaxAttempts, f.limited >= c.cfg.MaxRateLimited:
		return f.last
	}
	return nil
}

func (f *fetchState) withNote(note string) *model.Error {
	e := *f.last
	e.Message = strings.TrimSuffix(strings.TrimRight(e.Message, ". ")+"; "+note, "; ")
	if e.Message == note {
		e.Message = note
	}
	return &e
}

// record counts a sent attempt.
func (f *fetchState) record(c *Client, out outcome, refetch bool) {
	f.res.Attempts++
	f.res.FetchedAt = out.at
	f.res.Charged += out.charged
	if refetch {
		f.refetched = true
	}
	if out.maybeCharged {
		f.maybeCharged++
	}
	if f.res.Attempts > 1 {
		c.count(func(s *model.Stats) { s.Retries++ })
	}
}

func (f *fetchState) notSent(err error) error {
	if f.last == nil {
		return err
	}
	return f.gaveUp(err)
}

func (f *fetchState) gaveUp(err error) error {
	return fmt.Errorf("atlas fetch %s %q: gave up after %d attempts (last: %s): %w",
		f.res.Endpoint, f.res.Domain, f.res.Attempts, f.last.Error(), err)
}

// backoff waits before the next attempt of a transient failure: the next interval of the
// call's exponential schedule (cenkalti/backoff, on the client's clock), or the server's
// Retry-After (503) when longer; it logs which attempt comes next. Past the schedule's
// max elapsed time it returns errRetryTimeUp without waiting.
func (c *Client) backoff(ctx context.Context, req model.Request, f *fetchState, retryAfter time.Duration) error {
	if f.schedule == nil {
		f.schedule = c.newSchedule()
	}
	d := f.schedule.NextBackOff()
	if d == backoff.Stop {
		return fmt.Errorf("%w (%s, api retry bound)", errRetryTimeUp, c.cfg.RetryMaxElapsed)
	}
	d = max(d, retryAfter)
	next := f.res.Attempts - f.limited + 1
	c.log.Warn(fmt.Sprintf("atlas retrying (attempt %d of %d)", next, c.cfg.MaxAttempts),
		"endpoint", req.Endpoint, "domain", req.Domain, "attempt", fmt.Sprintf("%d of %d", next, c.cfg.MaxAttempts),
		"backoff", d, "error", f.last.Error())
	return c.sleep(ctx, d)
}

// errRetryTimeUp ends a call whose transient failures outlasted RetryMaxElapsed.
var errRetryTimeUp = errors.New("retries of transient failures took longer than their bound")

// newSchedule is one call's transient-failure schedule: RetryInitial doubling up to
// RetryMax, ±50 % jitter, at most RetryMaxElapsed in all, measured on the client's clock so
// tests on a fake clock wait nothing.
func (c *Client) newSchedule() *backoff.ExponentialBackOff {
	return backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(c.cfg.RetryInitial),
		backoff.WithMaxInterval(c.cfg.RetryMax),
		backoff.WithMultiplier(retryMultiplier),
		backoff.WithRandomizationFactor(retryJitter),
		backoff.WithMaxElapsedTime(c.cfg.RetryMaxElapsed),
		backoff.WithClockProvider(c.clock),
	)
}

func (c *Client) count(f func(*model.Stats)) {
	c.mu.Lock()
	f(&c.stats)
	c.mu.Unlock()
}

// Stop makes the client start no new attempt: calls in flight finish and FetchAll hands
// their results over, then returns reason. Every wait (a 429 pause, a backoff, the rate
// limiter, the reserve) ends at once. The first stop reason wins (a 402 met earlier is
// not overwritten).
func (c *Client) Stop(reason error) { c.stop(reason) }

// Stopped is closed once the client has stopped (Stop, a 402, a fence error): a caller's
// FetchFrom queue that waits on something else must also end its wait on it.
func (c *Client) Stopped() <-chan struct{} { return c.stopCh }

// stop records the first stop reason and wakes everything that waits.
func (c *Client) stop(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopLocked(err)
}

func (c *Client) stopLocked(err error) {
	if c.stopErr != nil {
		return
	}
	c.stopErr = err
	c.abortLaterLocked(err)
	close(c.stopCh)
	c.broadcastLocked()
	c.log.Warn("atlas client stopped: no new requests will start", "reason", err.Error())
}

func (c *Client) broadcastLocked() {
	c.publishLocked()
	close(c.changed)
	c.changed = make(chan struct{})
}
