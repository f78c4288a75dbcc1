package model

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"sitewatch/schema"
)

// The API's words: what a run asks of a fetcher (Request), what comes back (Result, Stats)
// and how a call fails (Error, the sentinels, IsStop). The core plans and lands in them; the
// client (pipeline/atlas), the credit sources and the fakes answer in them.

// Request is one call: an operation and, for the per-domain operations, the domain.
type Request struct {
	Endpoint schema.Endpoint // schema.EndpointOverview, EndpointSimilar or EndpointCountries
	Domain   string          // normalized domain; ignored for EndpointCountries
}

// Result is the outcome of one request, after its retries.
type Result struct {
	Request
	// Body is the 200 body exactly as received (to be stored); nil unless Err is nil.
	Body []byte
	// Overview, Similar or Countries (the one matching Endpoint) is Body decoded, set when
	// Err is nil: the body is decoded once, here, and never again downstream.
	Overview  *schema.SiteOverview
	Similar   *schema.SiteSimilar
	Countries *schema.CountryMetadata
	FetchedAt time.Time // UTC time the last answer arrived (zero if none did)
	Attempts  int       // HTTP attempts made
	// Charged is the credits the server charged for this request's answers, all attempts
	// together (X-Gateway-Credit-Cost of every 200, including bodies then refused: broken,
	// drift, legacy v1, secret in body); set whatever Err is, for the per-call ledger.
	Charged int64
	Err     error // nil on success; an *Error (or a wrapped stop reason or context error) otherwise
	// Source names the credit source that made the call ("" from a lone atlas.Client; set by a
	// fetcher spreading calls over several sources), for the ledger.
	Source string
}

// Stats are a fetcher's counters since it was built (atlas.New).
type Stats struct {
	Requests         int64   // HTTP attempts sent
	Succeeded        int64   // requests answered with a valid 200 body
	RateLimited      int64   // 429 answers seen
	Retries          int64   // attempts beyond the first of a request
	CreditsSpent     int64   // credits charged (every 200, usable or not, from X-Gateway-Credit-Cost)
	CreditsRemaining int64   // last known X-Gateway-Remaining-Credits; -1 unknown
	QuotaRemaining   int64   // last known x-ratelimit-requests-remaining (marketplace); -1 unknown
	RateLimit        float64 // min(api.rate_limit, the server's X-RateLimit-Limit)
	PacedRate        float64 // the requests/second the bucket runs at now: below RateLimit after 429s
	// Unanswered counts attempts sent that got no answer (time-outs, resets before the
	// headers). The server may have charged them, so the run cap counts them as spent.
	Unanswered int64
	// ByStatus counts answers by HTTP status; 0 counts attempts that got no answer.
	ByStatus map[int]int64
	// WastedCredits is the credits charged for answers that gave nothing usable (broken,
	// drifted, legacy, oversized or secret-bearing 200 bodies).
	WastedCredits int64
	// Refetches is the retries after an attempt that may have been charged (bounded by
	// MaxWastedCredits).
	Refetches int64
	// RateLimitWaited is the total time the run has been paused by 429 answers.
	RateLimitWaited time.Duration
	// InFlight is the attempts sent and not yet answered now.
	InFlight int64
}

// MinServerRateLimit is the lowest X-RateLimit-Limit taken as real (one call per 20 s);
// below it the client stops with ErrServerRateLimit instead of stalling, and the config
// refuses an api.rate_limit under it.
const MinServerRateLimit = 0.05

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
	// ErrBodyTooLarge: a 200 body is over the client's per-body cap (atlas.Config.MaxBodyBytes); it was not kept (charged).
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
	// connect or TLS handshake failed); retrying would not help. Carried by *atlas.UnreachableError.
	ErrUnreachable = errors.New("the API server cannot be reached")
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
