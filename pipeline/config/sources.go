package config

import (
	"fmt"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"sitewatch/pipeline/secret"
)

// SourceConfig is one credit source of api.sources: a direct gateway wallet or a marketplace
// listing's monthly quota, with its own keys (named by environment variable), rate and reserve.
type SourceConfig struct {
	Name            string
	Mode            string // direct | marketplace
	BaseURL         string
	MarketplaceHost string
	// KeyEnv names the variable holding the API key (direct: required; marketplace: the
	// optional bearer key). MarketplaceKeyEnv names the variable holding the listing key.
	KeyEnv            string
	MarketplaceKeyEnv string
	RateLimit         float64
	MinCredits        int64
	// Line is the source's line in the file (0 for the single-source form).
	Line    int
	present map[string]bool
	lines   map[string]int
}

// sourceKeys are the keys of one api.sources item.
var sourceKeys = []string{"name", "mode", "base_url", "marketplace_host", "key_env", "marketplace_key_env", "rate_limit", "min_credits"}

// singleFormKeys are the api keys api.sources replaces; setting both forms is an error.
var singleFormKeys = []string{"base_url", "mode", "marketplace_host", "rate_limit", "min_credits"}

func (s *SourceConfig) targets() map[string]any {
	return map[string]any{"name": &s.Name, "mode": &s.Mode, "base_url": &s.BaseURL, "marketplace_host": &s.MarketplaceHost,
		"key_env": &s.KeyEnv, "marketplace_key_env": &s.MarketplaceKeyEnv, "rate_limit": &s.RateLimit, "min_credits": &s.MinCredits}
}

// decodeSources reads api.sources: a list of mappings, each checked key by key.
func (c *Config) decodeSources(p *problems, v *yaml.Node) {
	if v.Kind != yaml.SequenceNode {
		p.add(v.Line, "api.sources: must be a list of sources, each a mapping (name, mode, base_url, ...)")
		return
	}
	for i, item := range v.Content {
		item = resolve(item)
		if item.Kind != yaml.MappingNode {
			p.add(item.Line, "api.sources: item %d is a %s, not a mapping of %v", i+1, kindName(item.Kind), sourceKeys)
			continue
		}
		s := SourceConfig{Line: item.Line, present: map[string]bool{}, lines: map[string]int{}}
		targets, seen := s.targets(), map[string]int{}
		for j := 0; j+1 < len(item.Content); j += 2 {
			k, val := item.Content[j], resolve(item.Content[j+1])
			if !checkKey(p, "api.sources", k, seen) {
				continue
			}
			s.lines[k.Value] = k.Line
			if val.Kind == yaml.ScalarNode && val.Tag == "!!null" {
				continue
			}
			s.present[k.Value] = decodeValue(p, fmt.Sprintf("api.sources[%d].%s", i, k.Value), val, targets[k.Value])
		}
		if !s.present["rate_limit"] {
			s.RateLimit = DefaultRateLimit
		}
		c.API.Sources = append(c.API.Sources, s)
	}
}

var (
	sourceName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)
	envName    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// overrideSourceURLs points every source of api.sources at ATLAS_BASE_URL. The variable
// exists for tests and demos, which point a config at one simulator; the simulator serves the
// direct gateway and the marketplace listing from one address, so a two-source config works
// against it unchanged. `check` says so, and a run logs it.
func (c *Config) overrideSourceURLs(url string) {
	for i := range c.API.Sources {
		c.API.Sources[i].BaseURL = url
	}
}

// BaseURLFromEnv says ATLAS_BASE_URL replaced api.base_url, or every source's base_url.
func (c *Config) BaseURLFromEnv() bool { return c.baseURLFromEnv }

// validateSources checks api.sources, one problem per bad key, each on its own line.
func (c *Config) validateSources(p *problems) {
	if c.baseURLFromEnv {
		if err := secret.CheckBaseURL(c.API.BaseURL, c.API.AllowInsecureHTTP); err != nil {
			p.add(0, "%s (which overrides the base_url of every source in api.sources): %v", EnvBaseURL, err)
		}
	}
	for _, k := range singleFormKeys {
		if c.present["api."+k] {
			p.add(c.lineOf("api."+k), "api.%s: api.sources replaces it (each source sets its own %s); remove one of the two forms", k, k)
		}
	}
	if len(c.API.Sources) == 0 {
		p.add(c.lineOf("api.sources"), "api.sources: the list is empty; list at least one source, or remove the key")
	}
	names := map[string]int{}
	for i, s := range c.API.Sources {
		bad := func(key, format string, args ...any) {
			line := s.Line
			if l, ok := s.lines[key]; ok {
				line = l
			}
			p.add(line, fmt.Sprintf("api.sources[%d].%s: ", i, key)+format, args...)
		}
		s.validate(bad, c.API.AllowInsecureHTTP, c.baseURLFromEnv)
		if first, dup := names[s.Name]; dup && s.Name != "" {
			bad("name", "%q is also the name of source %d; names must differ (the ledger and status name the source that paid)", s.Name, first)
		}
		names[s.Name] = i
	}
	c.validateSharedKeys(p)
}

