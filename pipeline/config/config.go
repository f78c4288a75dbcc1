// Package config reads domains.yaml: it parses and validates the settings, reporting every
// problem at once with its line, and normalizes the watchlist (watchlist.go). Secrets come only
// from the environment (credentials.go).
package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Environment variables read by sitewatch. Secrets come only from here, never from the config.
const (
	EnvAPIKey         = "ATLAS_API_KEY"
	EnvBaseURL        = "ATLAS_BASE_URL"
	EnvMarketplaceKey = "ATLAS_MARKETPLACE_KEY"
	EnvWebhookURL     = "SITEWATCH_WEBHOOK_URL"
)

// Config is domains.yaml after validation, with defaults applied and relative warehouse paths
// resolved against the config file's directory (so a cron job works from any working
// directory).
type Config struct {
	Path      string
	Schedule  string
	API       APIConfig
	Warehouse WarehouseConfig
	// RetryEvery is how often `schedule` retries a current month that is not complete.
	RetryEvery Duration
	// HealthGrace is how long into a month /healthz tolerates the month not being complete.
	HealthGrace Duration
	Discover    DiscoverConfig // discover.go: schedule grows the watchlist
	Notify      NotifyConfig
	Publish     PublishConfig
	Attention   AttentionConfig // attention.go
	Domains     []string
	// lines maps each domains[i] to its line in the file, for messages (32 bits: held for the
	// whole run, 4 MB at a million domains).
	lines []int32
	// baseURLFromEnv says API.BaseURL came from ATLAS_BASE_URL, so messages blame it.
	baseURLFromEnv bool
	// webhookFromEnv says Notify.WebhookURL came from SITEWATCH_WEBHOOK_URL.
	webhookFromEnv bool
	// present holds the dotted keys the file sets (to a non-null value), so an explicit 0 is
	// told apart from an absent key.
	present map[string]bool
	// keyLines holds the line of every key the file sets, by dotted name.
	keyLines map[string]int
	// mistyped holds the keys whose value did not decode (already reported).
	mistyped map[string]bool
}

// APIConfig is the api section of domains.yaml.
type APIConfig struct {
	BaseURL          string
	Mode             string
	MarketplaceHost  string
	RateLimit        float64
	MinCredits       int64
	MaxCreditsPerRun int64
	Timeout          Duration
	// AllowInsecureHTTP lets a plain http:// base_url name a non-loopback host (the key then
	// crosses the network in clear text).
	AllowInsecureHTTP bool
	// MaxWastedCredits bounds the credits a run may spend on charged answers it cannot use
	// (broken bodies refetched); the run stops when it is reached. 0 allows no waste.
	MaxWastedCredits int64
	// MaxRateLimitWait bounds the total time a run waits out 429 answers.
	MaxRateLimitWait Duration
	// Sources, when set (api.sources), replaces base_url, mode, marketplace_host, rate_limit
	// and min_credits with several credit sources (sources.go); Sources() reads either form.
	Sources []SourceConfig
}

// NotifyConfig is the notify section of domains.yaml.
type NotifyConfig struct {
	WebhookURL string // SITEWATCH_WEBHOOK_URL overrides it; a secret, never printed in full
	// On lists the kinds of outcome posted (NotifyKinds); nil: NotifyDefaultOn.
	On []string
}

// PublishConfig is the publish section of domains.yaml: where complete months are uploaded.
type PublishConfig struct {
	URL       string // s3://bucket/prefix; empty = no publishing
	Endpoint  string // S3-compatible services
	Region    string
	PathStyle bool
	// Lease (publish.lease: on | off; "" = on) and LeaseTTL (publish.lease_ttl): one writer
	// per bucket across machines (pipeline/lease; see lease.go here).
	Lease    string
	LeaseTTL Duration
	// LogInterval (publish.log_interval): how often a run holding the lease writes its new
	// answers to the bucket's answer log (pipeline/answerlog).
	LogInterval Duration

	// Iceberg (docs/iceberg.md): the table format(s) written and the catalog that holds them.
	Format        string // hive | iceberg | both
	Catalog       string // postgres://user@host:port/db (SQL catalog) or https://… (REST catalog)
	Namespace     string // namespace of the tables in the catalog
	KeepSnapshots int    // snapshots kept per table; older ones expire and their files go
}

