package atlas

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"sitewatch/pipeline/model"
	"sitewatch/pipeline/secret"
	"sitewatch/schema"
)

type outcomeKind int

const (
	outcomeOK          outcomeKind = iota
	outcomePermanent               // this request failed for good (400, drift, secret in body, oversized body)
	outcomeFatal                   // stop the client (401, 402, 404, 405, 413, 3xx, legacy v1, unreachable)
	outcomeRateLimited             // 429: retry after the pause
	outcomeTransient               // 5xx, time-out, reset, broken 200: retry with backoff
	outcomeCanceled                // the caller's context ended
)

type outcome struct {
	sent bool // an HTTP attempt was made (false: stopped or canceled before sending)
	kind outcomeKind
	// body and its decoded value (the one matching the endpoint), for outcomeOK; held is
	// the bytes it counts against MaxInflightBytes until handed over.
	body      []byte
	overview  *schema.SiteOverview
	similar   *schema.SiteSimilar
	countries *schema.CountryMetadata
	held      int64
	// charged is the credits the server charged for this answer (a 200's X-Gateway-Credit-Cost).
	charged int64
	// maybeCharged says the attempt may have cost a credit without giving a usable body
	// (a broken 200, or no answer after the request was written): retrying it is a refetch.
	maybeCharged bool
	retryAfter   time.Duration // a 503's Retry-After, honoured as the least backoff
	at           time.Time
	err          error
}

func (c *Client) requestURL(req model.Request) (string, error) {
	switch req.Endpoint {
	case schema.EndpointCountries:
		return c.base + "/" + string(req.Endpoint), nil
	case schema.EndpointOverview, schema.EndpointSimilar:
		return c.base + "/" + string(req.Endpoint) + "?url=" + url.QueryEscape(req.Domain), nil
	default:
		return "", fmt.Errorf("atlas: unknown endpoint %q (want %s, %s or %s)", req.Endpoint,
			schema.EndpointOverview, schema.EndpointSimilar, schema.EndpointCountries)
	}
}

// attempt makes one HTTP attempt: reserve credits, wait for a token, send, classify.
func (c *Client) attempt(ctx context.Context, req model.Request, refetch bool) outcome {
	ctx, endAbortable := c.abortable(ctx) // abort.go: a signal's grace ends the wait for an answer
	defer endAbortable()
	target, err := c.requestURL(req)
	if err != nil {
		return outcome{err: err}
	}
	if err := ctx.Err(); err != nil {
		return outcome{err: err}
	}
	if err := c.admit(ctx, refetch); err != nil {
		return outcome{err: err}
	}
	if err := c.waitTurn(ctx); err != nil {
		c.unreserve(refetch)
		return outcome{err: err}
	}
	if err := c.passFence(ctx); err != nil {
		c.unreserve(refetch)
		return outcome{err: err}
	}

	actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	tr := &connTrace{}
	hreq, err := http.NewRequestWithContext(httptrace.WithClientTrace(actx, tr.hooks()), http.MethodGet, target, nil)
	if err != nil {
		c.unreserve(refetch)
		return outcome{err: fmt.Errorf("atlas: build request for %s %q: %s", req.Endpoint, req.Domain, c.secrets.redact(err.Error()))}
	}
	c.setHeaders(hreq)
	sentAt := c.clock.Now()
	c.count(func(s *model.Stats) { s.Requests++ })
	if c.onSend != nil {
		c.onSend(sentAt)
	}
	resp, err := c.hc.Do(hreq)
	if err != nil {
		out := c.noAnswer(ctx, actx, req, err, tr)
		c.observe(nil, 0, sentAt, &out)
		return out
	}
	defer func() { _ = resp.Body.Close() }() // the body was read as far as needed
	out := c.answer(ctx, actx, req, hreq, resp)
	c.log.Debug("atlas answer", "endpoint", req.Endpoint, "domain", req.Domain, "status", resp.StatusCode,
		"latency", c.clock.Now().Sub(sentAt))
	// Release the reservation, record the headers and the charge and (for a stop reason)
	// stop, in one step, so no other call can start on a balance a fatal answer reported.
	c.observe(resp.Header, resp.StatusCode, sentAt, &out)
	return out
}

