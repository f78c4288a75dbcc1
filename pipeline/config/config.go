package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"gopkg.in/yaml.v3"

	"sitewatch/pipeline/atlas"
)

// Environment variables read by sitewatch. Secrets come only from here, never from the config.
const (
	EnvAPIKey         = "ATLAS_API_KEY"
	EnvBaseURL        = "ATLAS_BASE_URL"
	EnvMarketplaceKey = "ATLAS_MARKETPLACE_KEY"
	EnvWebhookURL     = "SITEWATCH_WEBHOOK_URL"
)

// Config is domains.yaml after validation, with defaults applied and paths made absolute
// (relative warehouse paths are relative to the config file's directory, so a cron job works
// from any working directory).
type Config struct {
	Path      string          `yaml:"-"`
	Schedule  string          `yaml:"schedule"`
	API       APIConfig       `yaml:"api"`
	Warehouse WarehouseConfig `yaml:"warehouse"`
	// RetryEvery is how often `schedule` retries a current month that is not complete.
	RetryEvery Duration `yaml:"retry_every"`
	// HealthGrace is how long into a month /healthz tolerates the month not being complete.
	HealthGrace Duration      `yaml:"health_grace"`
	Notify      NotifyConfig  `yaml:"notify"`
	Publish     PublishConfig `yaml:"publish"`
	Domains     []string      `yaml:"domains"`
	// lines maps each domains[i] to its line in the file, for messages.
	lines []int
	// baseURLFromEnv says API.BaseURL came from ATLAS_BASE_URL, so messages blame it.
	baseURLFromEnv bool
}

// APIConfig is the api section of domains.yaml.
type APIConfig struct {
	BaseURL          string   `yaml:"base_url"`
	Mode             string   `yaml:"mode"`
	MarketplaceHost  string   `yaml:"marketplace_host"`
	RateLimit        float64  `yaml:"rate_limit"`
	MinCredits       int64    `yaml:"min_credits"`
	MaxCreditsPerRun int64    `yaml:"max_credits_per_run"`
	Timeout          Duration `yaml:"timeout"`
	// AllowInsecureHTTP lets a plain http:// base_url name a non-loopback host (the key then
	// crosses the network in clear text).
	AllowInsecureHTTP bool `yaml:"allow_insecure_http"`
	// MaxWastedCredits bounds the credits a run may spend on charged answers it cannot use
	// (broken bodies refetched); the run stops when it is reached.
	MaxWastedCredits int64 `yaml:"max_wasted_credits"`
	// MaxRateLimitWait bounds the total time a run waits out 429 answers.
	MaxRateLimitWait Duration `yaml:"max_rate_limit_wait"`
}

// NotifyConfig is the notify section of domains.yaml.
type NotifyConfig struct {
	WebhookURL string `yaml:"webhook_url"` // SITEWATCH_WEBHOOK_URL overrides it
}

// PublishConfig is the publish section of domains.yaml: where complete months are uploaded.
type PublishConfig struct {
	URL       string `yaml:"url"`      // s3://bucket/prefix; empty = no publishing
	Endpoint  string `yaml:"endpoint"` // S3-compatible services
	Region    string `yaml:"region"`
	PathStyle bool   `yaml:"path_style"`
}

// WarehouseConfig is the warehouse section of domains.yaml.
type WarehouseConfig struct {
	DuckDB  string `yaml:"duckdb"`
	Parquet string `yaml:"parquet"`
	// MemoryLimit is DuckDB's memory_limit for writing commands (a DuckDB size such as 256MB).
	MemoryLimit string `yaml:"memory_limit"`
}

// Duration is a time.Duration written as a Go duration string ("30s") in YAML.
type Duration struct{ time.Duration }

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %q is not a duration (write e.g. 30s or 1m)", n.Line, s)}}
	}
	d.Duration = v
	return nil
}

// Defaults of domains.yaml keys.
const (
	DefaultSchedule  = "0 6 2 * *"
	DefaultRateLimit = 3
	DefaultTimeout   = 30 * time.Second
	DefaultDuckDB    = "data/sitewatch.duckdb"
	DefaultParquet   = "data/parquet"

	DefaultRetryEvery       = 6 * time.Hour
	DefaultHealthGrace      = 72 * time.Hour
	DefaultMaxWastedCredits = 5
	DefaultMaxRateLimitWait = 15 * time.Minute
	DefaultMemoryLimit      = "256MB"
)

// maxRateLimit bounds api.rate_limit: far above any plan, low enough to catch a typo.
const maxRateLimit = 10000

// knownKeys lists every accepted key, per section; a typo is an error, not silently ignored.
var knownKeys = map[string][]string{
	"":          {"schedule", "api", "warehouse", "retry_every", "health_grace", "notify", "publish", "domains"},
	"api":       {"base_url", "mode", "marketplace_host", "rate_limit", "min_credits", "max_credits_per_run", "timeout", "allow_insecure_http", "max_wasted_credits", "max_rate_limit_wait"},
	"warehouse": {"duckdb", "parquet", "memory_limit"},
	"notify":    {"webhook_url"},
	"publish":   {"url", "endpoint", "region", "path_style"},
}

