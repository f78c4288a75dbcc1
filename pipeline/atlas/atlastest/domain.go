package atlastest

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// maxURLLen bounds the raw url parameter; longer inputs are INVALID_DOMAIN.
const maxURLLen = 2048

// idnaProfile converts Unicode host names to punycode (UTS 46 lookup rules, which also
// lower-case and reject disallowed code points).
var idnaProfile = idna.New(idna.MapForLookup(), idna.BidiRule(), idna.Transitional(false))

// NormalizeDomain returns the domain the simulator serves for a url query value, or an error
// saying why the value is not a domain (the simulator answers 400 INVALID_DOMAIN). The
// accepted forms are listed in the package documentation.
func NormalizeDomain(raw string) (string, error) {
	if raw == "" {
		return "", errors.New("empty")
	}
	if len(raw) > maxURLLen {
		return "", fmt.Errorf("longer than %d characters", maxURLLen)
	}
	if !utf8.ValidString(raw) {
		return "", errors.New("is not valid UTF-8")
	}
	for _, c := range raw {
		switch {
		case c <= ' ' || c == 0x7f:
			return "", errors.New("contains whitespace or a control character")
		case strings.ContainsRune(`<>"'{}|\^`+"`", c):
			return "", fmt.Errorf("contains %q", c)
		}
	}
	s := raw
	if i := strings.Index(s, "://"); i >= 0 {
		scheme := strings.ToLower(s[:i])
		if scheme != "http" && scheme != "https" {
			return "", fmt.Errorf("scheme %q is not http or https", s[:i])
		}
		s = s[i+3:]
	}
	if i := strings.IndexAny(s, "/?#"); i >= 0 {
		s = s[:i]
	}
	if strings.Contains(s, "@") {
		return "", errors.New("contains user information")
	}
	if strings.HasPrefix(s, "[") {
		return "", errors.New("is an IP address")
	}
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		port := s[i+1:]
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 || port[0] == '+' {
			if _, err := netip.ParseAddr(s); err == nil {
				return "", errors.New("is an IP address")
			}
			return "", fmt.Errorf("port %q is not a number from 1 to 65535", port)
		}
		s = s[:i]
	}
	if _, err := netip.ParseAddr(s); err == nil {
		return "", errors.New("is an IP address")
	}
	s = strings.TrimSuffix(s, ".")
	if s == "" {
		return "", errors.New("has no host name")
	}
	ascii, err := idnaProfile.ToASCII(s)
	if err != nil {
		return "", fmt.Errorf("not a valid international domain name: %w", err)
	}
	ascii = strings.ToLower(ascii)
	if err := checkHostname(ascii); err != nil {
		return "", err
	}
	// Punycode labels must decode to a valid name (xn--zz is not).
	if again, err := idnaProfile.ToASCII(ascii); err != nil || again != ascii {
		return "", errors.New("contains an invalid punycode (xn--) label")
	}
	if strings.HasPrefix(ascii, "www.") && strings.Count(ascii, ".") >= 2 {
		ascii = ascii[4:]
	}
	return ascii, nil
}

// checkHostname enforces LDH labels: 1 to 63 letters, digits or inner hyphens, at least two
// labels, at most 253 characters, and a top-level label that is not all digits.
func checkHostname(h string) error {
	if len(h) > 253 {
		return fmt.Errorf("host name is %d characters, more than 253", len(h))
	}
	labels := strings.Split(h, ".")
	if len(labels) < 2 {
		return errors.New("host name has a single label; want a registrable domain like example.com")
	}
	for _, l := range labels {
		if l == "" {
			return errors.New("host name has an empty label")
		}
		if len(l) > 63 {
			return fmt.Errorf("label %q is longer than 63 characters", l)
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return fmt.Errorf("label %q starts or ends with a hyphen", l)
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return fmt.Errorf("label %q contains %q", l, c)
			}
		}
	}
	tld := labels[len(labels)-1]
	if strings.Trim(tld, "0123456789") == "" {
		return errors.New("top-level label is numeric (an IP address?)")
	}
	return nil
}
