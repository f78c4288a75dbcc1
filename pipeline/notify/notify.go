// Package notify posts one JSON message per run outcome to a webhook (Slack, Mattermost, or
// anything that accepts JSON). A notification is a courtesy: it never fails a run and never
// delays it by more than DefaultTimeout.
package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"sitewatch/pipeline/secret"
)

// DefaultTimeout bounds one Send, retry included.
const DefaultTimeout = 5 * time.Second

// Outcomes a run reports. They match the statuses of the runs table where one exists.
const (
	OutcomeComplete       = "complete"
	OutcomeUpToDate       = "up_to_date"
	OutcomeStoppedCredits = "stopped_credits"
	OutcomeUnauthorized   = "unauthorized"
	OutcomeFailed         = "failed"
	OutcomeInterrupted    = "interrupted"
	OutcomeAbandoned      = "abandoned"
	OutcomeMonthTurned    = "month_turned"
	OutcomeMonthMismatch  = "month_mismatch"
)

// Event is one run outcome.
type Event struct {
	RunID        string
	Month        string // the snapshot month, YYYY-MM
	Outcome      string // one of the Outcome constants (any other string is sent as is)
	Loaded       int    // domains loaded in the month (all runs so far)
	Total        int    // domains on the watchlist
	CreditsSpent int64  // by this run
	CreditsLeft  int64  // the wallet after the run; -1 unknown
	// PaidBy says which credit source paid how much, e.g. "marketplace 100, direct 201"
	// ("" with a single source).
	PaidBy     string
	Duration   time.Duration
	FirstError string // the first error of the run, "" if none
	Changes    string // optional one-line headline of what changed this month
	// Attention is the month's needs-attention list as lines (changes.Attention.Text): the
	// complete digest leads with it, before Changes.
	Attention string
	// AttentionRows is the same list as objects for receivers that parse (the payload's
	// needs_attention); nil when the event has no list, empty for a quiet month.
	AttentionRows []AttentionRow
	// AttentionTotal is the number of rows of the whole list (AttentionRows may hold fewer).
	AttentionTotal int
	Host           string // optional: the machine the run ran on
	// MonthState says, for an outcome that did not complete its month, what the month holds
	// now ("2026-11 stays complete", "2026-11 incomplete: 3 of 6 domains loaded"), so a failure
	// never reads as data lost.
	MonthState string
	Skipped    string // watchlist entries never sent (config.Watchlist.SkippedLine), "" if none
	// Added lists the domains `schedule` appended to the watchlist after this complete month
	// (the config's discover: block), best first; AddedMonthly is what every domain discover
	// added now costs a month (credits). The next month's run fetches them.
	Added        []string
	AddedMonthly int64
}

// Notifier posts Events to one webhook. A nil *Notifier (no URL configured) does nothing.
type Notifier struct {
	url     string
	target  string // the URL reduced to scheme://host/…, the only form ever logged
	client  *http.Client
	log     *slog.Logger
	timeout time.Duration
	secrets *secret.Set // the URL's token parts, removed from every answer quoted in an error
	on      []string    // the kinds of outcome posted (notify.on; Only sets it)
}

// New returns a Notifier for webhookURL, or nil when webhookURL is "" (notifications off).
// The URL is a secret (Slack puts a token in its path): it is never logged or returned in an
// error; Target gives the loggable form.
func New(webhookURL string, logger *slog.Logger) *Notifier {
	if webhookURL == "" {
		return nil
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Notifier{
		url:     webhookURL,
		target:  Redact(webhookURL),
		log:     logger,
		timeout: DefaultTimeout,
		secrets: secret.New(secret.URLParts(webhookURL)...),
		on:      DefaultOn,
		client: &http.Client{
			Transport: transport(),
			// A webhook that redirects is misconfigured; following it could carry the body
			// (and the token in the path) somewhere else.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// transport gives each step of a POST its own deadline (connect, TLS, first byte of the
// answer), inside the Send bound, so a peer that accepts and never answers is cut off.
func transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: DialTimeout, KeepAlive: 30 * time.Second}).DialContext
	t.TLSHandshakeTimeout = DialTimeout
	t.ResponseHeaderTimeout = DefaultTimeout
	t.IdleConnTimeout = 30 * time.Second
	return t
}

// DialTimeout bounds the connection (and the TLS handshake) of one webhook POST.
const DialTimeout = 3 * time.Second

// WithTimeout returns n with the bound of one Send set to d (tests use a short one).
func (n *Notifier) WithTimeout(d time.Duration) *Notifier {
	if n != nil && d > 0 {
		n.timeout = d
	}
	return n
}

// Target is the webhook URL reduced to scheme://host/…, safe to log; "" for a nil Notifier.
func (n *Notifier) Target() string {
	if n == nil {
		return ""
	}
	return n.target
}

// Redact reduces a URL to scheme://host/… (or "(invalid URL)"), dropping userinfo, path and
// query, where webhook services put their tokens.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "(invalid URL)"
	}
	return u.Scheme + "://" + u.Host + "/…"
}

