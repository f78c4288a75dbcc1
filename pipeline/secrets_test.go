package pipeline

import (
	"encoding/base64"
	"strings"
	"testing"

	"sitewatch/pipeline/config"
)

// TestConfigSecretsCoverEverySource: with api.sources, the keys sit in variables the config
// names; an answer echoing any of them is redacted like ATLAS_API_KEY.
func TestConfigSecretsCoverEverySource(t *testing.T) {
	env := map[string]string{
		"TEAM_DIRECT_KEY": "direct-secret-0123456789",
		"TEAM_LISTING":    "listing-secret-9876543210",
		"TEAM_BEARER":     "bearer-secret-5555555555",
	}
	cfg := &config.Config{API: config.APIConfig{Sources: []config.SourceConfig{
		{Name: "direct", Mode: "direct", KeyEnv: "TEAM_DIRECT_KEY"},
		{Name: "marketplace", Mode: "marketplace", KeyEnv: "TEAM_BEARER", MarketplaceKeyEnv: "TEAM_LISTING"},
	}}}
	s := configSecrets(cfg, func(k string) string { return env[k] })
	for name, v := range env {
		for _, text := range []string{"echo " + v, "b64 " + base64.StdEncoding.EncodeToString([]byte(v))} {
			if got := s.Redact(text); strings.Contains(got, v) || strings.Contains(got, base64.StdEncoding.EncodeToString([]byte(v))) {
				t.Errorf("%s: %q kept the secret: %q", name, text, got)
			}
		}
	}
}
