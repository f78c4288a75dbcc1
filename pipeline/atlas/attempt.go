package atlas

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"

	"sitewatch/schema"
)

type outcomeKind int

const (
	outcomeOK          outcomeKind = iota
	outcomePermanent               // this request failed for good (400)
	outcomeFatal                   // stop the client (401, 402, 404, 405, 413, 3xx, legacy v1)
	outcomeRateLimited             // 429: retry after the pause
	outcomeTransient               // 5xx, time-out, reset, broken 200: retry with backoff
	outcomeCanceled                // the caller's context ended
)

type outcome struct {
	sent bool // an HTTP attempt was made (false: stopped or canceled before sending)
	kind outcomeKind
	body []byte
	at   time.Time
	err  error
}

func (c *Client) newBackoff() backoff.BackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = c.cfg.RetryInitial
	b.MaxInterval = c.cfg.RetryMax
	b.RandomizationFactor = 0.5
	b.Multiplier = 2
	b.MaxElapsedTime = 0 // bounded by MaxAttempts instead
	b.Reset()
	return b
}

func (c *Client) requestURL(req Request) (string, error) {
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

// attempt makes one HTTP attempt: reserve a credit, wait for a token, send, classify.
func (c *Client) attempt(ctx context.Context, req Request) outcome {
	target, err := c.requestURL(req)
	if err != nil {
		return outcome{err: err}
	}
	if err := ctx.Err(); err != nil {
		return outcome{err: err}
	}
	if err := c.admit(ctx); err != nil {
		return outcome{err: err}
	}
	if err := c.waitTurn(ctx); err != nil {
		c.unreserve()
		return outcome{err: err}
	}

	actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(actx, http.MethodGet, target, nil)
	if err != nil {
		c.unreserve()
		return outcome{err: fmt.Errorf("atlas: build request for %s %q: %s", req.Endpoint, req.Domain, c.redact.Replace(err.Error()))}
	}
	c.setHeaders(hreq)
	sentAt := time.Now()
	c.count(func(s *Stats) { s.Requests++ })
	if c.onSend != nil {
		c.onSend(sentAt)
	}
	resp, err := c.hc.Do(hreq)
	at := time.Now().UTC()
	if err != nil {
		e := c.newError(req, 0, "", "")
		if isCertificateError(err) {
			// Retrying cannot make an untrusted certificate trusted: stop at once.
			e.Message, e.Err = c.transportMessage(err), ErrUntrustedCertificate
			c.observe(nil, 0, sentAt, e)
			return outcome{sent: true, kind: outcomeFatal, at: at, err: e}
		}
		c.observe(nil, 0, sentAt, nil)
		switch {
		case ctx.Err() != nil:
			return outcome{sent: true, kind: outcomeCanceled, at: at,
				err: fmt.Errorf("atlas fetch %s %q: %w", req.Endpoint, req.Domain, ctx.Err())}
		case actx.Err() != nil:
			e.Message = fmt.Sprintf("no answer within %s (api.timeout)", c.cfg.Timeout)
		default:
			e.Message = c.transportMessage(err)
		}
		e.Err = ErrServer
		return outcome{sent: true, kind: outcomeTransient, at: at, err: e}
	}
	defer resp.Body.Close()
	out := c.answer(ctx, actx, req, hreq, resp, at)
	c.log.Debug("atlas answer", "endpoint", req.Endpoint, "domain", req.Domain, "status", resp.StatusCode,
		"latency", time.Since(sentAt))
	// Release the reservation, record the headers and (for a stop reason) stop, in one
	// step, so no other call can start on a balance a fatal answer reported.
	var stopErr error
	if out.kind == outcomeFatal {
		stopErr = out.err
	}
	c.observe(resp.Header, resp.StatusCode, sentAt, stopErr)
	return out
}

// answer reads and classifies an HTTP answer.
func (c *Client) answer(ctx, actx context.Context, req Request, hreq *http.Request, resp *http.Response, at time.Time) outcome {
	if resp.StatusCode == http.StatusOK {
		return c.readOK(ctx, actx, req, resp, at)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	eb := parseErrorBody(body)
	e := c.newError(req, resp.StatusCode, eb.code, eb.message)
	switch s := resp.StatusCode; {
	case s == http.StatusBadRequest:
		switch eb.code {
		case "INVALID_DOMAIN":
			e.Err = ErrInvalidDomain
		case "MISSING_PARAMETER":
			e.Err = ErrMissingParameter
		default:
			e.Err = ErrBadRequest
		}
		return outcome{sent: true, kind: outcomePermanent, at: at, err: e}
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		e.Err = ErrUnauthorized
		return outcome{sent: true, kind: outcomeFatal, at: at, err: e}
	case s == http.StatusPaymentRequired:
		e.RemainingBalance = eb.remainingBalance
		e.Err = ErrOutOfCredits
		return outcome{sent: true, kind: outcomeFatal, at: at, err: e}
	case s == http.StatusNotFound || s == http.StatusMethodNotAllowed || s == http.StatusRequestEntityTooLarge:
		e.Message = strings.TrimSuffix(fmt.Sprintf("GET %s answered %d: %s", c.redactedPath(hreq.URL), s, e.Message), ": ")
		e.Err = ErrMisconfigured
		return outcome{sent: true, kind: outcomeFatal, at: at, err: e}
	case s >= 300 && s < 400:
		e.Message = fmt.Sprintf("GET %s was redirected to %q", c.redactedPath(hreq.URL), c.redact.Replace(resp.Header.Get("Location")))
		e.Err = ErrMisconfigured
		return outcome{sent: true, kind: outcomeFatal, at: at, err: e}
	case s == http.StatusTooManyRequests && c.cfg.Mode == ModeMarketplace &&
		strings.TrimSpace(resp.Header.Get("X-Ratelimit-Requests-Remaining")) == "0":
		// The listing's monthly quota is used up: waiting seconds will not help.
		e.Message = strings.TrimSuffix("marketplace monthly quota exhausted: "+e.Message, ": ")
		e.Err = ErrOutOfCredits
		return outcome{sent: true, kind: outcomeFatal, at: at, err: e}
	case s == http.StatusTooManyRequests:
		d := c.retryAfter(resp.Header.Get("Retry-After"))
		e.RetryAfter = d
		e.Err = ErrRateLimited
		c.pause(d)
		c.count(func(s *Stats) { s.RateLimited++ })
		c.log.Warn("atlas rate limited: pausing every request", "endpoint", req.Endpoint, "domain", req.Domain, "pause", d)
		return outcome{sent: true, kind: outcomeRateLimited, at: at, err: e}
	case s >= 500 || s == http.StatusRequestTimeout || s == http.StatusTooEarly:
		// 502 and 504 are refunded, so retrying them is free; a 500 is not charged either.
		e.Err = ErrServer
		return outcome{sent: true, kind: outcomeTransient, at: at, err: e}
	default:
		e.Err = ErrBadRequest
		return outcome{sent: true, kind: outcomePermanent, at: at, err: e}
	}
}

// readOK reads and validates a 200 body. A 200 was charged (observe counted it), so a
// retry of a broken one costs another credit; the credit accounting already includes it.
func (c *Client) readOK(ctx, actx context.Context, req Request, resp *http.Response, at time.Time) outcome {
	e := c.newError(req, resp.StatusCode, "", "")
	e.Err = ErrServer
	ct := resp.Header.Get("Content-Type")
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBodyBytes+1))
	at = time.Now().UTC()
	switch {
	case err != nil && ctx.Err() != nil:
		return outcome{sent: true, kind: outcomeCanceled, at: at,
			err: fmt.Errorf("atlas fetch %s %q: %w", req.Endpoint, req.Domain, ctx.Err())}
	case err != nil && actx.Err() != nil:
		e.Message = fmt.Sprintf("body not complete within %s (api.timeout)", c.cfg.Timeout)
		return outcome{sent: true, kind: outcomeTransient, at: at, err: e}
	case err != nil:
		e.Message = "reading the body: " + c.transportMessage(err)
		return outcome{sent: true, kind: outcomeTransient, at: at, err: e}
	case len(body) > maxBodyBytes:
		e.Message = fmt.Sprintf("body larger than %d bytes", maxBodyBytes)
		return outcome{sent: true, kind: outcomeTransient, at: at, err: e}
	}
	jsonType := isJSONType(ct)
	if err := schema.Validate(req.Endpoint, body); err != nil {
		if !jsonType {
			e.Message = fmt.Sprintf("200 answer with content type %q instead of JSON (a proxy or error page?)", ct)
			return outcome{sent: true, kind: outcomeTransient, at: at, err: e}
		}
		if errors.Is(err, schema.ErrLegacyV1) {
			// The sentinel already says what happened and what to do.
			e.Err = schema.ErrLegacyV1
			return outcome{sent: true, kind: outcomeFatal, at: at, err: e}
		}
		e.Message = "malformed 200 body: " + c.redact.Replace(err.Error())
		if isDrift(err) {
			// Well-formed JSON of the wrong shape comes back the same on every try: a retry
			// would only spend another credit.
			e.Err = ErrSchemaDrift
			return outcome{sent: true, kind: outcomePermanent, at: at, err: e}
		}
		return outcome{sent: true, kind: outcomeTransient, at: at, err: e}
	}
	if !jsonType {
		// The credit is spent and the body is a valid v2 answer: keep it rather than pay again.
		c.log.Warn("200 answer with a non-JSON content type but a valid body; kept",
			"endpoint", string(req.Endpoint), "domain", req.Domain, "content_type", ct)
	}
	return outcome{sent: true, kind: outcomeOK, body: body, at: at}
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

// observe releases the attempt's credit reservation, stops the client if stopErr is set,
// and records what the answer's headers say: credits charged and remaining, marketplace
// quota, and the server's rate limit. h is nil when no answer arrived.
func (c *Client) observe(h http.Header, status int, sentAt time.Time, stopErr error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.broadcastLocked()
	c.inflight--
	if stopErr != nil {
		c.stopLocked(stopErr)
	}
	if h == nil {
		c.stats.Unanswered++
		return
	}
	c.seenResponse = true
	if stopErr != nil && status != http.StatusPaymentRequired {
		// A 401, 404, ... carries no trustworthy balance (the gateway did not look it up).
		return
	}
	if status == http.StatusOK {
		cost := int64(1) // the spec: every successful call costs 1 credit
		if v, ok := headerInt(h, "X-Gateway-Credit-Cost"); ok && v >= 0 {
			cost = v
		}
		c.stats.CreditsSpent += cost
		c.recoverLocked()
	}
	// Answers may arrive out of order; the lowest balance seen is the freshest (and the
	// safe one), so a stale answer never raises the known balance.
	if v, ok := headerInt(h, "X-Gateway-Remaining-Credits"); ok && (c.remaining < 0 || v < c.remaining) {
		c.remaining = v
	}
	if v, ok := headerInt(h, "X-Ratelimit-Requests-Remaining"); ok && (c.quota < 0 || v < c.quota) {
		c.quota = v
	}
	if s := h.Get("X-RateLimit-Limit"); s != "" {
		if v, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil && v > 0 && !sentAt.Before(c.limitFrom) {
			c.limitFrom = sentAt
			if want := min(v, c.cfg.RateLimit); want != c.limit {
				c.log.Info("atlas rate limit changed", "from", c.limit, "to", want, "server_limit", v, "configured", c.cfg.RateLimit)
				c.limit = want
				c.limiter.SetLimit(bucketRate(want * c.slow))
			}
		}
	}
}

func headerInt(h http.Header, name string) (int64, bool) {
	s := strings.TrimSpace(h.Get(name))
	if s == "" {
		return 0, false
	}
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return v, true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != f {
		return 0, false
	}
	return int64(f), true // a fractional balance: round down, the safe side
}

// retryAfter parses Retry-After (delta seconds or HTTP date), bounds it by MaxRetryAfter
// and adds up to 20% jitter so paused clients do not return in lockstep.
func (c *Client) retryAfter(v string) time.Duration {
	d := time.Second
	v = strings.TrimSpace(v)
	if n, err := strconv.ParseFloat(v, 64); err == nil && n >= 0 {
		d = time.Duration(n * float64(time.Second))
	} else if t, err := http.ParseTime(v); err == nil {
		d = time.Until(t)
	}
	if d < 0 {
		d = 0
	}
	d = min(d, c.cfg.MaxRetryAfter)
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

func (c *Client) newError(req Request, status int, code, message string) *Error {
	const maxMsg = 300
	message = c.redact.Replace(strings.TrimSpace(message))
	if len(message) > maxMsg {
		message = message[:maxMsg] + "…"
	}
	return &Error{Op: "fetch", Domain: req.Domain, Endpoint: req.Endpoint, Status: status,
		Code: c.redact.Replace(code), Message: message}
}

// transportMessage describes a transport error without the request URL's query noise
// and without any key.
func (c *Client) transportMessage(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return c.redact.Replace(err.Error())
}

func (c *Client) redactedPath(u *url.URL) string {
	v := *u
	v.RawQuery = ""
	return c.redact.Replace(v.Redacted())
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