// validateSharedKeys refuses two sources that name the same key variable on the same
// service: they would spend one wallet (or quota) twice over, each with its own reserve,
// and every balance would be the sum of two views of it.
func (c *Config) validateSharedKeys(p *problems) {
	seen := map[string]int{}
	for i, s := range c.API.Sources {
		for _, k := range s.walletKeys() {
			first, dup := seen[k.id]
			if !dup {
				seen[k.id] = i
				continue
			}
			line := s.Line
			if l, ok := s.lines[k.key]; ok {
				line = l
			}
			p.add(line, "api.sources[%d].%s: source %q uses %s on the same service as source %q (api.sources[%d]): one wallet would be spent as two, each with its own reserve; list it once",
				i, k.key, s.Name, k.env, c.API.Sources[first].Name, first)
		}
	}
}

type walletKey struct{ id, key, env string }

// walletKeys identifies the wallets s spends: its key variable on its service (mode, base
// URL and, on a marketplace, the listing host).
func (s SourceConfig) walletKeys() []walletKey {
	service := s.Mode + " " + strings.TrimRight(strings.ToLower(s.BaseURL), "/")
	var out []walletKey
	switch s.Mode {
	case "direct":
		if s.KeyEnv != "" {
			out = append(out, walletKey{id: service + " key " + s.KeyEnv, key: "key_env", env: s.KeyEnv})
		}
	case "marketplace":
		if s.MarketplaceKeyEnv != "" {
			host := strings.ToLower(s.MarketplaceHost)
			out = append(out, walletKey{id: service + " " + host + " listing " + s.MarketplaceKeyEnv, key: "marketplace_key_env", env: s.MarketplaceKeyEnv})
		}
	}
	return out
}

func (s *SourceConfig) validate(bad func(key, format string, args ...any), insecure, fromEnv bool) {
	if !sourceName.MatchString(s.Name) {
		bad("name", "%q: want a short lower-case name (letters, digits, - and _), e.g. marketplace or direct", s.Name)
	}
	if err := secret.CheckBaseURL(s.BaseURL, insecure); err != nil && !fromEnv { // ATLAS_BASE_URL is checked once
		bad("base_url", "%v", err)
	}
	switch s.Mode {
	case "direct":
		if s.KeyEnv == "" {
			bad("key_env", "required for a direct source: the name of the environment variable holding its API key, e.g. ATLAS_API_KEY")
		}
	case "marketplace":
		if s.MarketplaceHost == "" {
			bad("marketplace_host", "required for a marketplace source (the listing host sent as x-marketplace-host)")
		}
		if s.MarketplaceKeyEnv == "" {
			bad("marketplace_key_env", "required for a marketplace source: the environment variable holding the listing key, e.g. ATLAS_MARKETPLACE_KEY")
		}
	default:
		bad("mode", "%q is not a mode; use direct or marketplace", s.Mode)
	}
	for key, v := range map[string]string{"key_env": s.KeyEnv, "marketplace_key_env": s.MarketplaceKeyEnv} {
		if v != "" && !envName.MatchString(v) {
			bad(key, "%q is not an environment variable name (letters, digits and _); name the variable, never put the key here", v)
		}
	}
	if msg := checkRateLimit(s.RateLimit); msg != "" {
		bad("rate_limit", "%s", msg)
	}
	if s.MinCredits < 0 {
		bad("min_credits", "must be 0 or more")
	}
}

// Sources returns the credit sources of the config: api.sources, or the single-source form
// (api.base_url, api.mode, ...) as a list of one named after its mode.
func (c *Config) Sources() []SourceConfig {
	if len(c.API.Sources) > 0 {
		return c.API.Sources
	}
	return []SourceConfig{{
		Name: c.API.Mode, Mode: c.API.Mode, BaseURL: c.API.BaseURL, MarketplaceHost: c.API.MarketplaceHost,
		KeyEnv: EnvAPIKey, MarketplaceKeyEnv: EnvMarketplaceKey, RateLimit: c.API.RateLimit, MinCredits: c.API.MinCredits,
	}}
}

// MultiSource says whether the config uses api.sources.
func (c *Config) MultiSource() bool { return len(c.API.Sources) > 0 }

// SourceCredentials reads the keys of source s from the variables it names and checks them
// as CredentialsFrom does. Errors are *Error naming the variable, never its value.
func SourceCredentials(cfg *Config, s SourceConfig, getenv func(string) string) (Credentials, error) {
	c := Credentials{}
	if s.KeyEnv != "" {
		c.APIKey = getenv(s.KeyEnv)
	}
	if s.MarketplaceKeyEnv != "" {
		c.MarketplaceKey = getenv(s.MarketplaceKeyEnv)
	}
	for _, k := range []struct{ name, value string }{{s.KeyEnv, c.APIKey}, {s.MarketplaceKeyEnv, c.MarketplaceKey}} {
		if why := keyProblem(k.value); why != "" {
			return Credentials{}, &Error{Path: cfg.Path, Msg: fmt.Sprintf("source %s: %s %s (the value is not shown); set it to the bare key", s.Name, k.name, why), err: ErrKeyMalformed}
		}
	}
	switch {
	case s.Mode == "direct" && c.APIKey == "":
		return Credentials{}, &Error{Path: cfg.Path, Msg: fmt.Sprintf("source %s: %s is not set: export the API key of this source (it is never read from the config file)", s.Name, s.KeyEnv), err: ErrKeyNotSet}
	case s.Mode == "marketplace" && c.MarketplaceKey == "":
		return Credentials{}, &Error{Path: cfg.Path, Msg: fmt.Sprintf("source %s: %s is not set: a marketplace source needs its listing key in the environment", s.Name, s.MarketplaceKeyEnv), err: ErrKeyNotSet}
	}
	return c, nil
}
