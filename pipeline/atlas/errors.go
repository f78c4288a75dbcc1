package atlas

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"sitewatch/schema"
)

// Sentinel errors. Every error the client returns wraps one of them (or schema.ErrLegacyV1,
// or a context error), so callers decide with errors.Is.
//
// Stop reasons end a FetchAll (IsStop reports them). The others are per-request failures
// carried in Result.Err.
var (
	// ErrOutOfCredits: the API answered 402 Payment Required.
	ErrOutOfCredits = errors.New("out of credits (HTTP 402): top up the wallet, then rerun to resume")
	// ErrCreditReserve: the next call would take the remaining credits (or the remaining
	// marketplace quota) below min_credits, so it was not started.
	ErrCreditReserve = errors.New("credit reserve reached: the next call would take the remaining credits below api.min_credits; top up (or lower api.min_credits) and rerun to resume")
	// ErrRunBudget: the next call would spend more than max_credits_per_run.
	ErrRunBudget = errors.New("run budget reached: api.max_credits_per_run credits are spent; rerun (or raise the cap) to continue")
	// ErrBalanceUnknown: api.min_credits is set but a charged answer carried no readable
	// X-Gateway-Remaining-Credits (nor, in marketplace mode, a readable remaining quota), so
	// the reserve could not be kept: the client fails closed.
	ErrBalanceUnknown = errors.New("the server did not report a readable balance (X-Gateway-Remaining-Credits), so api.min_credits cannot be kept; " +
		"the run stopped rather than spend blind: check api.base_url points at the gateway, or set api.min_credits: 0 to run without a reserve")
	// ErrWasteBudget: the run has spent api.max_wasted_credits on refetching charged answers
	// that could not be used; the server keeps sending broken bodies.
	ErrWasteBudget = errors.New("waste budget reached: api.max_wasted_credits credits were spent refetching charged answers that could not be used; " +
		"the server keeps sending broken bodies: rerun later to resume (or raise api.max_wasted_credits)")
	// ErrRateLimitWait: 429 answers have paused the run for api.max_rate_limit_wait in all.
	ErrRateLimitWait = errors.New("rate-limit wait budget reached: 429 answers paused this run for api.max_rate_limit_wait in all; " +
		"rerun later to resume (or lower api.rate_limit, or raise api.max_rate_limit_wait)")
	// ErrServerRateLimit: the server's X-RateLimit-Limit is below MinServerRateLimit, which no
	// plan sells: the key's plan or the gateway is misconfigured.
	ErrServerRateLimit = errors.New("the server's rate limit (X-RateLimit-Limit) is below the floor of 0.05 requests per second, which no plan sells; " +
		"check the key's plan in the developer console, or api.base_url")
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
	// ErrSecretInBody: a charged 200 body contains one of the keys (plain, percent-encoded or
	// base64): it is never handed over, so it is never stored.
	ErrSecretInBody = errors.New("the 200 body contains the API key (plain, percent-encoded or base64); it was dropped, not stored: " +
		"the server reflects credentials, check api.base_url points at the real gateway")
	// ErrBodyTooLarge: a 200 body is over Config.MaxBodyBytes; it was not kept (charged).
	ErrBodyTooLarge = errors.New("the 200 body is larger than the per-body cap; it was dropped (API bodies are a few KB): check api.base_url")

	// ErrBadRequest: any other 400; permanent for this request, never retried.
	ErrBadRequest = errors.New("the API rejected the request (400)")
	// ErrMisconfigured: 404, 405, 413 or a redirect, which a correct client never sees.
	ErrMisconfigured = errors.New("the API address does not serve this operation: api.base_url or api.mode is likely wrong (direct mode adds /atlas to base_url; marketplace mode does not)")
	// ErrUntrustedCertificate: the server's TLS certificate failed verification; fatal
	// (verification is never disabled).
	ErrUntrustedCertificate = errors.New("the API server's TLS certificate is not trusted: check api.base_url, " +
		"or install the issuing CA in the system trust store (TLS verification is never disabled)")
	// ErrUnreachable: the first call of the client could not reach the server (DNS, TCP
	// connect or TLS handshake failed); retrying would not help. Carried by *UnreachableError.
	ErrUnreachable = errors.New("the API server cannot be reached")
	// ErrServer: 5xx answers, time-outs, connection failures or broken 200 bodies that
	// persisted through every allowed attempt.
	ErrServer = errors.New("server or network failure persisted after retries; rerun later to resume")

	// ErrBadKey: a key has surrounding whitespace or control characters (a secrets file with
	// Windows line endings adds "\r"); refused by New before any call. Carried by *ConfigError.
	ErrBadKey = errors.New("the key has surrounding whitespace or control characters; remove them (a file with Windows line endings adds \\r)")
	// ErrInsecureHTTP: a plain http:// base URL names a host other than this machine.
	ErrInsecureHTTP = errors.New("plain http:// to a host other than this machine would send the key in clear text; " +
		"use https://, or set api.allow_insecure_http: true on a network you trust")
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

// Stages of an UnreachableError, in the order a connection is made.
const (
	StageDNS = "dns" // the host name did not resolve
	StageTCP = "tcp" // the TCP connection was refused or timed out
	StageTLS = "tls" // the TLS handshake failed (certificate, protocol)
)

// UnreachableError says the server could not be reached at all on the client's first call:
// which stage failed (StageDNS, StageTCP, StageTLS), for which base URL and host.
// It wraps ErrUnreachable and the cause (ErrUntrustedCertificate for a certificate).
type UnreachableError struct {
	Stage   string // StageDNS, StageTCP or StageTLS
	Host    string // host[:port] of api.base_url
	BaseURL string // api.base_url, redacted
	Err     error  // the cause, keys redacted
}

func (e *UnreachableError) Error() string {
	what := map[string]string{
		StageDNS: "the host name does not resolve: check the spelling of api.base_url (or ATLAS_BASE_URL) and the DNS of this machine",
		StageTCP: "nothing accepts connections there: check the host and port of api.base_url (or ATLAS_BASE_URL), that the gateway is up, and any firewall or proxy",
		StageTLS: "the TLS handshake failed: check that api.base_url speaks https on that port, and the system's trusted CAs",
	}[e.Stage]
	return fmt.Sprintf("atlas: cannot reach api.base_url %s (%s failed for %s: %v): %s", e.BaseURL, strings.ToUpper(e.Stage), e.Host, e.Err, what)
}

// Unwrap returns ErrUnreachable and the cause.
func (e *UnreachableError) Unwrap() []error { return []error{ErrUnreachable, e.Err} }

// ConfigError is a Config that New refuses: which setting, and why. Nothing was called.
// Its message never contains a key.
type ConfigError struct {
	Setting string // e.g. "api.base_url", "ATLAS_API_KEY"
	Err     error  // why, possibly wrapping ErrBadKey or ErrInsecureHTTP
}

func (e *ConfigError) Error() string { return "atlas: " + e.Setting + ": " + e.Err.Error() }

// Unwrap returns the reason.
func (e *ConfigError) Unwrap() error { return e.Err }

// stopReasons are the sentinels that stop a client.
var stopReasons = []error{ErrOutOfCredits, ErrCreditReserve, ErrRunBudget, ErrBalanceUnknown, ErrWasteBudget,
	ErrRateLimitWait, ErrServerRateLimit, ErrUnauthorized, ErrMisconfigured, ErrUntrustedCertificate,
	ErrUnreachable, schema.ErrLegacyV1}

// IsStop reports whether err is a reason to stop starting requests (as opposed to a
// failure of one request): out of credits, reserve, run budget, unknown balance under a
// reserve, waste budget, rate-limit wait budget, a server rate limit below the floor,
// unauthorized, misconfigured, unreachable, an untrusted certificate or a legacy v1 body.
func IsStop(err error) bool {
	for _, s := range stopReasons {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}
