package config

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// Credentials are the secrets a run sends, read from the environment only. They print as
// "[redacted]" under every fmt verb, so a stray %v or %+v never leaks them.
type Credentials struct {
	APIKey         string // ATLAS_API_KEY: the direct gateway key
	MarketplaceKey string // ATLAS_MARKETPLACE_KEY: the marketplace listing key
}

// String hides the keys.
func (Credentials) String() string { return "[redacted]" }

// GoString hides the keys under %#v too.
func (Credentials) GoString() string { return "config.Credentials{[redacted]}" }

// Format hides the keys under every verb (%v, %+v, %s, %q, %x …).
func (Credentials) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte("[redacted]")) }

// ErrKeyNotSet is wrapped by the error CredentialsFrom returns when the mode's key is missing.
var ErrKeyNotSet = errors.New("API key not set")

// ErrKeyMalformed is wrapped by the error CredentialsFrom returns for a key with surrounding
// whitespace or control characters, which no server accepts (typically a trailing \r from a
// secrets file saved with CRLF line ends).
var ErrKeyMalformed = errors.New("API key malformed")

// CredentialsFrom reads the keys for cfg's mode from the environment and checks them before
// anything is called: the mode's key must be set, and no key may carry surrounding whitespace
// or control characters. Errors are *Error (exit 2) wrapping ErrKeyNotSet or ErrKeyMalformed;
// they name the variable and never contain its value.
func CredentialsFrom(cfg *Config, getenv func(string) string) (Credentials, error) {
	c := Credentials{APIKey: getenv(EnvAPIKey), MarketplaceKey: getenv(EnvMarketplaceKey)}
	for _, k := range []struct{ name, value string }{{EnvAPIKey, c.APIKey}, {EnvMarketplaceKey, c.MarketplaceKey}} {
		if why := keyProblem(k.value); why != "" {
			return Credentials{}, &Error{Path: cfg.Path, Msg: fmt.Sprintf("%s %s (the value is not shown); set it to the bare key", k.name, why), err: ErrKeyMalformed}
		}
	}
	switch {
	case cfg.API.Mode == "direct" && c.APIKey == "":
		return Credentials{}, &Error{Path: cfg.Path, Msg: fmt.Sprintf("%s is not set: export the API key from the developer console (it is never read from the config file)", EnvAPIKey), err: ErrKeyNotSet}
	case cfg.API.Mode == "marketplace" && c.MarketplaceKey == "":
		return Credentials{}, &Error{Path: cfg.Path, Msg: fmt.Sprintf("%s is not set: marketplace mode needs the listing key in the environment", EnvMarketplaceKey), err: ErrKeyNotSet}
	}
	return c, nil
}

// MinKeyLength is the shortest key accepted. The client refuses to store any answer that
// contains the key in one of its encodings (a server reflecting it), so a key of a few
// characters would match ordinary data and every answer would be refused as a leak; the
// API's keys are long random strings.
const MinKeyLength = 8

// keyProblem says what is wrong with a key's characters, or "".
func keyProblem(key string) string {
	switch {
	case key == "":
		return ""
	case len(key) < MinKeyLength:
		return fmt.Sprintf("is %d characters long, fewer than %d: every answer is checked for the key before it is stored, and a key this short would match ordinary data (the API's keys are long random strings; is the variable cut short?)", len(key), MinKeyLength)
	case strings.TrimSpace(key) != key:
		if strings.HasSuffix(key, "\r") || strings.HasSuffix(key, "\r\n") {
			return "ends with a carriage return (a secrets file saved with CRLF line ends?)"
		}
		return "has leading or trailing whitespace"
	case strings.IndexFunc(key, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }) >= 0:
		return "contains whitespace or control characters"
	}
	return ""
}
