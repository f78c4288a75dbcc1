// Package atlastest is a strict, faithful simulator of the Site Intelligence API, importable
// in the manner of net/http/httptest: NewServer(Options) listens on 127.0.0.1:0 and exposes
// URL and Close; Handler is the plain http.Handler; cmd/atlas-sim serves it as a program.
//
// It serves the three operations on the direct gateway (/atlas/site-overview,
// /atlas/site-similar, /atlas/country-metadata, plus the deprecated aliases
// /atlas/website-overview and /atlas/similar-sites with identical bodies) and, when
// Options.MarketplaceHost and MarketplaceKey are set, on the marketplace listing (the same
// paths without /atlas, for requests carrying an x-marketplace-host or x-marketplace-key
// header). Data is synthetic and deterministic for (seed, month, domain); see Generator.
//
// # Data month
//
// The simulator serves one data month at a time, as the real API serves only its current
// month. An overview says which: meta.snapshot_date is the first day of the data month
// (YYYY-MM-01), traffic.period is the month itself (YYYY-MM), and traffic.history ends at
// it. The month is Options.Month (default the current UTC month); it turns to the next one
// once Options.MonthTurnAfter has passed since the handler was created, or when a test calls
// SetMonth or TurnMonth. Every body is built whole from one month, so a request that races a
// turn sees the old month or the new one, never a mix. The similar-sites operation carries
// no date; its data follows the same month.
//
// # Data model
//
// About seventy of the largest sites (table famous) have built-in visits of the right order
// of magnitude; other domains are a long tail. One curve ties rank to visits for every domain,
// and no two of the known sites and the first 5,000 names of Domains share a global rank in
// a month, as a real API ranks every site once (believable.go).
// Each domain has a month-independent profile, and each month's figures are that profile
// moved by smooth functions of the month (trend, season) plus small per-month noise, so
// competitors, keywords, top countries and AI platforms turn over a little from month to
// month. See model.go.
//
// # Order of checks
//
// Each request passes these steps in order; the first that fails answers:
//
//  1. Options.Faults.Hang, then the configured latency.
//  2. Body limit (edge proxy): Content-Length over 10 MB, or a streamed body that turns out
//     over 10 MB, gives 413 {error, message}.
//  3. Service: a path under /atlas is the direct gateway; any other path is the marketplace
//     listing if it is enabled and the request carries a marketplace header; otherwise 404
//     {error, message, documentation_url}.
//  4. Authentication, 401 {error, message, service}. Direct: Authorization: Bearer <key>
//     (which wins when both are sent) or X-API-Key: <key>. No key: the message names the
//     Bearer token and X-API-Key. An empty value, another scheme (Basic), a malformed header
//     or an unknown key: "invalid or missing". Keys are compared as SHA-256 digests in
//     constant time against every configured key. Marketplace: x-marketplace-host and
//     x-marketplace-key must match (401 otherwise); with MarketplaceRequireBearer a missing
//     bearer gives 401 saying a bearer key is required; a bearer key, when sent, must be
//     valid and its wallet is charged as well.
//  5. Faults.RateLimited: a spurious 429 with Retry-After from Faults.RetryAfter.
//  6. Per-key rate: a fixed one-second window (aligned to wall-clock seconds, by the
//     request's arrival time, before Hang and latency) of X-RateLimit-Limit requests; beyond it 429 {error, message, service} with Retry-After: 1
//     and X-RateLimit-Remaining: 0. Every authenticated request that gets this far counts,
//     whatever its final status. A marketplace call without a bearer key is limited per
//     listing. The listing's limit is Options.MarketplaceRate (default Rate), the gateway's Rate.
//  7. Marketplace monthly quota exhausted: 429 {error, message, service}. The quota comes back
//     whole at Options.MarketplaceQuotaReset (default the next UTC month), then monthly; what
//     was left is not carried over.
//  8. Credits: a wallet at zero or below gives 402 {error, message, service,
//     remainingBalance} with X-Gateway-Credit-Cost: 1 (the price of the call).
//  9. Upstream: unknown route 404 {detail}; a verb other than GET 405 {detail} with Allow:
//     GET; url absent or empty 400 MISSING_PARAMETER; url not a domain 400 INVALID_DOMAIN;
//     Options.FailRate turns an otherwise-good request into 500 {error, message} or 502/504
//     {messages, info}.
//  10. 200, charged one credit, possibly damaged by a 200 fault.
//
// Steps 6 to 10 are decided in one critical section, so concurrent requests can never
// overdraw a wallet or exceed the rate. Because the key (4) and the wallet (8) come before
// the request's own validation (9), a request without url is a free probe of the key, the
// balance and the rate: 401, 402 or 400 MISSING_PARAMETER with the usual headers.
//
// # Charging policy
//
// Only a 200 is charged, one credit from the key's wallet (and, on the marketplace, one unit
// of the monthly quota). Never charged: 400, 401, 402, 404, 405, 413, 429 (real or injected),
// 500, 502 and 504. A 200 damaged by Faults.Reset, Truncated, HTML200, WrongContentType or Drift IS
// charged: the real gateway charged it before the body broke. Stats.Charged therefore equals
// Stats.OK + Stats.Broken and the sum of Stats.Fetches, so a test can assert "credits charged
// = calls needed". X-Gateway-Credit-Cost is 1 on a charged 200 and on a 402 (the price that
// could not be paid), 0 on every other response.
//
// # Accepted url forms
//
// The url query value is normalized to the domain whose data is served; meta.request.url
// echoes the value as sent. Accepted: an optional http:// or https:// scheme (any case); a
// path, query or fragment after the host (ignored); a port 1-65535 (ignored); upper case
// (lowered); one trailing dot; a leading www. (removed when a registrable domain remains);
// internationalized names (converted to punycode with UTS 46 lookup rules). The host must
// have at least two labels of letters, digits and inner hyphens, each 1-63 characters, at
// most 253 characters in all, and a top-level label that is not all digits. INVALID_DOMAIN
// answers: IPv4 and IPv6 addresses (bracketed or not), any whitespace or control character,
// markup and the characters < > " ' { } | \ ^ `, other schemes, user information (@), empty
// labels (a..b, .example.com), underscores and other non-LDH characters, labels starting or
// ending with a hyphen, over-long labels or names, and values over 2048 characters.
//
// # Headers
//
// Every response, errors included, carries Content-Type application/json; charset=utf-8
// (except the injected HTML200 and WrongContentType faults), X-Gateway-Service: atlas,
// X-Gateway-Credit-Cost, X-Gateway-Remaining-Credits (the wallet after the call; 0 before
// authentication; the remaining quota on a marketplace call without a bearer key),
// X-Gateway-Latency-Ms, X-RateLimit-Limit, X-Content-Type-Options: nosniff,
// X-Frame-Options: SAMEORIGIN and X-XSS-Protection: 1; mode=block. Authenticated responses
// also carry X-RateLimit-Remaining. Marketplace calls add x-ratelimit-requests-limit,
// x-ratelimit-requests-remaining, x-ratelimit-requests-reset (epoch seconds of the next quota
// reset), x-marketplace-region and x-marketplace-request-id.
package atlastest
