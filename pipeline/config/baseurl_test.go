package config

import (
	"errors"
	"strings"
	"testing"
)

// A plain http:// base URL to another host would carry the key in clear text: refused
// unless api.allow_insecure_http says the network is trusted; loopback is always fine.
func TestPlainHTTPBaseURL(t *testing.T) {
	tests := []struct {
		name, yaml string
		getenv     func(string) string
		wantErr    bool
	}{
		{"OtherHost", "api:\n  base_url: http://gateway.example\ndomains: [a.com]\n", env(), true},
		{"OtherHostFromEnv", "domains: [a.com]\n", env(EnvBaseURL, "http://10.1.2.3:8080"), true},
		{"OptedIn", "api:\n  base_url: http://gateway.example\n  allow_insecure_http: true\ndomains: [a.com]\n", env(), false},
		{"Loopback", "api:\n  base_url: http://127.0.0.1:8080\ndomains: [a.com]\n", env(), false},
		{"Localhost", "api:\n  base_url: http://localhost:8080\ndomains: [a.com]\n", env(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("domains.yaml", []byte(tt.yaml), tt.getenv)
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				return
			}
			var ce *Error
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), "api.allow_insecure_http") {
				t.Fatalf("Parse = %v, want a *config.Error naming api.allow_insecure_http", err)
			}
			t.Logf("error: %v", err)
		})
	}
}
