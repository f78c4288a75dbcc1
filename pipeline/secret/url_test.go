package secret

import (
	"errors"
	"testing"
)

// TestCheckBaseURL: the base URL the key is sent to is refused when it would leak the key
// (credentials, plain http:// off this machine) or is not a base URL at all; RedactURL keeps
// a key in the user part, query or fragment out of a message.
func TestCheckBaseURL(t *testing.T) {
	const key = "sk-canary-3f9a1c7e5b2d"
	tests := []struct {
		raw      string
		insecure bool
		want     error // nil: accepted; errAny: refused for another reason
	}{
		{"https://gateway.example", false, nil},
		{"http://127.0.0.1:8080", false, nil},
		{"http://localhost:8080/base", false, nil},
		{"http://[::1]:9", false, nil},
		{"http://gateway.example", false, ErrInsecureHTTP},
		{"http://10.0.0.5", false, ErrInsecureHTTP},
		{"http://gateway.example", true, nil},
		{"ftp://gateway.example", true, errAny},
		{"https://u:p@gateway.example", false, errAny},
		{"https://gateway.example/?k=v", false, errAny},
		{"", false, errAny},
	}
	for _, tt := range tests {
		err := CheckBaseURL(tt.raw, tt.insecure)
		switch {
		case tt.want == nil && err != nil:
			t.Errorf("CheckBaseURL(%q, %v) = %v, want accepted", tt.raw, tt.insecure, err)
		case tt.want == errAny && err == nil, tt.want != nil && tt.want != errAny && !errors.Is(err, tt.want):
			t.Errorf("CheckBaseURL(%q, %v) = %v, want %v", tt.raw, tt.insecure, err, tt.want)
		}
	}
	if got := RedactURL("https://user:" + key + "@gw.example/base?key=" + key + "#" + key); got != "https://gw.example/base" {
		t.Errorf("RedactURL = %q", got)
	}
}

var errAny = errors.New("any error")
