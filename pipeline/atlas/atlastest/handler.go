package atlastest

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Service is the service identifier: the /atlas prefix segment and X-Gateway-Service.
const Service = "atlas"

// MaxBodyBytes is the request body limit; larger bodies get 413.
const MaxBodyBytes = 10 << 20

// DocumentationURL is returned in the 404 body of an unknown service.
const DocumentationURL = "https://docs.atlas.example/"

// Endpoint names as counted in Stats (canonical names; aliases count under the operation).
const (
	EndpointOverview  = "site-overview"
	EndpointSimilar   = "site-similar"
	EndpointCountries = "country-metadata"
)

// routes maps a path below the service prefix (or a marketplace path) to its operation.
var routes = map[string]string{
	"/site-overview":    EndpointOverview,
	"/website-overview": EndpointOverview, // deprecated alias
	"/site-similar":     EndpointSimilar,
	"/similar-sites":    EndpointSimilar, // deprecated alias
	"/country-metadata": EndpointCountries,
}

// Handler is the simulator as an http.Handler. It is safe for concurrent use.
type Handler struct {
	opts  Options
	month *monthClock
	rate  atomic.Int64
	done  chan struct{} // closed by Server.Close: sleeping requests stop sleeping
	stop  sync.Once

	keysMu sync.RWMutex
	keys   []keyEntry

	inFlight atomic.Int64 // requests ServeHTTP has not returned from

	mu         sync.Mutex
	draws      map[uint64]uint64 // fault draws made per call (a hash of fault, path, url): faults.go
	wallets    map[string]*int64
	windows    map[string]*window
	quotaUsed  int64
	quotaReset time.Time // when quotaUsed next returns to 0
	stats      Stats
}

type keyEntry struct {
	sum [32]byte
	key string
}

// window counts requests per wall-clock second of their arrival. Requests are accounted
// after their latency, so out of order; four slots cover arrivals up to three seconds old,
// and an older arrival (its second long over) is not counted.
type window struct {
	sec   [4]int64
	count [4]int
}

// Stats counts what the simulator answered. Charged equals the number of charged calls: every
// intact 200 (OK) plus every charged 200 a fault broke (Broken); it is also the sum of Fetches.
type Stats struct {
	// Requests is the number of requests received (answered or cut).
	Requests int
	// Charged is the number of credits deducted (on a marketplace call without a bearer key,
	// monthly quota units).
	Charged int64
	// OK is the number of intact 200 responses; Broken the number of charged 200s that a fault
	// damaged (Reset, Truncated, HTML200, WrongContentType).
	OK, Broken int
	// ByStatus counts responses by HTTP status (a Reset counts as 200).
	ByStatus map[int]int
	// ByEndpoint counts requests routed to each operation (site-overview, site-similar,
	// country-metadata; aliases under their operation), whatever the status.
	ByEndpoint map[string]int
	// Fetches counts charged 200s per operation and normalized domain (Domain "" for
	// country-metadata): a value above 1 means the same thing was fetched twice.
	Fetches map[Fetch]int
}

// Fetch names one charged fetch: an operation and the normalized domain.
type Fetch struct {
	Endpoint string
	Domain   string
}

// NewHandler returns a simulator for opts, or an error naming every invalid option.
func NewHandler(opts Options) (*Handler, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if opts.Keys == nil {
		opts.Keys = map[string]int64{DefaultKey: DefaultCredits}
	}
	if opts.Rate == 0 {
		opts.Rate = DefaultRate
	}
	if opts.MarketplaceQuota == 0 {
		opts.MarketplaceQuota = DefaultQuota
	}
	if opts.MarketplaceRate == 0 {
		opts.MarketplaceRate = opts.Rate
	}
	if opts.Faults.RetryAfter == 0 {
		opts.Faults.RetryAfter = time.Second
	}
	if opts.Seed == 0 {
		opts.Seed = 1
	}
	h := &Handler{
		opts:    opts,
		month:   newMonthClock(opts.Seed, opts.Month, opts.MonthTurnAfter, time.Now()),
		done:    make(chan struct{}),
		draws:   make(map[uint64]uint64),
		wallets: make(map[string]*int64),
		windows: make(map[string]*window),
		stats:   Stats{ByStatus: map[int]int{}, ByEndpoint: map[string]int{}, Fetches: map[Fetch]int{}},
	}
	h.rate.Store(int64(opts.Rate))
	h.quotaReset = opts.MarketplaceQuotaReset
	if h.quotaReset.IsZero() {
		h.quotaReset = nextMonthStart(time.Now())
	}
	for k, n := range opts.Keys {
		h.addKeyLocked(k, n)
	}
	return h, nil
}

