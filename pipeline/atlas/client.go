// Package atlas is the client of the Site Intelligence API ("atlas"), direct gateway or
// marketplace listing.
//
// It paces calls with a token bucket at min(configured rate, the server's
// X-RateLimit-Limit), keeps enough calls in flight to use the whole limit, retries what
// is worth retrying (429 after Retry-After; 5xx, time-outs, resets and broken 200 bodies
// with jittered exponential backoff), and never starts a call that could break the
// credit reserve (min_credits) or the per-run cap (max_credits_per_run). A Client is
// meant for one run: once it has stopped (402, 401, reserve, cap, misconfiguration,
// legacy body) every later call returns the same stop reason without calling the API.
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

	"golang.org/x/time/rate"

	"sitewatch/schema"
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

// Defaults used when the Config field is zero.
const (
	DefaultRateLimit     = 3
	DefaultTimeout       = 30 * time.Second
	DefaultMaxAttempts   = 6
	DefaultMaxRetryAfter = 2 * time.Minute
	DefaultRetryInitial  = 500 * time.Millisecond
	DefaultRetryMax      = 30 * time.Second
	maxBodyBytes         = 64 << 20
	servicePrefix        = "/atlas"
)

// Config configures a Client. Only BaseURL and the keys are required.
type Config struct {
	BaseURL         string // gateway base; direct mode adds /atlas
	Mode            Mode   // "" means ModeDirect
	APIKey          string // Bearer (direct: required; marketplace: optional, required by some listings)
	UseXAPIKey      bool   // send X-API-Key instead of Authorization: Bearer (direct)
	MarketplaceHost string // value of x-marketplace-host (marketplace)
	MarketplaceKey  string // value of x-marketplace-key (marketplace)
	// RateLimit is the requests/second ceiling (0 => DefaultRateLimit); the server's
	// X-RateLimit-Limit can only lower it.
	RateLimit float64
	// MinCredits: never start a call that would take remaining credits (or the remaining
	// marketplace quota) below this.
	MinCredits int64
	// MaxCreditsPerRun: never start a call that could spend past it; 0 = no cap.
	MaxCreditsPerRun int64
	Timeout          time.Duration // per HTTP attempt; 0 => DefaultTimeout
	// Concurrency is the most requests in flight; 0 => ceil(3*RateLimit)+1, enough to keep
	// the bucket full when calls take up to about 3 s.
	Concurrency int
	MaxAttempts int // HTTP attempts per request, 429s not counted; 0 => DefaultMaxAttempts
	// MaxRateLimited bounds the 429 answers one request takes before it gives up
	// (ErrRateLimited); 0 => DefaultMaxRateLimited. 429s are free and every call waits out
	// their Retry-After together, so the bound is looser than MaxAttempts.
	MaxRateLimited int
	MaxRetryAfter  time.Duration // cap on an honoured Retry-After; 0 => DefaultMaxRetryAfter
	// RetryInitial and RetryMax shape the exponential backoff of 5xx, time-outs, resets and
	// broken bodies (0 => DefaultRetryInitial, DefaultRetryMax). Jitter is ±50%.
	RetryInitial time.Duration
	RetryMax     time.Duration
	HTTPClient   *http.Client // nil => a tuned default that follows no redirects
	Logger       *slog.Logger // nil => discard
}

// String describes c without its keys, so printing a Config never leaks them.
func (c Config) String() string {
	return fmt.Sprintf("atlas.Config{BaseURL:%q Mode:%q APIKey:%s MarketplaceHost:%q MarketplaceKey:%s RateLimit:%g MinCredits:%d MaxCreditsPerRun:%d Timeout:%s Concurrency:%d}",
		redactURL(c.BaseURL), c.Mode, mask(c.APIKey), c.MarketplaceHost, mask(c.MarketplaceKey),
		c.RateLimit, c.MinCredits, c.MaxCreditsPerRun, c.Timeout, c.Concurrency)
}

// GoString is String, so %#v does not leak the keys either.
func (c Config) GoString() string { return c.String() }

