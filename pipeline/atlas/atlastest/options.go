package atlastest

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// Options configures a simulator. The zero value is a valid configuration: one key
// "demo-key" with 500 credits, 3 requests per second, no latency and no faults.
type Options struct {
	// Keys maps each API key to its starting credits; nil means {"demo-key": 500}.
	Keys map[string]int64
	// Rate is the per-key requests per second (X-RateLimit-Limit); 0 means 3.
	Rate int
	// LatencyMin and LatencyMax bound the latency added to every request (uniform).
	LatencyMin, LatencyMax time.Duration
	// FailRate is the fraction of otherwise-good requests answered 500, 502 or 504 (none charged).
	FailRate float64
	// Month is the YYYY-MM the data describes; "" means the current UTC month.
	Month string
	// MonthTurnAfter, when > 0, turns the month once, that long after the handler is
	// created: from then on the data is that of the month after Month, as the real API's
	// data month turns while clients are calling it. SetMonth and TurnMonth turn it at once.
	MonthTurnAfter time.Duration
	// Seed seeds the synthetic data and the fault draws (FailRate, Faults: per call, so the
	// same seed injects the same faults into the same calls in any order); 0 means 1.
	Seed int64
	// MarketplaceHost and MarketplaceKey, when both set, also serve the marketplace listing
	// (paths without the /atlas prefix) to requests carrying these x-marketplace-* headers.
	MarketplaceHost, MarketplaceKey string
	// MarketplaceRequireBearer makes the listing also require Authorization: Bearer <API key>.
	MarketplaceRequireBearer bool
	// MarketplaceQuota is the monthly request quota of the listing
	// (x-ratelimit-requests-limit); 0 means 10000.
	MarketplaceQuota int64
	// MarketplaceQuotaReset is when the listing's quota next resets
	// (x-ratelimit-requests-reset); zero means the first of next month, 00:00 UTC. Once it
	// passes, the whole quota is available again and the next reset is a month later.
	MarketplaceQuotaReset time.Time
	// MarketplaceRate is the listing's own requests per second (its X-RateLimit-Limit); 0
	// means Rate. The listing and the direct gateway count their rates apart.
	MarketplaceRate int
	// Faults injects further failures for reliability tests.
	Faults Faults
	// Legacy serves legacy v1 bodies (flat camelCase, boolean success, hyphenated country keys).
	Legacy bool
	// Logger, when set, receives one line per request (method, path, status, domain; never a key).
	Logger *slog.Logger
}

// Faults are extra injected failures. Fractions are in [0, 1]; the four 200 faults (Reset,
// Truncated, HTML200, WrongContentType) are drawn together and must sum to at most 1.
type Faults struct {
	// RateLimited is the fraction of requests answered 429 spuriously (before charging).
	RateLimited float64
	// RetryAfter is the Retry-After of those 429s (default 1s; sent in whole seconds, at least 1).
	RetryAfter time.Duration
	// Reset is the fraction of 200s whose connection is cut mid-body (charged).
	Reset float64
	// Truncated is the fraction of 200s whose JSON body is cut short, with a Content-Length
	// matching the short body (charged).
	Truncated float64
	// HTML200 is the fraction of would-be 200s answered 200 with an HTML error page, text/html (charged).
	HTML200 float64
	// WrongContentType is the fraction of 200s sent as text/plain, body otherwise valid (charged).
	WrongContentType float64
	// Drift is the fraction of 200s whose body is well-formed JSON with a field of the wrong
	// type (an array replaced by a string), as an unannounced schema change (charged).
	Drift float64
	// Hang, if > 0, makes every request sleep this long first (to exceed client timeouts).
	Hang time.Duration
}

// DefaultKey and DefaultCredits are the key and starting credits used when Options.Keys is nil.
const (
	DefaultKey     = "demo-key"
	DefaultCredits = 500
	DefaultRate    = 3
	DefaultQuota   = 10000
)

