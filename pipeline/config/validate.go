package config

import (
	"fmt"
	"math"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"sitewatch/pipeline/model"
	"sitewatch/pipeline/secret"
)

// validate checks every setting after defaults, adding one problem per bad key.
func (c *Config) validate(p *problems) {
	bad := func(key, format string, args ...any) {
		if !c.mistyped[key] { // its type error says enough
			p.add(c.lineOf(key), key+": "+format, args...)
		}
	}
	if msg := checkSchedule(c.Schedule); msg != "" {
		bad("schedule", "%s", msg)
	}
	// The client's own check, so config and client never disagree on a usable base URL.
	if c.present["api.sources"] {
		c.validateSources(p) // each source has its own base URL
	} else if err := secret.CheckBaseURL(c.API.BaseURL, c.API.AllowInsecureHTTP); err != nil {
		if c.baseURLFromEnv {
			p.add(0, "%s (which overrides api.base_url): %v", EnvBaseURL, err)
		} else {
			bad("api.base_url", "%v", err)
		}
	}
	c.validateAPI(bad)
	c.validateDurations(bad)
	if msg := checkMemoryLimit(c.Warehouse.MemoryLimit); msg != "" {
		bad("warehouse.memory_limit", "%s", msg)
	}
	c.validateDiscover(bad)
	c.validateOutputs(p, bad)
	c.validateLease(bad)
	c.validateAttention(bad)
	c.validatePaths(bad)
	if len(c.Domains) == 0 {
		p.add(c.lineOf("domains"), "domains: the watchlist is empty; list at least one domain")
	}
}

func (c *Config) validateAPI(bad func(key, format string, args ...any)) {
	switch c.API.Mode {
	case "direct":
	case "marketplace":
		if c.API.MarketplaceHost == "" {
			bad("api.marketplace_host", "required in marketplace mode (the listing host sent as x-marketplace-host)")
		}
	default:
		bad("api.mode", "%q is not a mode; use direct or marketplace", c.API.Mode)
	}
	if msg := checkRateLimit(c.API.RateLimit); msg != "" {
		bad("api.rate_limit", "%s", msg)
	}
	if c.API.MinCredits < 0 {
		bad("api.min_credits", "must be 0 or more")
	}
	if c.API.MaxCreditsPerRun < 0 {
		bad("api.max_credits_per_run", "must be 0 (no cap) or more")
	}
	if c.API.MaxWastedCredits < 0 {
		bad("api.max_wasted_credits", "must be 0 (refetch nothing charged) or more")
	}
}

func (c *Config) validateDurations(bad func(key, format string, args ...any)) {
	if d := c.API.Timeout.Duration; d < minTimeout || d > maxTimeout {
		bad("api.timeout", "%v is out of range: use %v to %v (default %v); a call that may last longer also keeps a bucket lease from being taken over that long", d, minTimeout, maxTimeout, DefaultTimeout)
	}
	if d := c.API.MaxRateLimitWait.Duration; d <= 0 || d > maxRateLimitWait {
		bad("api.max_rate_limit_wait", "%v is out of range: use more than 0 and at most %v, e.g. 15m", d, maxRateLimitWait)
	}
	if d := c.RetryEvery.Duration; d < minRetryEvery || d > maxRetryEvery {
		bad("retry_every", "%v is out of range: use %v to %v (31 days), e.g. 6h", d, minRetryEvery, maxRetryEvery)
	}
	if g := c.HealthGrace.Duration; g <= 0 || g > maxHealthGrace {
		bad("health_grace", "%v is out of range: use more than 0 and at most %v (27 days), e.g. 72h", g, maxHealthGrace)
	}
}

// Bounds of the durations and rates above: none may block a run, a schedule or a bucket for
// years by a typo.
const (
	minTimeout       = 100 * time.Millisecond
	maxTimeout       = time.Hour
	maxRateLimitWait = 24 * time.Hour
	maxRetryEvery    = 31 * 24 * time.Hour
)

