package atlas

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"sitewatch/schema"
)

// Sentinel errors. Every error the client returns wraps exactly one of them (or
// schema.ErrLegacyV1, or a context error), so callers decide with errors.Is.
//
// Stop reasons end a FetchAll: ErrOutOfCredits, ErrCreditReserve, ErrRunBudget,
// ErrUnauthorized, ErrMisconfigured and schema.ErrLegacyV1. The others are per-request
// failures carried in Result.Err.
var (
	// ErrOutOfCredits: the API answered 402 Payment Required.
	ErrOutOfCredits = errors.New("out of credits (HTTP 402): top up the wallet, then rerun to resume")
	// ErrCreditReserve: the next call would take the remaining credits (or the remaining
	// marketplace quota) below min_credits, so it was not started.
	ErrCreditReserve = errors.New("credit reserve reached: the next call would take the remaining credits below api.min_credits; top up (or lower api.min_credits) and rerun to resume")
	// ErrRunBudget: the next call would spend more than max_credits_per_run.
	ErrRunBudget = errors.New("run budget reached: api.max_credits_per_run credits are spent; rerun (or raise the cap) to continue")
	// ErrUnauthorized: the API answered 401 (or 403).
	ErrUnauthorized = errors.New("the API rejected the key; check ATLAS_API_KEY (and ATLAS_MARKETPLACE_KEY in marketplace mode)")
	// ErrRateLimited: the request was still answered 429 after every allowed attempt.
	ErrRateLimited = errors.New("rate limited (HTTP 429) on every attempt; lower api.rate_limit or retry later")
	// ErrInvalidDomain: 400 INVALID_DOMAIN; permanent for this domain, never retried.
	ErrInvalidDomain = errors.New("the API rejected the domain as invalid (400 INVALID_DOMAIN); fix or remove it in the watchlist")
	// ErrMissingParameter: 400 MISSING_PARAMETER; the url parameter was empty.
	ErrMissingParameter = errors.New("the API says the url parameter is missing (400 MISSING_PARAMETER); the domain is empty")
	// ErrSchemaDrift: a 200 body that is valid JSON but not the v2 shape (a field of another
	// type, status not "success"); permanent for this request, never retried (it was charged).
	ErrSchemaDrift = errors.New("the API answered with a body that does not match the v2 response schema; " +
		"it was not retried (the same body would come back); report it, or rerun after upgrading sitewatch")

	// ErrBadRequest: any other 400; permanent for this request, never retried.
	ErrBadRequest = errors.New("the API rejected the request (400)")
	// ErrMisconfigured: 404, 405, 413 or a redirect, which a correct client never sees.
	ErrMisconfigured = errors.New("the API address does not serve this operation: api.base_url or api.mode is likely wrong (direct mode adds /atlas to base_url; marketplace mode does not)")
	// ErrUntrustedCertificate: the server's TLS certificate failed verification; fatal
	// (verification is never disabled).
	ErrUntrustedCertificate = errors.New("the API server's TLS certificate is not trusted: check api.base_url, " +
		"or install the issuing CA in the system trust store (TLS verification is never disabled)")
	// ErrServer: 5xx answers, time-outs, connection failures or broken 200 bodies that
	// persisted through every allowed attempt.
	ErrServer = errors.New("server or network failure persisted after retries; rerun later to resume")
)

// Error describes a failed call: which operation on which domain, what the API answered,
// and which sentinel classifies it. Error() never contains an API or marketplace key.
type Error struct {
	Op       string          // what was being done, e.g. "fetch"
	Domain   string          // the requested domain ("" for country metadata)
	Endpoint schema.Endpoint // the operation
	Status   int             // HTTP status of the last answer, 0 when none arrived
	Code     string          // the API's error code or title, e.g. "INVALID_DOMAIN", "Payment Required"
	Message  string          // the API's message (or the transport error), keys redacted
	// RetryAfter is the Retry-After of the last 429, if any.
	RetryAfter time.Duration
	// RemainingBalance is the 402 body's remainingBalance, when present.
	RemainingBalance *float64
	// Err is the classifying sentinel (ErrOutOfCredits, ErrInvalidDomain, ...).
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("atlas")
	if e.Op != "" {
		b.WriteString(" " + e.Op)
	}
	if e.Endpoint != "" {
		b.WriteString(" " + string(e.Endpoint))
	}
	if e.Domain != "" {
		fmt.Fprintf(&b, " %q", e.Domain)
	}
	b.WriteString(":")
	if e.Status != 0 {
		fmt.Fprintf(&b, " HTTP %d", e.Status)
		if e.Code != "" {
			b.WriteString(" " + e.Code)
		} else if t := http.StatusText(e.Status); t != "" {
			b.WriteString(" " + t)
		}
		b.WriteString(":")
	}
	if e.RemainingBalance != nil {
		fmt.Fprintf(&b, " remaining balance %g:", *e.RemainingBalance)
	}
	if m := strings.TrimRight(e.Message, ". "); m != "" {
		b.WriteString(" " + m + ":")
	}
	if e.Err != nil {
		b.WriteString(" " + e.Err.Error())
	}
	return strings.TrimSuffix(b.String(), ":")
}

// Unwrap returns the classifying sentinel.
func (e *Error) Unwrap() error { return e.Err }

// IsStop reports whether err is a reason to stop starting requests (as opposed to a
// failure of one request): out of credits, reserve, run budget, unauthorized,
// misconfigured, an untrusted certificate or a legacy v1 body.
func IsStop(err error) bool {
	for _, s := range []error{ErrOutOfCredits, ErrCreditReserve, ErrRunBudget, ErrUnauthorized, ErrMisconfigured, ErrUntrustedCertificate, schema.ErrLegacyV1} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}