// secretKeys are key names that would put a secret in the file; they are refused.
var secretKeys = map[string]string{
	"api_key": EnvAPIKey, "apikey": EnvAPIKey, "key": EnvAPIKey, "token": EnvAPIKey,
	"bearer": EnvAPIKey, "authorization": EnvAPIKey, "x-api-key": EnvAPIKey,
	"marketplace_key": EnvMarketplaceKey,
}

// Error is a problem in domains.yaml; Line is 0 when it concerns the file as a whole.
type Error struct {
	Path string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}

// Load reads and validates the config file at path, applying the environment
// (ATLAS_BASE_URL overrides api.base_url). Every error is a *Error or wraps one.
func Load(path string, getenv func(string) string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, &Error{Path: path, Msg: "config file not found (pass --config FILE, or run from the directory holding domains.yaml)"}
		}
		return nil, &Error{Path: path, Msg: err.Error()}
	}
	return Parse(path, data, getenv)
}

// Parse validates config text; path is used for messages and to resolve relative paths.
func Parse(path string, data []byte, getenv func(string) string) (*Config, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		return nil, &Error{Path: path, Msg: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil, &Error{Path: path, Msg: "expected a mapping with schedule, api, warehouse and domains"}
	}
	top := root.Content[0]
	if err := checkKeys(path, "", top); err != nil {
		return nil, err
	}
	cfg := &Config{Path: path}
	if err := top.Decode(cfg); err != nil {
		return nil, typeError(path, top, err)
	}
	cfg.lines = domainLines(top)
	cfg.applyDefaults(getenv)
	if err := cfg.validate(top); err != nil {
		return nil, err
	}
	cfg.resolvePaths()
	return cfg, nil
}

// checkKeys walks a mapping and its known sub-sections, refusing unknown and secret keys.
func checkKeys(path, section string, m *yaml.Node) error {
	known := knownKeys[section]
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		name := strings.ToLower(k.Value)
		if env, ok := secretKeys[name]; ok {
			return &Error{Path: path, Line: k.Line, Msg: fmt.Sprintf("key %q would put a secret in the config file; remove it and set the environment variable %s instead", k.Value, env)}
		}
		if !slices.Contains(known, k.Value) {
			where := "at the top level"
			if section != "" {
				where = "under " + section
			}
			return &Error{Path: path, Line: k.Line, Msg: fmt.Sprintf("unknown key %q %s (known keys: %s)", k.Value, where, strings.Join(known, ", "))}
		}
		if _, isSection := knownKeys[k.Value]; isSection && section == "" {
			if v.Kind != yaml.MappingNode {
				return &Error{Path: path, Line: v.Line, Msg: fmt.Sprintf("%s must be a mapping of keys (%s)", k.Value, strings.Join(knownKeys[k.Value], ", "))}
			}
			if err := checkKeys(path, k.Value, v); err != nil {
				return err
			}
		}
	}
	return nil
}

var yamlLine = regexp.MustCompile(`^line (\d+): (.*)$`)

// typeError turns yaml.v3's first type error ("line 3: cannot unmarshal !!str `fast` into
// float64") into a message naming the key, e.g. "api.rate_limit: `fast` is not a number".
func typeError(path string, top *yaml.Node, err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) || len(te.Errors) == 0 {
		return &Error{Path: path, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	m := yamlLine.FindStringSubmatch(te.Errors[0])
	if m == nil {
		return &Error{Path: path, Msg: te.Errors[0]}
	}
	line, _ := strconv.Atoi(m[1])
	msg := m[2]
	if i := strings.Index(msg, " into "); i >= 0 {
		want := map[string]string{"float64": "a number", "int64": "a whole number", "string": "a string", "[]string": "a list of domains"}[msg[i+6:]]
		if want == "" {
			want = "of type " + msg[i+6:]
		}
		value := msg[strings.LastIndex(msg[:i], " ")+1 : i]
		msg = fmt.Sprintf("%s is not %s", value, want)
	}
	if key := keyAtLine(top, "", line); key != "" {
		msg = key + ": " + msg
	}
	return &Error{Path: path, Line: line, Msg: msg}
}

// keyAtLine returns the dotted key whose value sits on line, or "".
func keyAtLine(m *yaml.Node, prefix string, line int) string {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		name := prefix + k.Value
		if v.Kind == yaml.MappingNode {
			if found := keyAtLine(v, name+".", line); found != "" {
				return found
			}
		}
		if v.Line == line || k.Line == line {
			return name
		}
	}
	return ""
}