// checkRateLimit bounds a requests/second limit: at least the floor the client refuses from
// a server (below it a month would take weeks), at most maxRateLimit; NaN and Inf refused.
func checkRateLimit(r float64) string {
	if r >= model.MinServerRateLimit && r <= maxRateLimit {
		return ""
	}
	return fmt.Sprintf("%v is out of range: use %g to %d requests per second (the client refuses a server's limit below %g/s too)",
		r, model.MinServerRateLimit, maxRateLimit, model.MinServerRateLimit)
}

func (c *Config) validateOutputs(p *problems, bad func(key, format string, args ...any)) {
	if c.Notify.WebhookURL != "" {
		if msg := checkWebhookURL(c.Notify.WebhookURL); msg != "" {
			if c.webhookFromEnv {
				p.add(0, "%s (which overrides notify.webhook_url): %s", EnvWebhookURL, msg)
			} else {
				bad("notify.webhook_url", "%s", msg)
			}
		}
	}
	if c.Publish.URL != "" {
		if msg := checkS3URL(c.Publish.URL); msg != "" {
			bad("publish.url", "%s", msg)
		}
	}
	if c.Publish.Endpoint != "" {
		if msg := checkEndpoint(c.Publish.Endpoint); msg != "" {
			bad("publish.endpoint", "%s", msg)
		}
	}
	if c.Publish.URL == "" && (c.Publish.Endpoint != "" || c.Publish.Region != "" || c.Publish.PathStyle) {
		bad("publish.url", "not set, but other publish keys are: set it to s3://bucket/prefix, or remove the publish section")
	}
	c.validateIceberg(bad)
}

// checkWebhookURL checks a webhook URL without ever echoing it: Slack and others put the
// token in the path, so messages show scheme://host/… at most.
func checkWebhookURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return "is not an http(s) URL (the value is not shown: it holds a secret)"
	}
	if u.User != nil {
		return fmt.Sprintf("%s://%s/…: put no user:password@ in it", u.Scheme, u.Hostname())
	}
	return ""
}

// s3Bucket is S3's bucket naming rule: 3-63 lower-case letters, digits, dots and hyphens,
// starting and ending with a letter or digit.
var s3Bucket = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

func checkS3URL(raw string) string {
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Scheme != "s3":
		return fmt.Sprintf("%q is not an s3://bucket/prefix URL", secret.RedactURL(raw))
	case u.User != nil:
		return "must not carry credentials; the AWS credentials come from the environment (AWS_ACCESS_KEY_ID …) or the shared AWS config"
	case u.RawQuery != "" || u.Fragment != "":
		return fmt.Sprintf("%q must not have a query or fragment", secret.RedactURL(raw))
	case !s3Bucket.MatchString(u.Host) || strings.Contains(u.Host, ".."):
		return fmt.Sprintf("bucket %q is not a valid S3 bucket name (3-63 lower-case letters, digits, dots and hyphens)", u.Host)
	case strings.Contains(strings.Trim(u.Path, "/"), "//"):
		return fmt.Sprintf("prefix %q has an empty path segment", u.Path)
	}
	if msg := checkBucketName(u.Host); msg != "" {
		return msg
	}
	return checkPrefix(u)
}

func checkEndpoint(raw string) string {
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Sprintf("%q is not an http(s) URL such as https://s3.eu-central-1.amazonaws.com or http://127.0.0.1:9000", secret.RedactURL(raw))
	case u.User != nil:
		return "must not carry credentials; the AWS credentials come from the environment or the shared AWS config"
	case u.RawQuery != "" || u.Fragment != "":
		return fmt.Sprintf("%q must not have a query or fragment", secret.RedactURL(raw))
	}
	return ""
}

// memorySize is a DuckDB size: a number and a unit, as SET memory_limit takes it.
var memorySize = regexp.MustCompile(`^(?i)\s*([0-9]+(?:\.[0-9]+)?)\s*(b|bytes?|kb|kib|mb|mib|gb|gib|tb|tib)\s*$`)

var memoryUnits = map[string]float64{
	"b": 1, "byte": 1, "bytes": 1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}