// LogValue keeps the keys out of slog output.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

func mask(key string) string {
	if key == "" {
		return `""`
	}
	return "[REDACTED]"
}

func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparseable URL)"
	}
	return u.Redacted()
}

// Request is one call: an operation and, for the per-domain operations, the domain.
type Request struct {
	Endpoint schema.Endpoint // schema.EndpointOverview, EndpointSimilar or EndpointCountries
	Domain   string          // normalized domain; ignored for EndpointCountries
}

// Result is the outcome of one request, after its retries.
type Result struct {
	Request
	Body      []byte    // the 200 body exactly as received, already checked with schema.Validate
	FetchedAt time.Time // UTC time the last answer arrived (zero if none did)
	Attempts  int       // HTTP attempts made
	Err       error     // nil on success; an *Error (or a wrapped stop reason or context error) otherwise
}

// Stats are the client's counters since New.
type Stats struct {
	Requests         int64   // HTTP attempts sent
	Succeeded        int64   // requests answered with a valid 200 body
	RateLimited      int64   // 429 answers seen
	Retries          int64   // attempts beyond the first of a request
	CreditsSpent     int64   // credits charged (200 answers, from X-Gateway-Credit-Cost)
	CreditsRemaining int64   // last known X-Gateway-Remaining-Credits; -1 unknown
	QuotaRemaining   int64   // last known x-ratelimit-requests-remaining (marketplace); -1 unknown
	RateLimit        float64 // min(api.rate_limit, the server's X-RateLimit-Limit)
	PacedRate        float64 // the requests/second the bucket runs at now: below RateLimit after 429s
	// Unanswered counts attempts that got no answer (time-outs, resets before the headers).
	// The server may have charged them, so the run cap counts them as spent.
	Unanswered int64
}

// Client calls the API. Its methods are safe for concurrent use.
type Client struct {
	cfg         Config
	base        string // scheme://host[/path] without trailing slash, plus /atlas in direct mode
	hc          *http.Client
	log         *slog.Logger
	limiter     *rate.Limiter
	turn        chan struct{} // one goroutine at a time waits on the limiter
	redact      *strings.Replacer
	concurrency int
	stopCh      chan struct{}

	// onSend, if set, is called (outside locks) just before each HTTP attempt; benchmarks use it.
	onSend func(time.Time)

	mu           sync.Mutex
	changed      chan struct{} // closed and replaced whenever admission state changes
	inflight     int64         // attempts started and not yet answered (credit reservations)
	seenResponse bool          // an HTTP answer has arrived
	remaining    int64         // -1 unknown
	quota        int64         // -1 unknown
	limit        float64       // current bucket rate before slowing: min(config, server header)
	slow         float64       // fraction of limit the bucket runs at, below 1 after 429s
	limitFrom    time.Time     // send time of the attempt whose header set limit
	pausedUntil  time.Time     // no attempt starts before this (after a 429)
	stopErr      error
	stats        Stats
}