func (o Options) validate() error {
	var errs []error
	for k := range o.Keys {
		if k == "" || strings.ContainsAny(k, " \t\r\n,=") {
			errs = append(errs, errors.New("an API key is empty or contains spaces, commas or '='"))
			break
		}
	}
	if o.Rate < 0 {
		errs = append(errs, fmt.Errorf("rate %d is negative; want requests per second >= 1 (0 = %d)", o.Rate, DefaultRate))
	}
	if o.LatencyMin < 0 || o.LatencyMax < 0 {
		errs = append(errs, errors.New("latency is negative"))
	}
	if o.LatencyMax != 0 && o.LatencyMax < o.LatencyMin {
		errs = append(errs, fmt.Errorf("latency max %v is below min %v", o.LatencyMax, o.LatencyMin))
	}
	if o.Month != "" {
		if _, err := parseMonth(o.Month); err != nil {
			errs = append(errs, err)
		}
	}
	if o.MonthTurnAfter < 0 {
		errs = append(errs, fmt.Errorf("month turn after %v is negative; want a duration > 0, or 0 for never", o.MonthTurnAfter))
	}
	if (o.MarketplaceHost == "") != (o.MarketplaceKey == "") {
		errs = append(errs, errors.New("marketplace host and key must be set together"))
	}
	if o.MarketplaceRequireBearer && o.MarketplaceHost == "" {
		errs = append(errs, errors.New("marketplace-require-bearer needs a marketplace host and key"))
	}
	if o.MarketplaceRate < 0 {
		errs = append(errs, fmt.Errorf("marketplace rate %d is negative; want requests per second >= 1 (0 = the gateway's rate)", o.MarketplaceRate))
	}
	if o.MarketplaceQuota < 0 {
		errs = append(errs, fmt.Errorf("marketplace quota %d is negative", o.MarketplaceQuota))
	}
	f := o.Faults
	fr := []struct {
		name string
		v    float64
	}{
		{"fail rate", o.FailRate}, {"rate-limited fault", f.RateLimited}, {"reset fault", f.Reset},
		{"truncated fault", f.Truncated}, {"HTML 200 fault", f.HTML200}, {"wrong content type fault", f.WrongContentType},
		{"drift fault", f.Drift},
	}
	for _, x := range fr {
		if !(x.v >= 0 && x.v <= 1) {
			errs = append(errs, fmt.Errorf("%s %v is not a fraction between 0 and 1", x.name, x.v))
		}
	}
	if s := f.Reset + f.Truncated + f.HTML200 + f.WrongContentType + f.Drift; s > 1+1e-9 {
		errs = append(errs, fmt.Errorf("the 200 faults (reset, truncated, HTML, content type, drift) sum to %v, more than 1", s))
	}
	if f.RetryAfter < 0 || f.Hang < 0 {
		errs = append(errs, errors.New("fault durations are negative"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("atlastest options: %w", errors.Join(errs...))
	}
	return nil
}

// ParseKeys parses the --keys flag value "K=N[,K=N...]" into API keys and starting credits.
// Its errors never contain a key.
func ParseKeys(s string) (map[string]int64, error) {
	keys := make(map[string]int64)
	for i, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("keys entry %d: want KEY=CREDITS, e.g. demo-key=500", i+1)
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("keys entry %d: credits %q are not an integer", i+1, v)
		}
		if _, dup := keys[k]; dup {
			return nil, fmt.Errorf("keys entry %d: the key is listed twice", i+1)
		}
		keys[k] = n
	}
	return keys, nil
}

// ParseLatency parses the --latency flag value "MIN[-MAX]" (Go durations, e.g. "200ms-800ms";
// a bare "0" means none).
func ParseLatency(s string) (lo, hi time.Duration, err error) {
	minS, maxS, ranged := strings.Cut(strings.TrimSpace(s), "-")
	parse := func(v string) (time.Duration, error) {
		if v == "0" {
			return 0, nil
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return 0, fmt.Errorf("latency %q: want MIN[-MAX] as Go durations, e.g. 200ms-800ms: %w", s, err)
		}
		if d < 0 {
			return 0, fmt.Errorf("latency %q is negative", s)
		}
		return d, nil
	}
	if lo, err = parse(minS); err != nil {
		return 0, 0, err
	}
	hi = lo
	if ranged {
		if hi, err = parse(maxS); err != nil {
			return 0, 0, err
		}
		if hi < lo {
			return 0, 0, fmt.Errorf("latency %q: max is below min", s)
		}
	}
	return lo, hi, nil
}