// noAnswer classifies an attempt that got no HTTP answer.
func (c *Client) noAnswer(ctx, actx context.Context, req model.Request, err error, tr *connTrace) outcome {
	at := c.clock.Now().UTC()
	e := c.newError(req, 0, "", "")
	e.Message = c.transportMessage(err)
	stage, wrote := tr.result(err)
	c.mu.Lock()
	first := !c.seenResponse
	c.mu.Unlock()
	switch {
	case isCertificateError(err) && first:
		return outcome{sent: true, kind: outcomeFatal, at: at, err: &UnreachableError{Stage: StageTLS, Host: c.host(),
			BaseURL: c.baseURL, Err: fmt.Errorf("%w: %s", model.ErrUntrustedCertificate, e.Message)}}
	case isCertificateError(err):
		// Retrying cannot make an untrusted certificate trusted: stop at once.
		e.Err = model.ErrUntrustedCertificate
		return outcome{sent: true, kind: outcomeFatal, at: at, err: e}
	case ctx.Err() != nil:
		return outcome{sent: true, kind: outcomeCanceled, at: at, maybeCharged: wrote,
			err: fmt.Errorf("atlas fetch %s %q: %w", req.Endpoint, req.Domain, ctx.Err())}
	case stage != "" && !wrote && first:
		// Nothing answers at api.base_url: retrying will not make it appear.
		return outcome{sent: true, kind: outcomeFatal, at: at,
			err: &UnreachableError{Stage: stage, Host: c.host(), BaseURL: c.baseURL, Err: errors.New(e.Message)}}
	case actx.Err() != nil:
		e.Message = fmt.Sprintf("no answer within %s (api.timeout)", c.cfg.Timeout)
	}
	e.Err = model.ErrServer
	return outcome{sent: true, kind: outcomeTransient, at: at, maybeCharged: wrote, err: e}
}

func (c *Client) host() string {
	u, err := url.Parse(c.base)
	if err != nil {
		return ""
	}
	return u.Host
}

// connTrace records whether the request was written (after which the server may charge
// it) and which connection stage failed.
type connTrace struct {
	mu        sync.Mutex
	wrote     bool
	connected bool
	stage     string
}

func (t *connTrace) hooks() *httptrace.ClientTrace {
	set := func(f func()) {
		t.mu.Lock()
		f()
		t.mu.Unlock()
	}
	return &httptrace.ClientTrace{
		DNSDone: func(i httptrace.DNSDoneInfo) {
			if i.Err != nil {
				set(func() { t.stage = StageDNS })
			}
		},
		// A dial after a write means the transport is retrying a request it sent on a
		// reused connection the server had already closed: that write reached no one.
		ConnectStart: func(_, _ string) { set(func() { t.wrote = false }) },
		ConnectDone: func(_, _ string, err error) {
			set(func() {
				if err == nil {
					t.connected = true
				} else if !t.connected {
					t.stage = StageTCP
				}
			})
		},
		TLSHandshakeDone: func(_ tls.ConnectionState, err error) {
			if err != nil {
				set(func() { t.stage = StageTLS })
			}
		},
		GotConn:      func(httptrace.GotConnInfo) { set(func() { t.stage = "" }) },
		WroteRequest: func(httptrace.WroteRequestInfo) { set(func() { t.wrote = true }) },
	}
}

// result returns the failed connection stage ("" if the connection was made) and whether
// the request was written. Without trace events (a custom transport) it classifies err.
func (t *connTrace) result(err error) (stage string, wrote bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.wrote {
		return "", true
	}
	if t.stage != "" {
		return t.stage, false
	}
	var dnsErr *net.DNSError
	var opErr *net.OpError
	var recErr tls.RecordHeaderError
	switch {
	case errors.As(err, &dnsErr):
		return StageDNS, false
	case errors.As(err, &recErr), isCertificateError(err):
		return StageTLS, false
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return StageTCP, false
	}
	return "", false
}