// Send posts e and logs the result (target as scheme://host/… only). It returns within the
// Notifier's timeout (DefaultTimeout), retrying once on a network error, a 429 or a 5xx
// answer if time is left. The timeout is counted even when ctx is already cancelled, so an
// interrupted run is still reported. The error names the target and the cause, never the
// URL; callers need not log it again. A nil Notifier, or an outcome notify.on leaves out,
// returns nil without a request.
func (n *Notifier) Send(ctx context.Context, e Event) error {
	if n == nil {
		return nil
	}
	if !n.wants(e.Outcome) {
		n.log.Debug("webhook not notified: notify.on leaves this outcome out", "outcome", e.Outcome, "kind", Kind(e.Outcome), "run_id", e.RunID)
		return nil
	}
	body, err := json.Marshal(newPayload(e))
	if err != nil {
		return fmt.Errorf("notify: encode the %s event of run %s: %w", e.Outcome, e.RunID, err)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), n.timeout)
	defer cancel()
	start := time.Now()
	err = n.post(ctx, body)
	if err != nil {
		n.log.Warn("webhook notification failed; the run is not affected", "target", n.target,
			"outcome", e.Outcome, "run_id", e.RunID, "elapsed", time.Since(start).Round(time.Millisecond), "err", err)
		return err
	}
	n.log.Info("webhook notified", "target", n.target, "outcome", e.Outcome, "run_id", e.RunID)
	return nil
}

// post tries twice at most: the first attempt gets 60% of the time left, so a hanging first
// attempt leaves room for the retry.
func (n *Notifier) post(ctx context.Context, body []byte) error {
	deadline, _ := ctx.Deadline()
	first := time.Duration(float64(time.Until(deadline)) * 0.6)
	err := n.attempt(ctx, body, first)
	if err == nil || !retryable(err) {
		return err
	}
	select {
	case <-time.After(200 * time.Millisecond):
	case <-ctx.Done():
		return fmt.Errorf("%w (no time left to retry within %v)", err, n.timeout)
	}
	if err2 := n.attempt(ctx, body, 0); err2 != nil {
		return fmt.Errorf("%w; retry: %w", err, err2)
	}
	return nil
}

// attempt is one POST, bounded by limit (0: by ctx only).
func (n *Notifier) attempt(ctx context.Context, body []byte, limit time.Duration) error {
	if limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.url, bytes.NewReader(body))
	if err != nil {
		return &Error{Target: n.target, Err: errors.New("the webhook URL is not a valid http(s) URL; check notify.webhook_url or SITEWATCH_WEBHOOK_URL")}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "sitewatch-notify")
	resp, err := n.client.Do(req)
	if err != nil {
		return &Error{Target: n.target, Err: secret.Wrap(stripURL(err), n.secrets)}
	}
	defer func() { _ = resp.Body.Close() }()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	if resp.StatusCode/100 == 2 {
		return nil
	}
	return &Error{Target: n.target, Status: resp.StatusCode, Body: n.quote(head)}
}

// quote returns the start of an answer's body fit for a log line. The body is untrusted: a
// 404 page may echo the request path, which holds the webhook's token. It is redacted before
// it is cut, so no token is cut in half where the redaction would miss it.
func (n *Notifier) quote(body []byte) string {
	text := strings.ToValidUTF8(n.secrets.Redact(string(bytes.TrimSpace(body))), "?")
	if r := []rune(text); len(r) > maxQuote {
		text = string(r[:maxQuote]) + "…"
	}
	return text
}

// maxQuote is how many characters of a failed answer an error quotes.
const maxQuote = 256

// Error is a failed delivery. It never holds the webhook URL, only its redacted Target.
type Error struct {
	Target string // scheme://host/…
	Status int    // the HTTP status of the answer, 0 when none came
	Body   string // the start of the answer's body
	Err    error  // the transport error when no answer came
}

func (e *Error) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("webhook %s: %v", e.Target, e.Err)
	}
	msg := fmt.Sprintf("webhook %s answered %d", e.Target, e.Status)
	if e.Body != "" {
		msg += fmt.Sprintf(" (%q)", e.Body)
	}
	switch {
	case e.Status/100 == 3:
		msg += "; it redirects: set the final URL in notify.webhook_url"
	case e.Status == http.StatusNotFound, e.Status == http.StatusForbidden, e.Status == http.StatusUnauthorized:
		msg += "; the webhook may have been revoked: check notify.webhook_url or SITEWATCH_WEBHOOK_URL"
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

func retryable(err error) bool {
	var ne *Error
	if !errors.As(err, &ne) {
		return false
	}
	return ne.Status == 0 || ne.Status == http.StatusTooManyRequests || ne.Status >= 500
}

// stripURL drops the URL net/http puts in its errors (`Post "https://…/token": …`).
func stripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return errors.New("no answer in time (the webhook hangs or is unreachable)")
		}
		return ue.Err
	}
	return err
}