func (h *Handler) addKeyLocked(key string, credits int64) {
	c := credits
	h.wallets[key] = &c
	h.keysMu.Lock()
	h.keys = append(h.keys, keyEntry{sha256.Sum256([]byte(key)), key})
	h.keysMu.Unlock()
}

// Generator returns the data generator the handler serves from now (it changes when the
// month turns).
func (h *Handler) Generator() *Generator { return h.generator() }

// Credits returns the balance of key's wallet (0 for an unknown key).
func (h *Handler) Credits(key string) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w := h.wallets[key]; w != nil {
		return *w
	}
	return 0
}

// SetCredits sets the balance of key's wallet, adding the key if it is new.
func (h *Handler) SetCredits(key string, n int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w := h.wallets[key]; w != nil {
		*w = n
		return
	}
	h.addKeyLocked(key, n)
}

// SetRate changes the per-key requests per second from the next request on (X-RateLimit-Limit
// follows); n <= 0 means the default of 3.
func (h *Handler) SetRate(n int) {
	if n <= 0 {
		n = DefaultRate
	}
	h.rate.Store(int64(n))
}

// MarketplaceRemaining returns the remaining monthly quota of the marketplace listing.
func (h *Handler) MarketplaceRemaining() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rollQuotaLocked(time.Now())
	return h.opts.MarketplaceQuota - h.quotaUsed
}

// MarketplaceQuotaReset returns when the listing's quota next resets.
func (h *Handler) MarketplaceQuotaReset() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rollQuotaLocked(time.Now())
	return h.quotaReset
}

// rollQuotaLocked gives the whole quota back once its reset time has passed (no rollover:
// what was left is gone), and moves the reset a month on.
func (h *Handler) rollQuotaLocked(now time.Time) {
	for !now.Before(h.quotaReset) {
		h.quotaUsed = 0
		h.quotaReset = h.quotaReset.AddDate(0, 1, 0)
	}
}

// nextMonthStart is 00:00 UTC on the first of the month after t's.
func nextMonthStart(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, time.UTC)
}

// rateOf is the requests per second of the listing (market) or of the direct gateway.
func (h *Handler) rateOf(market bool) int64 {
	if market {
		return int64(h.opts.MarketplaceRate)
	}
	return h.rate.Load()
}

// Stats returns a copy of the counters.
func (h *Handler) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.stats
	s.ByStatus = make(map[int]int, len(h.stats.ByStatus))
	for k, v := range h.stats.ByStatus {
		s.ByStatus[k] = v
	}
	s.ByEndpoint = make(map[string]int, len(h.stats.ByEndpoint))
	for k, v := range h.stats.ByEndpoint {
		s.ByEndpoint[k] = v
	}
	s.Fetches = make(map[Fetch]int, len(h.stats.Fetches))
	for k, v := range h.stats.Fetches {
		s.Fetches[k] = v
	}
	return s
}

// lookupKey finds key among the configured keys comparing SHA-256 digests in constant time,
// visiting every entry whatever matches.
func (h *Handler) lookupKey(key string) (string, bool) {
	sum := sha256.Sum256([]byte(key))
	h.keysMu.RLock()
	defer h.keysMu.RUnlock()
	found, ok := "", false
	for _, e := range h.keys {
		if subtle.ConstantTimeCompare(sum[:], e.sum[:]) == 1 {
			found, ok = e.key, true
		}
	}
	return found, ok
}

func ctEqual(a, b string) bool {
	x, y := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(x[:], y[:]) == 1
}

// request is the state of one request as it passes the checks.
type request struct {
	start      time.Time
	market     bool
	endpoint   string
	domain     string
	rawURL     string
	key        string // API key ("" when none)
	rateKey    string
	authed     bool
	remaining  int64 // X-Gateway-Remaining-Credits
	rateLeft   int
	cost       int
	charged    bool
	broken     bool
	status     int
	quotaLeft  int64
	quotaReset time.Time
	limitWrite bool // X-RateLimit-Remaining known
	balanced   bool // remaining and quotaLeft are set
}