// answer reads and classifies an HTTP answer.
func (c *Client) answer(ctx, actx context.Context, req model.Request, hreq *http.Request, resp *http.Response) outcome {
	if resp.StatusCode == http.StatusOK {
		return c.readOK(ctx, actx, req, resp)
	}
	at := c.clock.Now().UTC()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	eb := parseErrorBody(body)
	e := c.newError(req, resp.StatusCode, eb.code, eb.message)
	out := outcome{sent: true, at: at, err: e}
	switch s := resp.StatusCode; {
	case s == http.StatusBadRequest:
		e.Err = map[string]error{"INVALID_DOMAIN": model.ErrInvalidDomain, "MISSING_PARAMETER": model.ErrMissingParameter}[eb.code]
		if e.Err == nil {
			e.Err = model.ErrBadRequest
		}
		out.kind = outcomePermanent
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		e.Err, out.kind = model.ErrUnauthorized, outcomeFatal
	case s == http.StatusPaymentRequired:
		e.RemainingBalance = eb.remainingBalance
		e.Err, out.kind = model.ErrOutOfCredits, outcomeFatal
	case s == http.StatusNotFound || s == http.StatusMethodNotAllowed || s == http.StatusRequestEntityTooLarge:
		e.Message = strings.TrimSuffix(fmt.Sprintf("GET %s answered %d: %s", c.redactedPath(hreq.URL), s, e.Message), ": ")
		e.Err, out.kind = model.ErrMisconfigured, outcomeFatal
	case s >= 300 && s < 400:
		e.Message = fmt.Sprintf("GET %s was redirected to %q", c.redactedPath(hreq.URL), secret.RedactURL(c.secrets.redact(resp.Header.Get("Location"))))
		e.Err, out.kind = model.ErrMisconfigured, outcomeFatal
	case s == http.StatusTooManyRequests && c.quotaExhausted(resp.Header):
		// The listing's monthly quota is used up: waiting seconds will not help.
		e.Message = strings.TrimSuffix("marketplace monthly quota exhausted: "+e.Message, ": ")
		e.Err, out.kind = model.ErrOutOfCredits, outcomeFatal
	case s == http.StatusTooManyRequests:
		d := c.retryAfter(resp.Header.Get("Retry-After"))
		e.RetryAfter, e.Err, out.kind = d, model.ErrRateLimited, outcomeRateLimited
		c.count(func(s *model.Stats) { s.RateLimited++ })
		c.log.Warn("atlas rate limited: pausing every request", "endpoint", req.Endpoint, "domain", req.Domain, "pause", d)
		c.pause(d, e)
	case s >= 500 || s == http.StatusRequestTimeout || s == http.StatusTooEarly:
		// 502 and 504 are refunded, so retrying them is free; a 500 is not charged either.
		if ra := resp.Header.Get("Retry-After"); ra != "" {
			out.retryAfter = c.retryAfter(ra)
		}
		e.Err, out.kind = model.ErrServer, outcomeTransient
	default:
		e.Err, out.kind = model.ErrBadRequest, outcomePermanent
	}
	return out
}

// quotaExhausted tells whether a 429 of the marketplace says its monthly quota is used up
// (x-ratelimit-requests-remaining: 0), not that a second's rate was exceeded.
func (c *Client) quotaExhausted(h http.Header) bool {
	return c.cfg.Mode == ModeMarketplace && strings.TrimSpace(h.Get("X-Ratelimit-Requests-Remaining")) == "0"
}

// maxErrorBody bounds what is read of an error answer: the API's are a few hundred bytes.
const maxErrorBody = 64 << 10

