package secret

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// The API base URL is where the key is sent: the config checks it when it is read, the
// client again when it is built.

// ErrInsecureHTTP: a plain http:// base URL names a host other than this machine.
var ErrInsecureHTTP = errors.New("plain http:// to a host other than this machine would send the key in clear text; " +
	"use https://, or set api.allow_insecure_http: true on a network you trust")

// RedactURL returns raw without user information, query and fragment (where secrets would
// sit), for messages; "(unparseable URL)" if it does not parse.
func RedactURL(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "(unparseable URL)"
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}

// CheckBaseURL reports why raw cannot be the API base URL: not set, not http(s), carrying
// credentials, a query or a fragment, or (unless allowInsecureHTTP) plain http:// to a host
// other than this machine, which would send the key in clear text (wrapping ErrInsecureHTTP).
// Its messages name no setting, so the caller can blame api.base_url or ATLAS_BASE_URL.
func CheckBaseURL(raw string, allowInsecureHTTP bool) error {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return fmt.Errorf("not set; set api.base_url or ATLAS_BASE_URL to the gateway address")
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL such as https://gateway.example", RedactURL(raw))
	}
	if u.User != nil {
		return fmt.Errorf("must not carry credentials (user:password@); set ATLAS_API_KEY instead")
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return fmt.Errorf("%q must not have a query or fragment", RedactURL(raw))
	}
	if u.Scheme == "http" && !allowInsecureHTTP && !isLoopback(u.Hostname()) {
		return fmt.Errorf("%q: %w", RedactURL(raw), ErrInsecureHTTP)
	}
	return nil
}

// isLoopback reports whether host is this machine: localhost or a loopback address.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
