package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestCredentialsFrom(t *testing.T) {
	const key = "sk-canary-7f3a"
	direct := &Config{Path: "domains.yaml", API: APIConfig{Mode: "direct"}}
	market := &Config{Path: "domains.yaml", API: APIConfig{Mode: "marketplace"}}
	tests := []struct {
		name    string
		cfg     *Config
		getenv  func(string) string
		wantErr error
		wantMsg string
	}{
		{"OK", direct, env(EnvAPIKey, key), nil, ""},
		{"MarketplaceOK", market, env(EnvMarketplaceKey, key), nil, ""},
		{"NotSet", direct, env(), ErrKeyNotSet, EnvAPIKey + " is not set"},
		{"MarketplaceNotSet", market, env(EnvAPIKey, key), ErrKeyNotSet, EnvMarketplaceKey + " is not set"},
		{"TrailingCR", direct, env(EnvAPIKey, key+"\r"), ErrKeyMalformed, "carriage return"},
		{"TrailingCRLF", direct, env(EnvAPIKey, key+"\r\n"), ErrKeyMalformed, "carriage return"},
		{"LeadingSpace", direct, env(EnvAPIKey, " "+key), ErrKeyMalformed, "leading or trailing whitespace"},
		{"InnerNUL", direct, env(EnvAPIKey, "sk-\x00canary"), ErrKeyMalformed, "control characters"},
		{"InnerTab", direct, env(EnvAPIKey, "sk-\tcanary"), ErrKeyMalformed, "control characters"},
		{"TooShort", direct, env(EnvAPIKey, "abc"), ErrKeyMalformed, "3 characters long"},
		{"MarketplaceTooShort", market, env(EnvMarketplaceKey, "mk-1234"), ErrKeyMalformed, "7 characters long"},
		{"ShortestAccepted", direct, env(EnvAPIKey, "demo-key"), nil, ""},
		{"UnusedKeyMalformed", market, env(EnvMarketplaceKey, key, EnvAPIKey, key+"\n"), ErrKeyMalformed, EnvAPIKey},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := CredentialsFrom(tc.cfg, tc.getenv)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ce *Error
			if !errors.Is(err, tc.wantErr) || !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a *Error wrapping %v", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("err = %q, want it to mention %q", err, tc.wantMsg)
			}
			if strings.Contains(err.Error(), "canary") {
				t.Errorf("the key leaked into the message: %q", err)
			}
			if c != (Credentials{}) {
				t.Errorf("credentials returned with an error")
			}
		})
	}
}

func TestCredentialsNeverPrint(t *testing.T) {
	c := Credentials{APIKey: "sk-canary", MarketplaceKey: "mk-canary"}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		if got := fmt.Sprintf(verb, c); strings.Contains(got, "canary") || strings.Contains(got, "63616e617279") {
			t.Errorf("%s prints the key: %s", verb, got)
		}
	}
}