// readOK reads, checks and decodes a 200 body, once. A 200 was charged (observe counts it),
// so a refetch of a broken one costs another credit: each call gets at most one, within
// the run's waste budget.
func (c *Client) readOK(ctx, actx context.Context, req model.Request, resp *http.Response) outcome {
	e := c.newError(req, resp.StatusCode, "", "")
	e.Err = model.ErrServer
	broken := func(msg string) outcome {
		e.Message = msg
		return outcome{sent: true, kind: outcomeTransient, maybeCharged: true, at: c.clock.Now().UTC(), err: e}
	}
	refused := func(code, msg string, sentinel error) outcome {
		e.Code, e.Message, e.Err = code, msg, sentinel
		return outcome{sent: true, kind: outcomePermanent, at: c.clock.Now().UTC(), err: e}
	}
	tooLarge := fmt.Sprintf("body larger than %d bytes", c.cfg.MaxBodyBytes)
	if resp.ContentLength > c.cfg.MaxBodyBytes {
		return refused("BODY_TOO_LARGE", fmt.Sprintf("body of %d bytes, larger than %d", resp.ContentLength, c.cfg.MaxBodyBytes), model.ErrBodyTooLarge)
	}
	body, held, err := c.readBody(actx, resp.Body, resp.ContentLength)
	switch {
	case errors.Is(err, errTooLarge):
		return refused("BODY_TOO_LARGE", tooLarge, model.ErrBodyTooLarge)
	case err != nil && ctx.Err() != nil:
		return outcome{sent: true, kind: outcomeCanceled, at: c.clock.Now().UTC(),
			err: fmt.Errorf("atlas fetch %s %q: %w", req.Endpoint, req.Domain, ctx.Err())}
	case err != nil && actx.Err() != nil:
		return broken(fmt.Sprintf("body not complete within %s (api.timeout)", c.cfg.Timeout))
	case err != nil:
		return broken("reading the body: " + c.transportMessage(err))
	}
	out := outcome{sent: true, kind: outcomeOK, at: c.clock.Now().UTC(), body: body, held: held}
	if c.secrets.in(body) {
		c.releaseBytes(held)
		return refused("SECRET_IN_BODY", "", model.ErrSecretInBody)
	}
	ct := c.secrets.redact(resp.Header.Get("Content-Type"))
	if err := c.decode(req.Endpoint, &out); err != nil {
		c.releaseBytes(held)
		switch {
		case !isJSONType(ct):
			return broken(fmt.Sprintf("200 answer with content type %q instead of JSON (a proxy or error page?)", ct))
		case errors.Is(err, schema.ErrLegacyV1):
			// The sentinel already says what happened and what to do.
			e.Err = schema.ErrLegacyV1
			return outcome{sent: true, kind: outcomeFatal, at: out.at, err: e}
		case isDrift(err):
			// Well-formed JSON of the wrong shape comes back the same on every try: a retry
			// would only spend another credit.
			return refused("", "malformed 200 body: "+c.secrets.redact(err.Error()), model.ErrSchemaDrift)
		}
		return broken("malformed 200 body: " + c.secrets.redact(err.Error()))
	}
	if !isJSONType(ct) {
		// The credit is spent and the body is a valid v2 answer: keep it rather than pay again.
		c.log.Warn("200 answer with a non-JSON content type but a valid body; kept",
			"endpoint", string(req.Endpoint), "domain", req.Domain, "content_type", ct)
	}
	return out
}

// decode decodes out.body as the answer of endpoint into the matching field of out, with
// the fast decoders (which fall back to encoding/json, same values and errors).
func (c *Client) decode(endpoint schema.Endpoint, out *outcome) error {
	var err error
	switch endpoint {
	case schema.EndpointOverview:
		out.overview, err = schema.DecodeOverviewFast(out.body)
	case schema.EndpointSimilar:
		out.similar, err = schema.DecodeSimilarFast(out.body)
	case schema.EndpointCountries:
		out.countries, err = schema.DecodeCountries(out.body)
	default:
		err = fmt.Errorf("unknown endpoint %q", endpoint)
	}
	return err
}

var errTooLarge = errors.New("body too large")

// readBody reads r whole. Before reading it takes from the in-flight budget all the room
// the body may need (Content-Length when known, else the per-body cap) and gives back the
// rest once the body is read: a call never waits for room while holding some, so readers
// cannot deadlock each other. It returns the body and the bytes it holds in the budget; on
// error it holds none. A body over MaxBodyBytes is errTooLarge.
func (c *Client) readBody(ctx context.Context, r io.Reader, contentLength int64) ([]byte, int64, error) {
	limit := c.cfg.MaxBodyBytes
	want, initial := limit+1, int64(64<<10)
	if contentLength >= 0 {
		want, initial = contentLength+1, contentLength+1 // +1: the read that meets EOF needs room
	}
	if err := c.acquireBytes(ctx, want); err != nil {
		return nil, 0, err
	}
	buf := bytes.NewBuffer(make([]byte, 0, min(initial, want)))
	_, err := buf.ReadFrom(io.LimitReader(r, limit+1))
	switch {
	case err != nil:
		c.releaseBytes(want)
		return nil, 0, err
	case int64(buf.Len()) > limit:
		c.releaseBytes(want)
		return nil, 0, errTooLarge
	}
	body := buf.Bytes()
	held := min(int64(len(body)), want)
	c.releaseBytes(want - held)
	return body, held, nil
}