var (
	hJSON    = []string{"application/json; charset=utf-8"}
	hService = []string{Service}
	hNosniff = []string{"nosniff"}
	hFrame   = []string{"SAMEORIGIN"}
	hXSS     = []string{"1; mode=block"}
	hZero    = []string{"0"}
	hOne     = []string{"1"}
	hRegion  = []string{"eu-west-1"}
)

// ServeHTTP answers one request. The checks run in the order a gateway in front of an
// upstream service would apply them; see the package documentation.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.inFlight.Add(1)
	defer h.inFlight.Add(-1)
	q := &request{start: time.Now()}
	defer h.log(r, q)

	// Hang and latency; a request whose client left is dropped without a response, and so is
	// a hanging request when the server closes (a request in its latency is completed).
	if d := h.opts.Faults.Hang; d > 0 && !h.sleep(r.Context(), d, h.done) {
		h.count(q, 0)
		panic(http.ErrAbortHandler)
	}
	if d := h.latency(); d > 0 && !h.sleep(r.Context(), d, nil) {
		h.count(q, 0)
		panic(http.ErrAbortHandler)
	}

	// 1. Request body limit (edge proxy).
	if r.ContentLength > MaxBodyBytes || readBody(r.Body) > MaxBodyBytes {
		h.fail(w, q, http.StatusRequestEntityTooLarge, gatewayError{
			Error:   "Payload Too Large",
			Message: fmt.Sprintf("The request body exceeds the limit of %d bytes (10 MB). These endpoints take no body: send a GET without one.", MaxBodyBytes),
		})
		return
	}

	// 2. Service resolution.
	var rel string
	hdr := r.Header
	switch p := r.URL.Path; {
	case p == "/"+Service || strings.HasPrefix(p, "/"+Service+"/"):
		rel = p[len(Service)+1:]
	case h.opts.MarketplaceHost != "" && (hdr.Get("X-Marketplace-Key") != "" || hdr.Get("X-Marketplace-Host") != ""):
		q.market = true
		rel = p
	default:
		first := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 2)[0]
		h.fail(w, q, http.StatusNotFound, gatewayError{
			Error:            "Not Found",
			Message:          fmt.Sprintf("No service is mounted at /%s. This gateway serves /%s; see the documentation.", first, Service),
			DocumentationURL: DocumentationURL,
		})
		return
	}
	q.endpoint = routes[rel]

	// 3. Authentication.
	if !h.authenticate(w, r, q) {
		return
	}

	// 4. Spurious 429 (fault), before any accounting.
	if f := h.opts.Faults.RateLimited; f > 0 && h.draw("429", r).Float64() < f {
		secs := int((h.opts.Faults.RetryAfter + time.Second - 1) / time.Second)
		w.Header()["Retry-After"] = []string{strconv.Itoa(max(1, secs))}
		q.rateLeft, q.limitWrite = 0, true
		h.balance(q)
		h.tooMany(w, q)
		return
	}

	// 5. The upstream's answer (route, method, validation, injected failure), decided before
	// the gateway's accounting so that rate, credits and charge are one atomic step.
	up := h.upstream(r, q)

	// 6. Rate, quota, credits and charge, atomically.
	status := h.account(q, up.status == http.StatusOK)
	switch status {
	case http.StatusTooManyRequests:
		w.Header()["Retry-After"] = hOne
		h.tooMany(w, q)
		return
	case http.StatusPaymentRequired:
		q.cost = 1
		h.fail(w, q, http.StatusPaymentRequired, gatewayError{
			Error:            "Payment Required",
			Message:          fmt.Sprintf("Insufficient credits: this call costs 1 credit and the balance is %d. Top up in the developer console.", q.remaining),
			Service:          Service,
			RemainingBalance: &q.remaining,
		})
		return
	case http.StatusForbidden: // marketplace monthly quota exhausted
		q.rateLeft = 0
		h.fail(w, q, http.StatusTooManyRequests, gatewayError{
			Error:   "Too Many Requests",
			Message: fmt.Sprintf("The monthly quota of %d requests of this marketplace plan is exhausted; it resets at %s.", h.opts.MarketplaceQuota, q.quotaReset.UTC().Format(time.RFC3339)),
			Service: Service,
		})
		return
	}

	if up.status != http.StatusOK {
		if up.status == http.StatusMethodNotAllowed {
			w.Header()["Allow"] = []string{"GET"}
		}
		h.fail(w, q, up.status, up.body)
		return
	}
	h.success(w, r, q)
}