// WarehouseConfig is the warehouse section of domains.yaml.
type WarehouseConfig struct {
	DuckDB  string
	Parquet string
	// MemoryLimit is DuckDB's memory_limit while `run` and `schedule` load, check and export
	// (a DuckDB size such as 40MB; beyond it DuckDB spills to <duckdb file>.tmp/).
	MemoryLimit string
}

// Duration is a time.Duration written as a Go duration string ("30s") in YAML.
type Duration struct{ time.Duration }

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil {
		return fmt.Errorf("%q is not a duration (write e.g. 30s, 15m or 6h)", n.Value)
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
	DefaultMemoryLimit      = "128MB"
)

// Bounds of domains.yaml keys.
const (
	// maxRateLimit bounds api.rate_limit: far above any plan, low enough to catch a typo.
	maxRateLimit = 10000
	// minRetryEvery keeps `schedule` from hammering a failing API.
	minRetryEvery = time.Minute
	// maxHealthGrace keeps /healthz able to turn unhealthy in every month, February included.
	maxHealthGrace = 27 * 24 * time.Hour
	// minMemoryLimit is the least DuckDB needs to load and export a snapshot.
	minMemoryLimit = 64 << 20
)

// keys lists every accepted key in the order messages list them; a typo is an error, never
// silently ignored. A key whose name is a section holds that section's keys.
var keys = map[string][]string{
	"":            {"schedule", "api", "warehouse", "retry_every", "health_grace", "notify", "publish", "attention", "discover", "domains"},
	"api":         {"base_url", "mode", "marketplace_host", "rate_limit", "min_credits", "max_credits_per_run", "timeout", "allow_insecure_http", "max_wasted_credits", "max_rate_limit_wait", "sources"},
	"api.sources": sourceKeys,
	"discover":    discoverKeys,
	"warehouse":   {"duckdb", "parquet", "memory_limit"},
	"notify":      {"webhook_url", "on"},
	"attention":   {"min_visits", "threshold"},
	"publish":     {"url", "endpoint", "region", "path_style", "lease", "lease_ttl", "log_interval", "format", "catalog", "namespace", "keep_snapshots"},
}

// targets maps each dotted key to the field it fills.
func (c *Config) targets() map[string]any {
	return map[string]any{
		"schedule": &c.Schedule, "retry_every": &c.RetryEvery, "health_grace": &c.HealthGrace,
		"discover.add_per_month": &c.Discover.AddPerMonth, "discover.monthly_budget": &c.Discover.MonthlyBudget,
		"discover.min_visits": &c.Discover.MinVisits,
		"api.base_url":        &c.API.BaseURL, "api.mode": &c.API.Mode, "api.marketplace_host": &c.API.MarketplaceHost,
		"api.rate_limit": &c.API.RateLimit, "api.min_credits": &c.API.MinCredits,
		"api.max_credits_per_run": &c.API.MaxCreditsPerRun, "api.timeout": &c.API.Timeout,
		"api.allow_insecure_http": &c.API.AllowInsecureHTTP, "api.max_wasted_credits": &c.API.MaxWastedCredits,
		"api.max_rate_limit_wait": &c.API.MaxRateLimitWait,
		"warehouse.duckdb":        &c.Warehouse.DuckDB, "warehouse.parquet": &c.Warehouse.Parquet,
		"warehouse.memory_limit": &c.Warehouse.MemoryLimit,
		"notify.webhook_url":     &c.Notify.WebhookURL,
		"publish.url":            &c.Publish.URL, "publish.endpoint": &c.Publish.Endpoint,
		"publish.region": &c.Publish.Region, "publish.path_style": &c.Publish.PathStyle,
		"publish.lease": &c.Publish.Lease, "publish.lease_ttl": &c.Publish.LeaseTTL, "publish.log_interval": &c.Publish.LogInterval,
		"publish.format": &c.Publish.Format, "publish.catalog": &c.Publish.Catalog,
		"publish.namespace": &c.Publish.Namespace, "publish.keep_snapshots": &c.Publish.KeepSnapshots,
		"attention.min_visits": &c.Attention.MinVisits, "attention.threshold": &c.Attention.Threshold,
	}
}