// MemoryLimitBytes returns warehouse.memory_limit in bytes (the config is validated, so it
// parses).
func (w WarehouseConfig) MemoryLimitBytes() int64 {
	n, _ := memoryBytes(w.MemoryLimit)
	return n
}

func memoryBytes(s string) (int64, bool) {
	m := memorySize.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, false
	}
	b := n * memoryUnits[strings.ToLower(m[2])]
	if b > math.MaxInt64 {
		return 0, false
	}
	return int64(b), true
}

func checkMemoryLimit(s string) string {
	n, ok := memoryBytes(s)
	switch {
	case !ok:
		return fmt.Sprintf("%q is not a DuckDB size; write a number and a unit, e.g. 256MB or 2GiB", s)
	case n < minMemoryLimit:
		return fmt.Sprintf("%q is below the %dMiB DuckDB needs to load and export a snapshot", s, minMemoryLimit>>20)
	}
	return ""
}

// cronField describes one field of a 5-field cron expression.
type cronField struct {
	name     string
	min, max int
	names    []string // JAN… or SUN…, index = value - min
}

var cronFields = []cronField{
	{name: "minute", min: 0, max: 59},
	{name: "hour", min: 0, max: 23},
	{name: "day of month", min: 1, max: 31},
	{name: "month", min: 1, max: 12, names: strings.Fields("jan feb mar apr may jun jul aug sep oct nov dec")},
	{name: "day of week", min: 0, max: 6, names: strings.Fields("sun mon tue wed thu fri sat")},
}

// checkSchedule checks a 5-field cron expression field by field, so the message names the field
// and its range ("32 is not a valid day of month (1-31)"); "" when it is valid.
func checkSchedule(expr string) string {
	fields := strings.Fields(expr)
	if len(fields) != 5 {
		return fmt.Sprintf("%q is not a 5-field cron expression (minute hour day-of-month month day-of-week, e.g. %q): it has %d fields", expr, DefaultSchedule, len(fields))
	}
	for i, f := range fields {
		if msg := cronFields[i].check(f); msg != "" {
			return fmt.Sprintf("%q: %s", expr, msg)
		}
	}
	if _, err := cron.ParseStandard(expr); err != nil {
		return fmt.Sprintf("%q is not a valid cron expression: %v", expr, err)
	}
	return ""
}

// check validates one field: a comma-separated list of *, ?, N, N-M, each with an optional /step.
func (f cronField) check(field string) string {
	for _, part := range strings.Split(field, ",") {
		rng, step, hasStep := strings.Cut(part, "/")
		if hasStep {
			if n, err := strconv.Atoi(step); err != nil || n < 1 {
				return fmt.Sprintf("step %q in the %s field is not a whole number of 1 or more", step, f.name)
			}
		}
		if rng == "*" || rng == "?" && (f.name == "day of month" || f.name == "day of week") {
			continue
		}
		lo, hi, isRange := strings.Cut(rng, "-")
		if msg := f.checkValue(lo); msg != "" {
			return msg
		}
		if isRange {
			if msg := f.checkValue(hi); msg != "" {
				return msg
			}
			if a, b := f.value(lo), f.value(hi); a > b {
				return fmt.Sprintf("range %s in the %s field runs backwards", rng, f.name)
			}
		}
	}
	return ""
}

func (f cronField) checkValue(s string) string {
	if v := f.value(s); v < f.min || v > f.max {
		if f.names != nil {
			return fmt.Sprintf("%s is not a valid %s (%d-%d or %s-%s)", strconv.Quote(s), f.name, f.min, f.max, strings.ToUpper(f.names[0]), strings.ToUpper(f.names[len(f.names)-1]))
		}
		return fmt.Sprintf("%s is not a valid %s (%d-%d)", s, f.name, f.min, f.max)
	}
	return ""
}

// value parses a number or a name of the field; -1 when it is neither.
func (f cronField) value(s string) int {
	for i, n := range f.names {
		if strings.EqualFold(s, n) {
			return f.min + i
		}
	}
	if n, err := strconv.Atoi(s); err == nil && s != "" && s[0] != '+' && s[0] != '-' {
		return n
	}
	return -1
}