// upstreamAnswer is the upstream service's response before the gateway's accounting.
type upstreamAnswer struct {
	status int
	body   any
}

func (h *Handler) upstream(r *http.Request, q *request) upstreamAnswer {
	if q.endpoint == "" {
		return upstreamAnswer{http.StatusNotFound, detailError{"Not Found"}}
	}
	if r.Method != http.MethodGet {
		return upstreamAnswer{http.StatusMethodNotAllowed, detailError{"Method Not Allowed"}}
	}
	if q.endpoint != EndpointCountries {
		raw := r.URL.Query().Get("url")
		q.rawURL = raw
		if raw == "" {
			return upstreamAnswer{http.StatusBadRequest, validationBody("MISSING_PARAMETER",
				"The 'website' parameter is required: pass the domain to look up, e.g. ?url=example.com.", nil)}
		}
		d, err := NormalizeDomain(raw)
		if err != nil {
			return upstreamAnswer{http.StatusBadRequest, validationBody("INVALID_DOMAIN",
				fmt.Sprintf("The value of 'url' is not a valid domain name (%v). Send a host name such as example.com.", err), &raw)}
		}
		q.domain = d
	}
	if f := h.opts.FailRate; f > 0 {
		if d := h.draw("5xx", r); d.Float64() < f {
			return failAnswer(d.IntN(3))
		}
	}
	return upstreamAnswer{status: http.StatusOK}
}

// failAnswer is the injected failure (FailRate) numbered n: 500, 502 or 504.
func failAnswer(n int) upstreamAnswer {
	switch n {
	case 0:
		return upstreamAnswer{http.StatusInternalServerError, gatewayError{Error: "Internal Server Error", Message: "An unexpected error occurred while processing the request. Retry later."}}
	case 1:
		return upstreamAnswer{http.StatusBadGateway, proxyError{"Bad Gateway", "The upstream service is unreachable. Credits for this request have been refunded."}}
	default:
		return upstreamAnswer{http.StatusGatewayTimeout, proxyError{"Gateway Timeout", "The upstream service did not answer in time. Credits for this request have been refunded."}}
	}
}

// gatewayError is the flat gateway error body {error, message, service} and its variants.
type gatewayError struct {
	Error            string `json:"error"`
	Message          string `json:"message"`
	Service          string `json:"service,omitempty"`
	RemainingBalance *int64 `json:"remainingBalance,omitempty"`
	DocumentationURL string `json:"documentation_url,omitempty"`
}

// detailError is the upstream's {detail} body of 404 and 405.
type detailError struct {
	Detail string `json:"detail"`
}

// proxyError is the {messages, info} body of 502 and 504.
type proxyError struct {
	Messages string `json:"messages"`
	Info     string `json:"info"`
}

// validationError is the nested 400 body.
type validationError struct {
	Status string          `json:"status"`
	Error  validationInner `json:"error"`
	Meta   *struct {
		Request struct {
			URL string `json:"url"`
		} `json:"request"`
	} `json:"meta,omitempty"`
}

type validationInner struct {
	Code          string  `json:"code"`
	Message       string  `json:"message"`
	Target        string  `json:"target"`
	RejectedValue *string `json:"rejected_value"`
	Timestamp     string  `json:"timestamp"`
}

func validationBody(code, msg string, rejected *string) validationError {
	v := validationError{Status: "error", Error: validationInner{
		Code: code, Message: msg, Target: "url", RejectedValue: rejected,
		Timestamp: time.Now().UTC().Format("2006-01-02T15:04:05.000Z"),
	}}
	if rejected != nil {
		v.Meta = &struct {
			Request struct {
				URL string `json:"url"`
			} `json:"request"`
		}{}
		v.Meta.Request.URL = *rejected
	}
	return v
}