// secretKeys are key names that would put a secret in the file; they are refused.
var secretKeys = map[string]string{
	"api_key": EnvAPIKey, "apikey": EnvAPIKey, "key": EnvAPIKey, "token": EnvAPIKey,
	"bearer": EnvAPIKey, "authorization": EnvAPIKey, "x-api-key": EnvAPIKey,
	"marketplace_key": EnvMarketplaceKey,
}

// Error is a problem in domains.yaml (or the environment it reads); Line is 0 when it
// concerns the file as a whole.
type Error struct {
	Path string
	Line int
	Msg  string
	err  error // a sentinel such as ErrKeyNotSet, for errors.Is
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}

// Unwrap returns the sentinel the error stands for, if any.
func (e *Error) Unwrap() error { return e.err }

// Errors is every problem found in one config file, in line order; errors.As finds each
// *Error in it. It prints one problem per line.
type Errors []*Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	if len(es) > 1 {
		return fmt.Sprintf("%d problems in the config:\n  %s", len(es), strings.Join(lines, "\n  "))
	}
	return strings.Join(lines, "")
}

// Unwrap returns the problems, for errors.As and errors.Is.
func (es Errors) Unwrap() []error {
	errs := make([]error, len(es))
	for i, e := range es {
		errs[i] = e
	}
	return errs
}

// Load reads and validates the config file at path, applying the environment
// (ATLAS_BASE_URL overrides api.base_url, SITEWATCH_WEBHOOK_URL notify.webhook_url). Every
// error is a *Error or an Errors.
func Load(path string, getenv func(string) string) (*Config, error) {
	text, err := readText(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, &Error{Path: path, Msg: "config file not found (pass --config FILE, or run from the directory holding domains.yaml)"}
		}
		return nil, &Error{Path: path, Msg: err.Error()}
	}
	return parseText(path, text, getenv)
}

// readText reads the file at path into a string without a second copy (os.ReadFile and a
// conversion would hold two): the watchlist's domains are substrings of it for the whole
// command, 21 MB for a million domains.
func readText(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }() // read only
	var b strings.Builder
	if info, err := f.Stat(); err == nil && info.Size() < math.MaxInt32 {
		b.Grow(int(info.Size()) + 1) // +1: io.Copy's last read finds EOF without growing
	}
	if _, err := io.Copy(&b, f); err != nil {
		return "", err
	}
	return b.String(), nil
}

// problems collects the errors of one file.
type problems struct {
	path string
	list Errors
}

func (p *problems) add(line int, format string, args ...any) {
	p.list = append(p.list, &Error{Path: p.path, Line: line, Msg: fmt.Sprintf(format, args...)})
}

// err returns the problems in line order (file-wide ones first), or nil.
func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	slices.SortStableFunc(p.list, func(a, b *Error) int { return cmp.Compare(a.Line, b.Line) })
	return p.list
}

// Parse validates config text; path is used for messages and to resolve relative paths. It
// reports every problem it finds, not only the first: an Errors of *Error, each with its line.
func Parse(path string, data []byte, getenv func(string) string) (*Config, error) {
	return parseText(path, string(data), getenv)
}

// parseText is Parse of the file's text, which the watchlist's domains share.
func parseText(path, text string, getenv func(string) string) (*Config, error) {
	p := &problems{path: path}
	if !checkUTF8(p, text) {
		return nil, p.err()
	}
	if rest, domains, lines, ok := splitDomains(text); ok {
		if cfg, parsed, err := parseRest(path, rest, getenv, domains, lines); parsed {
			return cfg, err
		}
	}
	return parseWhole(path, text, getenv)
}

// parseRest parses rest, the config with its watchlist taken out by splitDomains, and puts the
// watchlist back in before validating. parsed is false when rest is not valid YAML: the
// caller then parses the whole file, so every message reads as it always did.
func parseRest(path string, rest []byte, getenv func(string) string, domains []string, lines []int32) (cfg *Config, parsed bool, err error) {
	var root yaml.Node
	if yaml.NewDecoder(bytes.NewReader(rest)).Decode(&root) != nil || len(root.Content) == 0 || resolve(root.Content[0]).Kind != yaml.MappingNode {
		return nil, false, nil
	}
	cfg, err = decodeRoot(path, &root, getenv, func(c *Config) { c.Domains, c.lines = domains, lines })
	return cfg, true, err
}

