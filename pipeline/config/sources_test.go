package config

import (
	"errors"
	"strings"
	"testing"
)

const twoSources = `api:
  sources:
    - name: marketplace
      mode: marketplace
      base_url: https://listing.example
      marketplace_host: intel.example
      marketplace_key_env: MK
      rate_limit: 10
    - name: direct
      mode: direct
      base_url: https://gateway.example
      key_env: DK
      min_credits: 50
domains: [example.com]
`

func TestSources(t *testing.T) {
	cfg, err := Parse("domains.yaml", []byte(twoSources), func(string) string { return "" })
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	got := cfg.Sources()
	if len(got) != 2 || got[0].Name != "marketplace" || got[1].Name != "direct" || !cfg.MultiSource() {
		t.Fatalf("Sources() = %+v, want marketplace then direct", got)
	}
	if got[0].RateLimit != 10 || got[1].RateLimit != DefaultRateLimit || got[1].MinCredits != 50 {
		t.Errorf("rates %v/%v, reserve %d; want 10, the default 3, 50", got[0].RateLimit, got[1].RateLimit, got[1].MinCredits)
	}
	env := map[string]string{"MK": "listing-key-123", "DK": "direct-key-456"}
	for _, s := range got {
		creds, err := SourceCredentials(cfg, s, func(k string) string { return env[k] })
		if err != nil || (s.Mode == "direct" && creds.APIKey != env["DK"]) || (s.Mode == "marketplace" && creds.MarketplaceKey != env["MK"]) {
			t.Errorf("SourceCredentials(%s) = %v; want the key of its variable", s.Name, err)
		}
	}
	if _, err := SourceCredentials(cfg, got[1], func(string) string { return "" }); !errors.Is(err, ErrKeyNotSet) || !strings.Contains(err.Error(), "DK") {
		t.Errorf("missing key: %v, want ErrKeyNotSet naming DK", err)
	}

	single, err := Parse("domains.yaml", []byte("api:\n  base_url: https://gateway.example\n  rate_limit: 5\ndomains: [example.com]\n"), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if s := single.Sources(); len(s) != 1 || s[0].Name != "direct" || s[0].KeyEnv != EnvAPIKey || s[0].RateLimit != 5 || single.MultiSource() {
		t.Errorf("single form = %+v, want a list of one direct source reading %s", s, EnvAPIKey)
	}
}

func TestSourcesErrors(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"BothForms", strings.Replace(twoSources, "api:\n", "api:\n  base_url: https://x.example\n", 1), []string{":2: api.base_url: api.sources replaces it"}},
		{"Empty", "api:\n  sources: []\ndomains: [example.com]\n", []string{"the list is empty"}},
		{"NotAList", "api:\n  sources: direct\ndomains: [example.com]\n", []string{"must be a list"}},
		{"DuplicateName", strings.Replace(twoSources, "name: direct", "name: marketplace", 1), []string{":9: api.sources[1].name: \"marketplace\" is also the name of source 0"}},
		{"MissingKeyEnv", strings.Replace(twoSources, "      key_env: DK\n", "", 1), []string{"api.sources[1].key_env: required"}},
		{"MarketplaceHost", strings.Replace(twoSources, "      marketplace_host: intel.example\n", "", 1), []string{"api.sources[0].marketplace_host: required"}},
		{"UnknownKey", strings.Replace(twoSources, "min_credits: 50", "min_credit: 50", 1), []string{`unknown key "min_credit" under api.sources`}},
		{"SecretInFile", strings.Replace(twoSources, "key_env: DK", "api_key: DK", 1), []string{"would put a secret in the config file"}},
		{"KeyNotAVariable", strings.Replace(twoSources, "key_env: DK", "key_env: abc-def=1", 1), []string{"not an environment variable name"}},
		{"Mode", strings.Replace(twoSources, "mode: direct", "mode: gateway", 1), []string{`api.sources[1].mode: "gateway" is not a mode`}},
		{"Rate", strings.Replace(twoSources, "rate_limit: 10", "rate_limit: 0", 1), []string{":8: api.sources[0].rate_limit: 0 is out of range: use 0.05 to 10000"}},
		{"SameDirectKey", strings.Replace(twoSources, "    - name: marketplace\n      mode: marketplace\n      base_url: https://listing.example\n      marketplace_host: intel.example\n      marketplace_key_env: MK\n",
			"    - name: spare\n      mode: direct\n      base_url: https://gateway.example/\n      key_env: DK\n", 1),
			[]string{`:11: api.sources[1].key_env: source "direct" uses DK on the same service as source "spare" (api.sources[0])`}},
		{"SameListingKey", strings.Replace(twoSources, "    - name: direct\n      mode: direct\n      base_url: https://gateway.example\n      key_env: DK\n",
			"    - name: again\n      mode: marketplace\n      base_url: https://listing.example\n      marketplace_host: INTEL.example\n      marketplace_key_env: MK\n", 1),
			[]string{`api.sources[1].marketplace_key_env: source "again" uses MK on the same service as source "marketplace"`}},
		{"BaseURL", strings.Replace(twoSources, "https://gateway.example", "ftp://gateway.example", 1), []string{"api.sources[1].base_url:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("domains.yaml", []byte(tt.yaml), func(string) string { return "" })
			if err == nil {
				t.Fatal("Parse accepted it")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// ATLAS_BASE_URL points every source of api.sources at one address (a simulator serves both
// gateways from one), is checked once and blamed by name, and a source may then omit base_url.
func TestSourcesBaseURLFromEnvironment(t *testing.T) {
	const sim = "http://127.0.0.1:8099"
	cfg, err := Parse("domains.yaml", []byte(twoSources), env(EnvBaseURL, sim))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	for _, s := range cfg.Sources() {
		if s.BaseURL != sim {
			t.Errorf("source %s: base_url %q, want %s from %s", s.Name, s.BaseURL, sim, EnvBaseURL)
		}
	}
	if !cfg.BaseURLFromEnv() {
		t.Error("BaseURLFromEnv() = false")
	}
	noURL := strings.Replace(twoSources, "      base_url: https://listing.example\n", "", 1)
	if _, err := Parse("domains.yaml", []byte(noURL), env(EnvBaseURL, sim)); err != nil || noURL == twoSources {
		t.Errorf("a source without base_url under %s: %v", EnvBaseURL, err)
	}
	_, err = Parse("domains.yaml", []byte(twoSources), env(EnvBaseURL, "ftp://h"))
	var ce *Error
	if !errors.As(err, &ce) || ce.Line != 0 || !strings.Contains(err.Error(), EnvBaseURL) || strings.Count(err.Error(), EnvBaseURL+" (") != 1 {
		t.Fatalf("err = %v: want one *Error naming %s, not a line of the file", err, EnvBaseURL)
	}
}