// authenticate checks the API key (direct) or the marketplace headers and optional bearer
// key, answering 401 itself when they fail.
func (h *Handler) authenticate(w http.ResponseWriter, r *http.Request, q *request) bool {
	deny := func(msg string) bool {
		h.fail(w, q, http.StatusUnauthorized, gatewayError{Error: "Unauthorized", Message: msg, Service: Service})
		return false
	}
	const invalid = "The API key is invalid or missing. Check the key in the developer console and send it as 'Authorization: Bearer <API_KEY>' or 'X-API-Key: <API_KEY>'."
	authz, hasAuthz := r.Header["Authorization"]
	bearer, bearerOK := "", false
	if hasAuthz {
		v := authz[0]
		scheme, tok, ok := strings.Cut(v, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" || strings.ContainsAny(tok, " \t") {
			return deny(invalid)
		}
		bearer, bearerOK = tok, true
	}

	if q.market {
		host, key := r.Header.Get("X-Marketplace-Host"), r.Header.Get("X-Marketplace-Key")
		hostOK := ctEqual(strings.ToLower(host), strings.ToLower(h.opts.MarketplaceHost))
		keyOK := ctEqual(key, h.opts.MarketplaceKey)
		if !hostOK || !keyOK {
			return deny("Invalid marketplace key or host: send the x-marketplace-key of your subscription and x-marketplace-host of this listing.")
		}
		q.rateKey = "\x00marketplace"
		if !bearerOK {
			if h.opts.MarketplaceRequireBearer {
				return deny("A bearer key is required on this listing: send 'Authorization: Bearer <API_KEY>' as well as the marketplace headers.")
			}
			q.authed = true
			return true
		}
	} else if !bearerOK {
		vals, has := r.Header["X-Api-Key"]
		if !has {
			return deny("No API key supplied. Send it as a Bearer token ('Authorization: Bearer <API_KEY>') or in the 'X-API-Key' header.")
		}
		if vals[0] == "" {
			return deny(invalid)
		}
		bearer = vals[0]
	}
	key, ok := h.lookupKey(bearer)
	if !ok {
		return deny(invalid)
	}
	q.key, q.rateKey, q.authed = key, key, true
	return true
}

// account applies the per-second rate, the marketplace quota and the wallet in one critical
// section, charging one credit when success is true and every check passes. It returns 0
// when the request may proceed, 429 for the rate, 403 for an exhausted quota (answered as
// 429) or 402 for an empty wallet.
func (h *Handler) account(q *request, success bool) int {
	now := q.start.Unix() // a gateway counts the rate when a request arrives, before the upstream's latency
	limit := int(h.rateOf(q.market))
	h.mu.Lock()
	defer h.mu.Unlock()
	win := h.windows[q.rateKey]
	if win == nil {
		win = &window{}
		h.windows[q.rateKey] = win
	}
	i := now & 3
	if now > win.sec[i] {
		win.sec[i], win.count[i] = now, 0
	}
	stale := now < win.sec[i]
	wallet := h.wallets[q.key]
	h.balanceLocked(q)
	q.limitWrite = true
	if !stale && win.count[i] >= limit {
		q.rateLeft = 0
		return http.StatusTooManyRequests
	}
	q.rateLeft = limit
	if !stale {
		win.count[i]++
		q.rateLeft = limit - win.count[i]
	}
	if q.market && q.quotaLeft <= 0 {
		return http.StatusForbidden
	}
	if wallet != nil && *wallet <= 0 {
		return http.StatusPaymentRequired
	}
	if !success {
		return 0
	}
	if wallet != nil {
		*wallet--
		q.remaining = *wallet
	}
	if q.market {
		h.quotaUsed++
		q.quotaLeft--
		if wallet == nil {
			q.remaining = q.quotaLeft
		}
	}
	q.charged, q.cost = true, 1
	h.stats.Charged++
	h.stats.Fetches[Fetch{q.endpoint, q.domain}]++
	return 0
}

// balance reads the wallet balance (or, on a marketplace call without a bearer key, the
// remaining monthly quota) for the response headers.
func (h *Handler) balance(q *request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.balanceLocked(q)
}

func (h *Handler) balanceLocked(q *request) {
	q.balanced = true
	h.rollQuotaLocked(q.start)
	q.quotaLeft = h.opts.MarketplaceQuota - h.quotaUsed
	q.quotaReset = h.quotaReset
	if w := h.wallets[q.key]; w != nil {
		q.remaining = *w
	} else if q.market {
		q.remaining = q.quotaLeft
	}
}

