package atlas

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"time"

	"sitewatch/pipeline/model"
	"sitewatch/schema"
)

// Probe is what the free preflight learned: the server's view of the key, the wallet and
// the rate limit. Unknown numbers are -1 (RateLimit 0).
type Probe struct {
	Status         int           // HTTP status of the answer (400 MISSING_PARAMETER when all is well)
	Balance        int64         // X-Gateway-Remaining-Credits; -1 unknown
	RateLimit      float64       // X-RateLimit-Limit in requests/s; 0 unknown
	QuotaLimit     int64         // x-ratelimit-requests-limit (marketplace monthly quota); -1 unknown
	QuotaRemaining int64         // x-ratelimit-requests-remaining; -1 unknown
	QuotaReset     time.Time     // x-ratelimit-requests-reset (epoch seconds); zero unknown
	Latency        time.Duration // from sending to the answer's headers
}

// Probe makes the free preflight call: a site overview request without its url parameter.
// The API checks the key and the wallet first, then answers 400 MISSING_PARAMETER with
// the usual headers and charges nothing. It returns what the headers say, and an error:
// model.ErrUnauthorized (401/403), model.ErrOutOfCredits (402, Probe.Balance and
// model.Error.RemainingBalance set; or a marketplace 429 saying the monthly quota is used up),
// *UnreachableError (DNS, TCP or TLS failed), model.ErrMisconfigured (an answer other than the
// expected 400, e.g. 404 from a wrong base URL or mode), model.ErrRateLimited (another 429) or
// model.ErrServer (5xx, no answer in time). Probe ignores the client's stop state and pacing.
func (c *Client) Probe(ctx context.Context) (Probe, error) {
	p := Probe{Balance: -1, QuotaLimit: -1, QuotaRemaining: -1}
	req := model.Request{Endpoint: schema.EndpointOverview}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	tr := &connTrace{}
	hreq, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, tr.hooks()), http.MethodGet,
		c.base+"/"+string(schema.EndpointOverview), nil)
	if err != nil {
		return p, fmt.Errorf("atlas probe: build request: %s", c.secrets.redact(err.Error()))
	}
	c.setHeaders(hreq)
	start := time.Now()
	c.count(func(s *model.Stats) { s.Requests++ })
	resp, err := c.hc.Do(hreq)
	if err != nil {
		c.count(func(s *model.Stats) { s.ByStatus[0]++ })
		return p, c.probeFailure(ctx, req, err, tr)
	}
	defer func() { _ = resp.Body.Close() }() // the body was read as far as needed
	p.Latency = time.Since(start)
	c.count(func(s *model.Stats) { s.ByStatus[resp.StatusCode]++ })
	p.readHeaders(resp.Header)
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	eb := parseErrorBody(body)
	e := c.newError(req, resp.StatusCode, eb.code, eb.message)
	e.Op = "probe"
	p.Status = resp.StatusCode
	switch s := resp.StatusCode; {
	case s == http.StatusBadRequest && eb.code == "MISSING_PARAMETER":
		c.learn(resp.Header, start)
		return p, nil
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		e.Err = model.ErrUnauthorized
	case s == http.StatusPaymentRequired:
		e.RemainingBalance, e.Err = eb.remainingBalance, model.ErrOutOfCredits
		if p.Balance < 0 && eb.remainingBalance != nil {
			p.Balance = int64(*eb.remainingBalance)
		}
	case s == http.StatusTooManyRequests && c.quotaExhausted(resp.Header):
		// The listing answers every request so once its quota is used up, the free probe too:
		// the source has nothing to pay with (a run's plan gives it no call; check says so),
		// which no wait and no lower api.rate_limit changes.
		e.Message = strings.TrimSuffix("marketplace monthly quota exhausted: "+e.Message, ": ")
		e.Err = model.ErrOutOfCredits
	case s == http.StatusTooManyRequests:
		e.RetryAfter, e.Err = c.retryAfter(resp.Header.Get("Retry-After")), model.ErrRateLimited
	case s >= 500:
		e.Err = model.ErrServer
	default:
		e.Message = strings.TrimSuffix(fmt.Sprintf("GET %s without url answered %d instead of 400 MISSING_PARAMETER: %s",
			c.redactedPath(hreq.URL), s, e.Message), ": ")
		e.Err = model.ErrMisconfigured
	}
	return p, e
}

func (c *Client) probeFailure(ctx context.Context, req model.Request, err error, tr *connTrace) error {
	msg := c.transportMessage(err)
	if stage, wrote := tr.result(err); stage != "" && !wrote {
		cause := error(fmt.Errorf("%s", msg))
		if isCertificateError(err) {
			cause = fmt.Errorf("%w: %s", model.ErrUntrustedCertificate, msg)
		}
		return &UnreachableError{Stage: stage, Host: c.host(), BaseURL: c.baseURL, Err: cause}
	}
	e := c.newError(req, 0, "", "")
	e.Op, e.Message, e.Err = "probe", msg, model.ErrServer
	if ctx.Err() != nil {
		e.Message = fmt.Sprintf("no answer within %s (api.timeout)", c.cfg.Timeout)
	}
	return e
}

func (p *Probe) readHeaders(h http.Header) {
	if v, ok := headerInt(h, "X-Gateway-Remaining-Credits"); ok {
		p.Balance = v
	}
	if v, ok := headerFloat(h, "X-RateLimit-Limit"); ok {
		p.RateLimit = v
	}
	if v, ok := headerInt(h, "X-Ratelimit-Requests-Limit"); ok {
		p.QuotaLimit = v
	}
	if v, ok := headerInt(h, "X-Ratelimit-Requests-Remaining"); ok {
		p.QuotaRemaining = v
	}
	if v, ok := headerInt(h, "X-Ratelimit-Requests-Reset"); ok && v > 0 {
		p.QuotaReset = time.Unix(v, 0).UTC()
	}
}

// learn takes the balance, quota and rate limit of an answer the API gave the probe, so a
// run through this client starts at full pace instead of one call at a time until its first
// answer tells them.
func (c *Client) learn(h http.Header, sentAt time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.broadcastLocked()
	c.seenResponse = true
	if v, ok := headerInt(h, "X-Gateway-Remaining-Credits"); ok && (c.remaining < 0 || v < c.remaining) {
		c.remaining = v
	}
	if v, ok := headerInt(h, "X-Ratelimit-Requests-Remaining"); ok && (c.quota < 0 || v < c.quota) {
		c.quota = v
	}
	c.followRateLimitLocked(h, sentAt)
}