func domainLines(top *yaml.Node) []int {
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value == "domains" {
			var lines []int
			for _, item := range top.Content[i+1].Content {
				lines = append(lines, item.Line)
			}
			return lines
		}
	}
	return nil
}

// lineOf returns the config line of the key at a dotted path such as "api.rate_limit".
func lineOf(top *yaml.Node, dotted string) int {
	node := top
	line := 0
	for _, part := range strings.Split(dotted, ".") {
		found := false
		for i := 0; node != nil && i+1 < len(node.Content); i += 2 {
			if node.Content[i].Value == part {
				line, node, found = node.Content[i].Line, node.Content[i+1], true
				break
			}
		}
		if !found {
			return line
		}
	}
	return line
}

func (c *Config) applyDefaults(getenv func(string) string) {
	if c.Schedule == "" {
		c.Schedule = DefaultSchedule
	}
	if v := getenv(EnvBaseURL); v != "" {
		c.API.BaseURL, c.baseURLFromEnv = v, true
	}
	if c.API.Mode == "" {
		c.API.Mode = "direct"
	}
	if c.API.RateLimit == 0 {
		c.API.RateLimit = DefaultRateLimit
	}
	if c.API.Timeout.Duration == 0 {
		c.API.Timeout.Duration = DefaultTimeout
	}
	if c.Warehouse.DuckDB == "" {
		c.Warehouse.DuckDB = DefaultDuckDB
	}
	if c.Warehouse.Parquet == "" {
		c.Warehouse.Parquet = DefaultParquet
	}
	if c.Warehouse.MemoryLimit == "" {
		c.Warehouse.MemoryLimit = DefaultMemoryLimit
	}
	if c.RetryEvery.Duration == 0 {
		c.RetryEvery.Duration = DefaultRetryEvery
	}
	if c.HealthGrace.Duration == 0 {
		c.HealthGrace.Duration = DefaultHealthGrace
	}
	if c.API.MaxWastedCredits == 0 {
		c.API.MaxWastedCredits = DefaultMaxWastedCredits
	}
	if c.API.MaxRateLimitWait.Duration == 0 {
		c.API.MaxRateLimitWait.Duration = DefaultMaxRateLimitWait
	}
	if v := getenv(EnvWebhookURL); v != "" {
		c.Notify.WebhookURL = v
	}
}

func (c *Config) validate(top *yaml.Node) error {
	bad := func(key, msg string) error {
		return &Error{Path: c.Path, Line: lineOf(top, key), Msg: key + ": " + msg}
	}
	if _, err := cron.ParseStandard(c.Schedule); err != nil || len(strings.Fields(c.Schedule)) != 5 {
		return bad("schedule", fmt.Sprintf("%q is not a 5-field cron expression (minute hour day-of-month month day-of-week, e.g. %q)", c.Schedule, DefaultSchedule))
	}
	// The client's own check, so config and client never disagree on a usable base URL.
	if err := atlas.CheckBaseURL(c.API.BaseURL, c.API.AllowInsecureHTTP); err != nil {
		if c.baseURLFromEnv {
			return &Error{Path: c.Path, Msg: fmt.Sprintf("%s (which overrides api.base_url): %v", EnvBaseURL, err)}
		}
		return bad("api.base_url", err.Error())
	}
	switch c.API.Mode {
	case "direct":
	case "marketplace":
		if c.API.MarketplaceHost == "" {
			return bad("api.marketplace_host", "required in marketplace mode (the listing host sent as x-marketplace-host)")
		}
	default:
		return bad("api.mode", fmt.Sprintf("%q is not a mode; use direct or marketplace", c.API.Mode))
	}
	switch {
	case !(c.API.RateLimit > 0 && c.API.RateLimit <= maxRateLimit): // also refuses NaN and Inf
		return bad("api.rate_limit", fmt.Sprintf("must be a number of requests per second above 0 and at most %d", maxRateLimit))
	case c.API.MinCredits < 0:
		return bad("api.min_credits", "must be 0 or more")
	case c.API.MaxCreditsPerRun < 0:
		return bad("api.max_credits_per_run", "must be 0 (no cap) or more")
	case c.API.Timeout.Duration < 0:
		return bad("api.timeout", "must be positive, e.g. 30s")
	}
	if len(c.Domains) == 0 {
		return &Error{Path: c.Path, Line: lineOf(top, "domains"), Msg: "domains: the watchlist is empty; list at least one domain"}
	}
	return nil
}

func (c *Config) resolvePaths() {
	dir := filepath.Dir(c.Path)
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	c.Warehouse.DuckDB = abs(c.Warehouse.DuckDB)
	c.Warehouse.Parquet = abs(c.Warehouse.Parquet)
}

// DomainLine returns the config line of domains[i], or 0.
func (c *Config) DomainLine(i int) int {
	if i < len(c.lines) {
		return c.lines[i]
	}
	return 0
}