func isJSONType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

func (c *Client) setHeaders(r *http.Request) {
	r.Header.Set("Accept", "application/json")
	r.Header.Set("User-Agent", "sitewatch-atlas/1")
	switch c.cfg.Mode {
	case ModeMarketplace:
		r.Header.Set("x-marketplace-host", c.cfg.MarketplaceHost)
		r.Header.Set("x-marketplace-key", c.cfg.MarketplaceKey)
		if c.cfg.APIKey != "" {
			r.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
		}
	default:
		if c.cfg.UseXAPIKey {
			r.Header.Set("X-API-Key", c.cfg.APIKey)
		} else {
			r.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
		}
	}
}

// observe releases the attempt's credit reservation, stops the client if the outcome is a
// stop reason, and records what the answer says: the charge (out.charged is set), credits
// and quota remaining, and the server's rate limit. h is nil when no answer arrived.
func (c *Client) observe(h http.Header, status int, sentAt time.Time, out *outcome) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.broadcastLocked()
	c.inflight--
	c.stats.ByStatus[status]++
	if out.kind == outcomeFatal {
		c.stopLocked(out.err)
	}
	if h == nil {
		if out.maybeCharged {
			c.stats.Unanswered++
		}
		return
	}
	c.seenResponse = true
	if status == http.StatusOK {
		c.chargeLocked(h, out)
	}
	if out.kind == outcomeFatal && status != http.StatusOK && status != http.StatusPaymentRequired {
		// A 401, 404, ... carries no trustworthy balance (the gateway did not look it up).
		return
	}
	balance, okBalance := headerInt(h, "X-Gateway-Remaining-Credits")
	// Answers may arrive out of order; the lowest balance seen is the freshest (and the
	// safe one), so a stale answer never raises the known balance.
	if okBalance && (c.remaining < 0 || balance < c.remaining) {
		c.remaining = balance
	}
	quota, okQuota := headerInt(h, "X-Ratelimit-Requests-Remaining")
	if okQuota && (c.quota < 0 || quota < c.quota) {
		c.quota = quota
	}
	if status == http.StatusOK && c.cfg.MinCredits > 0 && !okBalance && !okQuota && c.stopErr == nil {
		// Fail closed: with a reserve, spending on without knowing the balance could break it.
		c.blind = true
		c.stopLocked(&model.Error{Op: "start", Message: fmt.Sprintf("X-Gateway-Remaining-Credits was %q",
			c.secrets.redact(clip(h.Get("X-Gateway-Remaining-Credits"), 40))), Err: model.ErrBalanceUnknown})
	}
	c.followRateLimitLocked(h, sentAt)
}

// chargeLocked counts a 200's charge: X-Gateway-Credit-Cost, or the specified 1 when the
// header is missing or unreadable; the highest cost seen becomes what one call reserves.
func (c *Client) chargeLocked(h http.Header, out *outcome) {
	cost := int64(1)
	if v, ok := headerInt(h, "X-Gateway-Credit-Cost"); ok && v >= 0 {
		cost = v
	}
	out.charged = cost
	c.stats.CreditsSpent += cost
	c.unitCost = max(c.unitCost, cost)
	if out.kind == outcomeOK {
		c.recoverLocked()
	} else {
		c.stats.WastedCredits += cost
	}
}