// parseWhole parses text as one YAML document, the watchlist with it.
func parseWhole(path, text string, getenv func(string) string) (*Config, error) {
	p := &problems{path: path}
	var root yaml.Node
	if err := yaml.NewDecoder(strings.NewReader(text)).Decode(&root); err != nil {
		if !checkTabs(p, text) {
			yamlSyntax(p, text, err)
		}
		return nil, p.err()
	}
	if len(root.Content) == 0 || resolve(root.Content[0]).Kind != yaml.MappingNode {
		p.add(0, "expected a mapping with schedule, api, warehouse and domains")
		return nil, p.err()
	}
	return decodeRoot(path, &root, getenv, nil)
}

// decodeRoot decodes and validates the config of root (a mapping); addDomains, when set, puts
// in the watchlist read apart from it.
func decodeRoot(path string, root *yaml.Node, getenv func(string) string, addDomains func(*Config)) (*Config, error) {
	p := &problems{path: path}
	cfg := &Config{Path: path, present: map[string]bool{}, keyLines: map[string]int{}, mistyped: map[string]bool{}}
	cfg.decode(p, "", resolve(root.Content[0]))
	if addDomains != nil {
		addDomains(cfg)
	}
	cfg.applyDefaults(getenv)
	cfg.validate(p)
	if err := p.err(); err != nil {
		return nil, err
	}
	cfg.resolvePaths()
	return cfg, nil
}

// checkUTF8 reports every line holding a byte that is not UTF-8 (yaml would refuse the whole
// file without a line).
func checkUTF8(p *problems, text string) bool {
	if utf8.ValidString(text) {
		return true // without splitting a million-line file into lines (24 MB)
	}
	ok := true
	for i, line := range strings.Split(text, "\n") {
		if !utf8.ValidString(line) {
			p.add(i+1, "not valid UTF-8 (byte 0x%02x); save the file as UTF-8", firstInvalidByte(line))
			ok = false
		}
	}
	return ok
}

// checkTabs reports lines indented with a tab, which YAML forbids (yaml's own message names a
// neighbouring line). It is consulted only when the file does not parse.
func checkTabs(p *problems, text string) bool {
	found := false
	for i, line := range strings.Split(text, "\n") {
		indent := line[:len(line)-len(strings.TrimLeft(line, " \t"))]
		if strings.Contains(indent, "\t") {
			p.add(i+1, "indented with a tab; YAML indentation must use spaces")
			found = true
		}
	}
	return found
}

func firstInvalidByte(line string) byte {
	for len(line) > 0 {
		r, size := utf8.DecodeRuneInString(line)
		if r == utf8.RuneError && size <= 1 {
			return line[0]
		}
		line = line[size:]
	}
	return 0
}

func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// decode walks one mapping of the file, filling the fields it names and reporting unknown,
// secret, repeated and mistyped keys.
func (c *Config) decode(p *problems, section string, m *yaml.Node) {
	targets := c.targets()
	seen := map[string]int{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], resolve(m.Content[i+1])
		dotted := k.Value
		if section != "" {
			dotted = section + "." + k.Value
		}
		if !checkKey(p, section, k, seen) {
			continue
		}
		c.keyLines[dotted] = k.Line
		if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
			continue // "key:" with no value: the default
		}
		c.present[dotted] = true
		switch {
		case dotted == "domains":
			c.decodeDomains(p, v)
		case dotted == "api.sources":
			c.decodeSources(p, v)
		case dotted == "notify.on":
			c.decodeNotifyOn(p, v)
		case section == "" && keys[k.Value] != nil:
			if v.Kind != yaml.MappingNode {
				p.add(v.Line, "%s must be a mapping of keys (%s)", k.Value, strings.Join(keys[k.Value], ", "))
				continue
			}
			c.decode(p, k.Value, v)
		default:
			c.mistyped[dotted] = !decodeValue(p, dotted, v, targets[dotted])
		}
	}
}

// checkKey reports a secret, unknown or repeated key; it returns whether to decode its value.
func checkKey(p *problems, section string, k *yaml.Node, seen map[string]int) bool {
	if env, ok := secretKeys[strings.ToLower(k.Value)]; ok {
		p.add(k.Line, "key %q would put a secret in the config file; remove it and set the environment variable %s instead", k.Value, env)
		return false
	}
	known := keys[section]
	if !slices.Contains(known, k.Value) {
		where := "at the top level"
		if section != "" {
			where = "under " + section
		}
		p.add(k.Line, "unknown key %q %s (known keys: %s)", k.Value, where, strings.Join(known, ", "))
		return false
	}
	if first, dup := seen[k.Value]; dup {
		p.add(k.Line, "key %q repeats the one on line %d; keep one", k.Value, first)
		return false
	}
	seen[k.Value] = k.Line
	return true
}