// New checks cfg and returns a Client. It returns an error (naming the setting to fix,
// never a key) when the base URL, mode or keys are unusable.
func New(cfg Config) (*Client, error) {
	if cfg.Mode == "" {
		cfg.Mode = ModeDirect
	}
	u, err := url.Parse(strings.TrimSpace(cfg.BaseURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("atlas: api.base_url %q is not an http(s) URL; set it (or ATLAS_BASE_URL) to the gateway address, e.g. https://gateway.example", redactURL(cfg.BaseURL))
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("atlas: api.base_url %s must not carry a query or fragment", u.Redacted())
	}
	base := strings.TrimRight(u.Scheme+"://"+u.Host+u.EscapedPath(), "/")
	switch cfg.Mode {
	case ModeDirect:
		if cfg.APIKey == "" {
			return nil, errors.New("atlas: no API key: set ATLAS_API_KEY (direct mode sends it as Bearer or X-API-Key)")
		}
		base += servicePrefix
	case ModeMarketplace:
		if cfg.MarketplaceHost == "" {
			return nil, errors.New("atlas: marketplace mode needs api.marketplace_host (the x-marketplace-host value)")
		}
		if cfg.MarketplaceKey == "" {
			return nil, errors.New("atlas: marketplace mode needs a marketplace key: set ATLAS_MARKETPLACE_KEY")
		}
	default:
		return nil, fmt.Errorf("atlas: api.mode %q is not direct or marketplace", cfg.Mode)
	}
	if cfg.RateLimit < 0 || math.IsNaN(cfg.RateLimit) || math.IsInf(cfg.RateLimit, 0) {
		return nil, fmt.Errorf("atlas: api.rate_limit %g must be a positive number of requests per second", cfg.RateLimit)
	}
	if cfg.RateLimit == 0 {
		cfg.RateLimit = DefaultRateLimit
	}
	if cfg.MinCredits < 0 || cfg.MaxCreditsPerRun < 0 {
		return nil, errors.New("atlas: api.min_credits and api.max_credits_per_run must not be negative")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxRateLimited <= 0 {
		cfg.MaxRateLimited = DefaultMaxRateLimited
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.MaxRetryAfter <= 0 {
		cfg.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if cfg.RetryInitial <= 0 {
		cfg.RetryInitial = DefaultRetryInitial
	}
	if cfg.RetryMax <= 0 {
		cfg.RetryMax = DefaultRetryMax
	}
	conc := cfg.Concurrency
	if conc <= 0 {
		conc = int(math.Ceil(cfg.RateLimit*3)) + 1
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = defaultHTTPClient(conc)
	}
	var pairs []string
	for _, k := range []string{cfg.APIKey, cfg.MarketplaceKey} {
		if k != "" {
			pairs = append(pairs, k, "[REDACTED]")
		}
	}
	c := &Client{
		cfg:         cfg,
		base:        base,
		hc:          hc,
		log:         log,
		limiter:     rate.NewLimiter(bucketRate(cfg.RateLimit), 1),
		turn:        make(chan struct{}, 1),
		redact:      strings.NewReplacer(pairs...),
		concurrency: conc,
		stopCh:      make(chan struct{}),
		changed:     make(chan struct{}),
		remaining:   -1,
		quota:       -1,
		limit:       cfg.RateLimit,
		slow:        1,
	}
	c.stats.CreditsRemaining, c.stats.QuotaRemaining = -1, -1
	return c, nil
}

func defaultHTTPClient(conc int) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = conc + 8
	tr.MaxIdleConnsPerHost = conc + 8
	tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	return &http.Client{
		Transport: tr,
		// A redirect would forward the key headers to wherever it points; the API never
		// redirects, so a redirect means a wrong base URL and is reported as such.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Concurrency is the most requests FetchAll keeps in flight.
func (c *Client) Concurrency() int { return c.concurrency }

// Stats returns a snapshot of the counters.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.CreditsRemaining, s.QuotaRemaining, s.RateLimit = c.remaining, c.quota, c.limit
	s.PacedRate = c.limit * c.slow
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
// was attempted, or the stop reason: ErrOutOfCredits (402), ErrCreditReserve
// (min_credits), ErrRunBudget (max_credits_per_run), ErrUnauthorized (401),
// ErrMisconfigured (404/405/413), schema.ErrLegacyV1, or ctx.Err(). Requests never
// started are not passed to handle. Per-request failures are in Result.Err only.
func (c *Client) FetchAll(ctx context.Context, reqs []Request, handle func(Result)) error {
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
	workers := min(c.concurrency, len(reqs))
	jobs := make(chan Request)
	results := make(chan Result)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range jobs {
				res := c.Fetch(ctx, r)
				if res.Attempts > 0 {
					results <- res
				}
			}
		}()
	}
	go func() {
		defer close(jobs)
		for _, r := range reqs {
			select {
			case <-c.stopCh:
				return
			case <-ctx.Done():
				return
			default:
			}
			select {
			case jobs <- r:
			case <-c.stopCh:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() {
		wg.Wait()
		close(results)
	}()
	for res := range results {
		handle(res)
	}
	if err := c.Err(); err != nil {
		return err
	}
	return ctx.Err()
}

// Fetch makes one request, with its retries, and returns its Result. If the client has
// stopped, or stops before the request could start, Result.Err is the stop reason and
// Attempts is 0. A stop reason met by this request (402, 401, ...) also stops the client.
func (c *Client) Fetch(ctx context.Context, req Request) Result {
	res := Result{Request: req}
	bo := c.newBackoff()
	var last *Error
	limited := 0 // attempts answered 429: they cost nothing, so they get their own, larger bound
	for {
		if (res.Attempts-limited >= c.cfg.MaxAttempts || limited >= c.cfg.MaxRateLimited) && last != nil {
			res.Err = last
			c.log.Warn("atlas request failed after retries", "endpoint", req.Endpoint, "domain", req.Domain,
				"attempts", res.Attempts, "status", last.Status, "error", last.Error())
			return res
		}
		out := c.attempt(ctx, req)
		if !out.sent {
			switch {
			case res.Attempts == 0:
				res.Err = out.err
			case last != nil:
				res.Err = fmt.Errorf("atlas fetch %s %q: gave up after %d attempts (last: %s): %w",
					req.Endpoint, req.Domain, res.Attempts, last.Error(), out.err)
			default:
				res.Err = out.err
			}
			return res
		}
		res.Attempts++
		res.FetchedAt = out.at
		if res.Attempts > 1 {
			c.count(func(s *Stats) { s.Retries++ })
		}
		switch out.kind {
		case outcomeOK:
			res.Body = out.body
			c.count(func(s *Stats) { s.Succeeded++ })
			return res
		case outcomePermanent:
			res.Err = out.err
			c.log.Info("atlas request rejected", "endpoint", req.Endpoint, "domain", req.Domain, "error", out.err.Error())
			return res
		case outcomeFatal:
			c.stop(out.err)
			res.Err = out.err
			return res
		case outcomeCanceled:
			res.Err = out.err
			return res
		case outcomeRateLimited:
			// The pause was already set for everyone; the next turn waits for it.
			last = out.err.(*Error)
			limited++
		case outcomeTransient:
			last = out.err.(*Error)
			if res.Attempts-limited >= c.cfg.MaxAttempts {
				continue
			}
			d := bo.NextBackOff()
			c.log.Warn("atlas retrying", "endpoint", req.Endpoint, "domain", req.Domain,
				"attempt", res.Attempts, "backoff", d, "error", last.Error())
			if err := c.sleep(ctx, d); err != nil {
				res.Err = fmt.Errorf("atlas fetch %s %q: gave up after %d attempts (last: %s): %w",
					req.Endpoint, req.Domain, res.Attempts, last.Error(), err)
				return res
			}
		}
	}
}

func (c *Client) count(f func(*Stats)) {
	c.mu.Lock()
	f(&c.stats)
	c.mu.Unlock()
}

// Stop makes the client start no new attempt: calls in flight finish and FetchAll hands
// their results over, then returns reason. A request waiting out a retry backoff gives up.
// The first stop reason wins (a 402 met earlier is not overwritten).
func (c *Client) Stop(reason error) { c.stop(reason) }

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
	close(c.stopCh)
	c.broadcastLocked()
	c.log.Warn("atlas client stopped: no new requests will start", "reason", err.Error())
}

func (c *Client) broadcastLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// admit reserves one credit for an attempt about to start. It waits while in-flight
// attempts could still free the room (an unanswered call may turn out unpaid), and stops
// the client when the reserve or the run cap leaves no room even with nothing in flight.
// Until the first answer tells the balance, only one attempt is in flight.
func (c *Client) admit(ctx context.Context) error {
	for {
		c.mu.Lock()
		if c.stopErr != nil {
			err := c.stopErr
			c.mu.Unlock()
			return err
		}
		wait, err := c.admissibleLocked()
		if err != nil {
			c.stopLocked(err)
			c.mu.Unlock()
			return err
		}
		if !wait {
			c.inflight++
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

func (c *Client) admissibleLocked() (wait bool, err error) {
	if !c.seenResponse && c.inflight > 0 {
		return true, nil
	}
	blocked := func(stop error) (bool, error) {
		if c.inflight > 0 {
			return true, nil
		}
		return false, stop
	}
	if lim := c.cfg.MaxCreditsPerRun; lim > 0 && c.stats.CreditsSpent+c.stats.Unanswered+c.inflight+1 > lim {
		return blocked(&Error{Op: "start", Message: fmt.Sprintf("%d of %d credits spent this run", c.stats.CreditsSpent, lim), Err: ErrRunBudget})
	}
	if c.remaining >= 0 && c.remaining-c.inflight-1 < c.cfg.MinCredits {
		if c.cfg.MinCredits == 0 {
			// No reserve to lower: the wallet is simply empty.
			return blocked(&Error{Op: "start", Message: "the wallet has no credits left (X-Gateway-Remaining-Credits: 0); top it up", Err: ErrOutOfCredits})
		}
		return blocked(&Error{Op: "start", Message: fmt.Sprintf("%d credits remain, reserve is %d", c.remaining, c.cfg.MinCredits), Err: ErrCreditReserve})
	}
	if c.quota >= 0 && c.quota-c.inflight-1 < c.cfg.MinCredits {
		return blocked(&Error{Op: "start", Message: fmt.Sprintf("%d requests of the marketplace monthly quota remain, reserve is %d", c.quota, c.cfg.MinCredits), Err: ErrCreditReserve})
	}
	return false, nil
}

// unreserve gives back a reservation of an attempt that was never sent.
func (c *Client) unreserve() {
	c.mu.Lock()
	c.inflight--
	c.broadcastLocked()
	c.mu.Unlock()
}

// waitTurn waits out any 429 pause and takes a token. Only one goroutine at a time waits
// on the limiter, so a lowered rate or a pause applies to the very next call instead of
// to a queue of reservations made at the old rate.
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
		c.mu.Lock()
		until, stopErr := c.pausedUntil, c.stopErr
		c.mu.Unlock()
		if stopErr != nil {
			return stopErr
		}
		if d := time.Until(until); d > 0 {
			if err := c.sleep(ctx, d); err != nil {
				return err
			}
			continue
		}
		if err := c.limiter.Wait(ctx); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("wait for rate limiter: %w", err)
		}
		c.mu.Lock()
		until, stopErr = c.pausedUntil, c.stopErr
		c.mu.Unlock()
		if stopErr != nil {
			return stopErr
		}
		if time.Now().Before(until) {
			continue // a 429 arrived while we waited: honour it
		}
		return nil
	}
}

// DefaultMaxRateLimited is Config.MaxRateLimited's default.
const DefaultMaxRateLimited = 20

// paceFactor keeps the bucket a hair under the limit. Gateways count requests in fixed
// one-second windows; at exactly the limit, a few milliseconds of send jitter at a window
// edge put limit+1 requests in one window, and the 429's Retry-After then idles every call
// for a second. At 99.5% that takes 5 ms of jitter at the exact edge.
const paceFactor = 0.995

// bucketRate is the token rate for a requests/second limit.
func bucketRate(limit float64) rate.Limit { return rate.Limit(limit * paceFactor) }

// pause stops every new attempt until d from now (a 429's Retry-After), and slows the bucket:
// a 429 means the server counts our calls faster than we think we send them.
func (c *Client) pause(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if until := time.Now().Add(d); until.After(c.pausedUntil) {
		c.pausedUntil = until
	}
	c.slow = max(minSlow, c.slow*slowOn429)
	c.limiter.SetLimit(bucketRate(c.limit * c.slow))
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
	c.limiter.SetLimit(bucketRate(c.limit * c.slow))
}

func (c *Client) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.stopCh: // a stop (a signal, a 402) must not wait out a long Retry-After
		return c.Err()
	}
}