// followRateLimitLocked follows the server's X-RateLimit-Limit (down, and back up to the
// configured ceiling); a limit below model.MinServerRateLimit stops the client.
func (c *Client) followRateLimitLocked(h http.Header, sentAt time.Time) {
	v, ok := headerFloat(h, "X-RateLimit-Limit")
	if !ok || sentAt.Before(c.limitFrom) {
		return
	}
	if v < model.MinServerRateLimit {
		c.stopLocked(&model.Error{Op: "start", Message: fmt.Sprintf("X-RateLimit-Limit is %g requests/s", v), Err: model.ErrServerRateLimit})
		return
	}
	c.limitFrom = sentAt
	if want := min(v, c.cfg.RateLimit); want != c.limit {
		c.log.Info("atlas rate limit changed", "from", c.limit, "to", want, "server_limit", v, "configured", c.cfg.RateLimit)
		c.limit = want
		c.limiter.SetLimitAt(c.clock.Now(), bucketRate(want*c.slow))
	}
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// headerFloat reads a finite numeric header.
func headerFloat(h http.Header, name string) (float64, bool) {
	v, err := strconv.ParseFloat(strings.TrimSpace(h.Get(name)), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// headerInt reads a numeric header; a fraction rounds down (the safe side for a balance).
// Missing, unreadable, infinite or out-of-range values are not ok.
func headerInt(h http.Header, name string) (int64, bool) {
	s := strings.TrimSpace(h.Get(name))
	if s == "" {
		return 0, false
	}
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return v, true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || f >= math.MaxInt64 || f <= math.MinInt64 {
		return 0, false
	}
	return int64(math.Floor(f)), true
}

// retryAfter parses Retry-After (delta seconds or HTTP date), bounds it by MaxRetryAfter
// before converting (so 1e10 cannot overflow into a short pause) and adds up to 20% jitter
// so paused clients do not return in lockstep.
func (c *Client) retryAfter(v string) time.Duration {
	d := time.Second
	v = strings.TrimSpace(v)
	if n, err := strconv.ParseFloat(v, 64); err == nil && !math.IsNaN(n) {
		switch {
		case n <= 0:
			d = 0
		case n >= c.cfg.MaxRetryAfter.Seconds():
			d = c.cfg.MaxRetryAfter
		default:
			d = time.Duration(n * float64(time.Second))
		}
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(c.clock.Now())
	}
	d = min(max(d, 0), c.cfg.MaxRetryAfter)
	return d + time.Duration(rand.Int64N(int64(d/5)+int64(20*time.Millisecond)))
}

type errorBody struct {
	code, message    string
	remainingBalance *float64
}

// parseErrorBody reads the three error body shapes of the spec: nested validation
// errors, flat gateway errors and {detail}/{messages, info}.
func parseErrorBody(b []byte) errorBody {
	var raw struct {
		Error            json.RawMessage `json:"error"`
		Message          string          `json:"message"`
		Detail           string          `json:"detail"`
		Messages         string          `json:"messages"`
		Info             string          `json:"info"`
		RemainingBalance *float64        `json:"remainingBalance"`
	}
	var out errorBody
	if json.Unmarshal(b, &raw) != nil {
		return out
	}
	out.remainingBalance = raw.RemainingBalance
	var nested struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	var title string
	if json.Unmarshal(raw.Error, &nested) == nil && nested.Code != "" {
		out.code, out.message = nested.Code, nested.Message
	} else if json.Unmarshal(raw.Error, &title) == nil {
		out.code = title
	}
	if out.message == "" {
		out.message = firstNonEmpty(raw.Message, raw.Detail, strings.TrimSpace(raw.Messages+" "+raw.Info))
	}
	return out
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func (c *Client) newError(req model.Request, status int, code, message string) *model.Error {
	const maxMsg = 300
	message = c.secrets.redact(strings.TrimSpace(message))
	if len(message) > maxMsg {
		message = message[:maxMsg] + "…"
	}
	return &model.Error{Op: "fetch", Domain: req.Domain, Endpoint: req.Endpoint, Status: status,
		Code: clip(c.secrets.redact(code), 80), Message: message}
}

// transportMessage describes a transport error without the request URL's query noise
// and without any key.
func (c *Client) transportMessage(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return c.secrets.redact(err.Error())
}

func (c *Client) redactedPath(u *url.URL) string {
	return c.secrets.redact(secret.RedactURL(u.String()))
}

// isDrift tells a body that parsed but does not fit the v2 schema (a field of another type, a
// status other than "success") from one that was cut short or is not JSON at all.
func isDrift(err error) bool {
	var typeErr *json.UnmarshalTypeError
	return errors.As(err, &typeErr) || errors.Is(err, schema.ErrNotSuccess)
}

// isCertificateError tells a TLS certificate the client does not trust (unknown authority,
// wrong host name, expired) from a transient network failure.
func isCertificateError(err error) bool {
	var verr *tls.CertificateVerificationError
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	return errors.As(err, &verr) || errors.As(err, &unknown) || errors.As(err, &host) || errors.As(err, &invalid)
}