// decodeValue decodes one scalar into its field, naming the key, the value and the expected
// type when it does not fit (without parsing yaml's English messages). It reports whether the
// value fit.
func decodeValue(p *problems, key string, v *yaml.Node, target any) bool {
	_, wantsInt := target.(*int64)
	if v.Kind == yaml.ScalarNode && (!wantsInt || v.ShortTag() == "!!int") && v.Decode(target) == nil {
		return true // (yaml would truncate 1.5 into a whole-number field without a word)
	}
	got := "`" + v.Value + "`"
	switch v.Kind {
	case yaml.MappingNode:
		got = "a mapping"
	case yaml.SequenceNode:
		got = "a list"
	}
	p.add(v.Line, "%s: %s is not %s", key, got, expected(target))
	return false
}

func expected(target any) string {
	switch target.(type) {
	case *float64:
		return "a number"
	case *int64:
		return "a whole number"
	case *bool:
		return "true or false"
	case *Duration:
		return "a duration (write e.g. 30s, 15m or 6h)"
	}
	return "a string"
}

// decodeDomains reads the watchlist item by item, keeping each item's line (an empty item
// stays in place, so later lines are not shifted, and is rejected by the watchlist).
func (c *Config) decodeDomains(p *problems, v *yaml.Node) {
	if v.Kind != yaml.SequenceNode {
		p.add(v.Line, "domains: must be a list, one domain per line (e.g. \"  - example.com\")")
		return
	}
	for _, item := range v.Content {
		item = resolve(item)
		if item.Kind != yaml.ScalarNode {
			p.add(item.Line, "domains: this item is a %s, not a domain; write one domain per item", kindName(item.Kind))
			continue
		}
		value := item.Value
		if item.Tag == "!!null" {
			value = ""
		}
		c.Domains = append(c.Domains, value)
		c.lines = append(c.lines, int32(item.Line))
	}
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	}
	return "value"
}

// lineOf returns the line of the key at a dotted path such as "api.rate_limit", or of its
// section when the key is absent, or 0.
func (c *Config) lineOf(dotted string) int {
	if line, ok := c.keyLines[dotted]; ok {
		return line
	}
	if i := strings.LastIndexByte(dotted, '.'); i >= 0 {
		return c.keyLines[dotted[:i]]
	}
	return 0
}

func (c *Config) applyDefaults(getenv func(string) string) {
	if v := getenv(EnvBaseURL); v != "" {
		c.API.BaseURL, c.baseURLFromEnv = v, true
		c.overrideSourceURLs(v) // sources.go: with api.sources, every source
	}
	if v := getenv(EnvWebhookURL); v != "" {
		c.Notify.WebhookURL, c.webhookFromEnv = v, true
	}
	def := func(key string, apply func()) {
		if !c.present[key] {
			apply()
		}
	}
	def("schedule", func() { c.Schedule = DefaultSchedule })
	def("api.mode", func() { c.API.Mode = "direct" })
	def("api.rate_limit", func() { c.API.RateLimit = DefaultRateLimit })
	def("api.timeout", func() { c.API.Timeout.Duration = DefaultTimeout })
	def("api.max_wasted_credits", func() { c.API.MaxWastedCredits = DefaultMaxWastedCredits })
	def("api.max_rate_limit_wait", func() { c.API.MaxRateLimitWait.Duration = DefaultMaxRateLimitWait })
	def("warehouse.duckdb", func() { c.Warehouse.DuckDB = DefaultDuckDB })
	def("warehouse.parquet", func() { c.Warehouse.Parquet = DefaultParquet })
	def("warehouse.memory_limit", func() { c.Warehouse.MemoryLimit = DefaultMemoryLimit })
	def("retry_every", func() { c.RetryEvery.Duration = DefaultRetryEvery })
	def("health_grace", func() { c.HealthGrace.Duration = DefaultHealthGrace })
	c.icebergDefaults(def)
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
		return int(c.lines[i])
	}
	return 0
}
