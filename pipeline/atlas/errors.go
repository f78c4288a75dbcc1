package atlas

import (
	"errors"
	"fmt"
	"strings"

	"sitewatch/pipeline/model"
)

// ErrBadKey is why New refuses a key, before any call (carried by *ConfigError).
var (
	// ErrBadKey: a key has surrounding whitespace or control characters (a secrets file with
	// Windows line endings adds "\r"); refused by New before any call. Carried by *ConfigError.
	ErrBadKey = errors.New("the key has surrounding whitespace or control characters; remove them (a file with Windows line endings adds \\r)")
)

// Stages of an UnreachableError, in the order a connection is made.
const (
	StageDNS = "dns" // the host name did not resolve
	StageTCP = "tcp" // the TCP connection was refused or timed out
	StageTLS = "tls" // the TLS handshake failed (certificate, protocol)
)

// UnreachableError says the server could not be reached at all on the client's first call:
// which stage failed (StageDNS, StageTCP, StageTLS), for which base URL and host.
// It wraps model.ErrUnreachable and the cause (model.ErrUntrustedCertificate for a certificate).
type UnreachableError struct {
	Stage   string // StageDNS, StageTCP or StageTLS
	Host    string // host[:port] of api.base_url
	BaseURL string // api.base_url, redacted
	Err     error  // the cause, keys redacted
}

func (e *UnreachableError) Error() string {
	what := map[string]string{
		StageDNS: "the host name does not resolve: check the spelling of api.base_url (or ATLAS_BASE_URL) and the DNS of this machine",
		StageTCP: "nothing accepts connections there: check the host and port of api.base_url (or ATLAS_BASE_URL), that the gateway is up, and any firewall or proxy",
		StageTLS: "the TLS handshake failed: check that api.base_url speaks https on that port, and the system's trusted CAs",
	}[e.Stage]
	return fmt.Sprintf("atlas: cannot reach api.base_url %s (%s failed for %s: %v): %s", e.BaseURL, strings.ToUpper(e.Stage), e.Host, e.Err, what)
}

// Unwrap returns model.ErrUnreachable and the cause.
func (e *UnreachableError) Unwrap() []error { return []error{model.ErrUnreachable, e.Err} }

// ConfigError is a Config that New refuses: which setting, and why. Nothing was called.
// Its message never contains a key.
type ConfigError struct {
	Setting string // e.g. "api.base_url", "ATLAS_API_KEY"
	Err     error  // why, possibly wrapping ErrBadKey or secret.ErrInsecureHTTP
}

func (e *ConfigError) Error() string { return "atlas: " + e.Setting + ": " + e.Err.Error() }

// Unwrap returns the reason.
func (e *ConfigError) Unwrap() error { return e.Err }