func (h *Handler) tooMany(w http.ResponseWriter, q *request) {
	h.fail(w, q, http.StatusTooManyRequests, gatewayError{
		Error:   "Too Many Requests",
		Message: fmt.Sprintf("Rate limit of %d requests per second exceeded for this key. Wait for Retry-After seconds and slow down.", h.rateOf(q.market)),
		Service: Service,
	})
}

// headers sets the section 8 headers (and the marketplace headers) for the response.
func (h *Handler) headers(w http.ResponseWriter, q *request) {
	hd := w.Header()
	hd["Content-Type"] = hJSON
	hd["X-Gateway-Service"] = hService
	if q.cost == 1 {
		hd["X-Gateway-Credit-Cost"] = hOne
	} else {
		hd["X-Gateway-Credit-Cost"] = hZero
	}
	hd["X-Gateway-Remaining-Credits"] = []string{strconv.FormatInt(q.remaining, 10)}
	hd["X-Gateway-Latency-Ms"] = []string{strconv.FormatInt(time.Since(q.start).Milliseconds(), 10)}
	hd["X-Ratelimit-Limit"] = []string{strconv.FormatInt(h.rateOf(q.market), 10)}
	if q.limitWrite {
		hd["X-Ratelimit-Remaining"] = []string{strconv.Itoa(q.rateLeft)}
	}
	hd["X-Content-Type-Options"] = hNosniff
	hd["X-Frame-Options"] = hFrame
	hd["X-Xss-Protection"] = hXSS
	if q.market {
		left, reset := q.quotaLeft, q.quotaReset
		if !q.balanced {
			left, reset = h.MarketplaceRemaining(), h.MarketplaceQuotaReset()
		}
		hd["X-Ratelimit-Requests-Limit"] = []string{strconv.FormatInt(h.opts.MarketplaceQuota, 10)}
		hd["X-Ratelimit-Requests-Remaining"] = []string{strconv.FormatInt(max(0, left), 10)}
		hd["X-Ratelimit-Requests-Reset"] = []string{strconv.FormatInt(reset.Unix(), 10)}
		hd["X-Marketplace-Region"] = hRegion
		hd["X-Marketplace-Request-Id"] = []string{fmt.Sprintf("%016x%016x", rand.Uint64(), rand.Uint64())}
	}
}

// fail writes a JSON error body.
func (h *Handler) fail(w http.ResponseWriter, q *request, status int, body any) {
	b := mustMarshal(body)
	h.headers(w, q)
	w.Header()["Content-Length"] = []string{strconv.Itoa(len(b))}
	h.count(q, status)
	w.WriteHeader(status)
	_, _ = w.Write(b) // a failed write means the client left; there is no one to tell
}

const htmlErrorPage = `<!DOCTYPE html>
<html><head><title>Service Temporarily Unavailable</title></head>
<body><h1>Service Temporarily Unavailable</h1><p>The server is temporarily unable to service your request. Please try again later.</p></body></html>
`

// success writes the 200 body, applying at most one of the 200 faults.
func (h *Handler) success(w http.ResponseWriter, r *http.Request, q *request) {
	var body []byte
	switch q.endpoint {
	case EndpointCountries:
		body = h.countriesBody()
	default:
		body = h.domainBody(q.endpoint, q.domain, q.rawURL)
	}
	h.headers(w, q)
	hd := w.Header()
	f := h.opts.Faults
	fault := ""
	if f.Reset+f.Truncated+f.HTML200+f.WrongContentType+f.Drift > 0 {
		x := h.draw("200", r).Float64()
		switch {
		case x < f.Reset:
			fault = "reset"
		case x < f.Reset+f.Truncated:
			fault = "truncated"
		case x < f.Reset+f.Truncated+f.HTML200:
			fault = "html"
		case x < f.Reset+f.Truncated+f.HTML200+f.WrongContentType:
			fault = "content-type"
		case x < f.Reset+f.Truncated+f.HTML200+f.WrongContentType+f.Drift:
			fault = "drift"
		}
	}
	q.broken = fault != ""
	switch fault {
	case "reset":
		h.count(q, http.StatusOK)
		h.reset(w, body)
		return
	case "truncated":
		body = body[:len(body)/2]
	case "html":
		hd["Content-Type"] = []string{"text/html; charset=utf-8"}
		body = []byte(htmlErrorPage)
	case "content-type":
		hd["Content-Type"] = []string{"text/plain; charset=utf-8"}
	case "drift":
		body = driftBody(q.endpoint, body)
	}
	hd["Content-Length"] = []string{strconv.Itoa(len(body))}
	h.count(q, http.StatusOK)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body) // a failed write means the client left; there is no one to tell
}

// driftBody returns body with its main array replaced by a string: well-formed JSON that no
// longer fits the v2 schema, as an upstream change of shape would look.
func driftBody(endpoint string, body []byte) []byte {
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return body
	}
	switch endpoint {
	case EndpointCountries:
		m["countries"] = "unavailable"
	case EndpointSimilar:
		m["similar_sites"] = "unavailable"
	default:
		m["traffic"] = map[string]any{"history": "unavailable"}
	}
	return mustMarshal(m)
}

// reset sends the headers (announcing the whole body) and half the body, then cuts the
// connection.
func (h *Handler) reset(w http.ResponseWriter, body []byte) {
	w.Header()["Content-Length"] = []string{strconv.Itoa(len(body))}
	hj, ok := w.(http.Hijacker)
	if !ok {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body[:len(body)/2]) // the connection is cut next anyway
		panic(http.ErrAbortHandler)
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	// Cutting the connection is the point of this fault: errors writing or closing it change
	// nothing for the client. bufio errors are sticky, so only Flush reports them.
	defer func() { _ = conn.Close() }()
	_, _ = buf.WriteString("HTTP/1.1 200 OK\r\n")
	_ = w.Header().Write(buf)
	_, _ = buf.WriteString("\r\n")
	_, _ = buf.Write(body[:len(body)/2])
	_ = buf.Flush()
}

func (h *Handler) countriesBody() []byte {
	if h.opts.Legacy {
		return legacyCountries()
	}
	return h.generator().CountriesBody()
}

func (h *Handler) domainBody(endpoint, domain, rawURL string) []byte {
	g := h.generator()
	if h.opts.Legacy {
		return g.legacyBody(endpoint, domain)
	}
	return g.body(endpoint, domain, rawURL)
}

// InFlight returns how many requests the handler is answering now (in their latency, hanging,
// or being written): a test waits for its request to arrive instead of sleeping.
func (h *Handler) InFlight() int { return int(h.inFlight.Load()) }

// count records the response in the stats; status 0 means no response (client gone).
func (h *Handler) count(q *request, status int) {
	q.status = status
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stats.Requests++
	if status != 0 {
		h.stats.ByStatus[status]++
	}
	if q.endpoint != "" {
		h.stats.ByEndpoint[q.endpoint]++
	}
	if status == http.StatusOK {
		if q.broken {
			h.stats.Broken++
		} else {
			h.stats.OK++
		}
	}
}

func (h *Handler) log(r *http.Request, q *request) {
	l := h.opts.Logger
	if l == nil {
		return
	}
	attrs := []slog.Attr{
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.Int("status", q.status),
		slog.Duration("latency", time.Since(q.start)),
	}
	if q.domain != "" {
		attrs = append(attrs, slog.String("domain", q.domain))
	}
	if q.charged {
		attrs = append(attrs, slog.Bool("charged", true))
	}
	if q.broken {
		attrs = append(attrs, slog.Bool("fault", true))
	}
	if q.market {
		attrs = append(attrs, slog.Bool("marketplace", true))
	}
	l.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
}

func (h *Handler) latency() time.Duration {
	lo, hi := h.opts.LatencyMin, h.opts.LatencyMax
	if hi <= lo {
		return lo
	}
	return lo + rand.N(hi-lo+1)
}

// sleep waits d; it returns false if the client went away or stop was closed.
func (h *Handler) sleep(ctx context.Context, d time.Duration, stop <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-stop:
		return false
	}
}

// readBody counts the request body, stopping just past the limit.
func readBody(b io.Reader) int64 {
	if b == nil || b == http.NoBody {
		return 0
	}
	n, _ := io.CopyN(io.Discard, b, MaxBodyBytes+1)
	return n
}

// close wakes requests hanging on Faults.Hang.
func (h *Handler) close() { h.stop.Do(func() { close(h.done) }) }

var _ http.Handler = (*Handler)(nil)
