package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"

	"sitewatch/pipeline/textout"
)

// Watchlist is the config's domains after normalization: what will be fetched, and what was
// rewritten, collapsed or rejected on the way (shown by `validate` and the run summary).
type Watchlist struct {
	Domains    []string    // normalized, unique, in config order
	Rewritten  []Rewrite   // entries whose normalized form differs from the input
	Duplicates []Rewrite   // entries collapsed into an earlier one
	Rejected   []Rejection // entries that are not host names; never sent
}

// Rewrite records an input entry and the domain it became.
type Rewrite struct {
	Input  string
	Domain string
	Line   int
}

// Rejection records an entry that is not a host name and why.
type Rejection struct {
	Input  string
	Reason string
	Line   int
}

// NewWatchlist normalizes every entry of cfg.Domains.
func NewWatchlist(cfg *Config) *Watchlist {
	wl := &Watchlist{}
	seen := map[string]bool{}
	// While every entry is already normal and new, Domains is cfg.Domains itself: a watchlist
	// of a million domains written the usual way holds one slice of them, not two (16 MB).
	same := true
	for i, input := range cfg.Domains {
		line := cfg.DomainLine(i)
		domain, err := NormalizeDomain(input)
		if same && (err != nil || seen[domain] || domain != input) {
			same = false
			wl.Domains = append(make([]string, 0, len(cfg.Domains)-1), cfg.Domains[:i]...)
		}
		switch {
		case err != nil:
			wl.Rejected = append(wl.Rejected, Rejection{Input: input, Reason: err.Error(), Line: line})
		case seen[domain]:
			wl.Duplicates = append(wl.Duplicates, Rewrite{Input: input, Domain: domain, Line: line})
		default:
			if domain == input {
				domain = input // share the config's string: one copy per domain, not two
			}
			seen[domain] = true
			if !same {
				wl.Domains = append(wl.Domains, domain)
			}
			if domain != input {
				wl.Rewritten = append(wl.Rewritten, Rewrite{Input: input, Domain: domain, Line: line})
			}
		}
	}
	if same {
		// Capped, so that a caller's append copies instead of writing into the config's slice.
		wl.Domains = cfg.Domains[:len(cfg.Domains):len(cfg.Domains)]
	}
	return wl
}

// ErrNotHostName is wrapped by every NormalizeDomain rejection.
var ErrNotHostName = errors.New("not a host name")

// idnaProfile converts IDN to punycode and enforces the host name rules (letters, digits,
// hyphens; label lengths) that a registrable web domain must follow.
var idnaProfile = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.ValidateLabels(true),
	idna.StrictDomainName(true),
	idna.VerifyDNSLength(true),
)

// NormalizeDomain turns a watchlist entry into the domain sent to the API: lower case; scheme,
// userinfo, port, path, query, fragment and trailing dot removed; a leading "www." removed
// unless a public suffix would remain (www.co.uk stays); IDN to punycode. It refuses anything
// that is not a host name (IP addresses, markup, spaces, empty or invalid labels) or that is a
// bare public suffix (co.uk, github.io) with an error wrapping ErrNotHostName.
func NormalizeDomain(input string) (string, error) {
	s := strings.TrimSpace(input)
	reject := func(why string) (string, error) { return "", fmt.Errorf("%w: %s", ErrNotHostName, why) }
	switch {
	case s == "":
		return reject("empty entry")
	case strings.ContainsAny(s, "<>\"'`{}|\\^"):
		return reject("contains markup or quote characters")
	case strings.ContainsAny(s, " \t\r\n"):
		return reject("contains spaces")
	case !utf8.ValidString(s):
		return reject("not valid UTF-8")
	}
	host, err := hostOf(s)
	if err != nil {
		return reject(err.Error())
	}
	host = strings.TrimSuffix(host, ".")
	if ip := net.ParseIP(strings.Trim(host, "[]")); ip != nil {
		return reject("an IP address; list the site's domain name instead")
	}
	ascii, err := idnaProfile.ToASCII(host)
	if err != nil {
		return reject("invalid label (" + idnaReason(err) + ")")
	}
	ascii = strings.ToLower(ascii)
	if _, err := idnaProfile.ToASCII(ascii); err != nil {
		// The punycode form must itself be valid, or normalizing twice would disagree.
		return reject("invalid label (" + idnaReason(err) + ")")
	}
	labels := strings.Split(ascii, ".")
	if len(labels) < 2 {
		return reject("a single label; a domain needs a dot and a top-level domain, e.g. example.com")
	}
	if tld := labels[len(labels)-1]; strings.Trim(tld, "0123456789") == "" {
		return reject("the top-level domain is numeric")
	}
	// Strip every leading www. (not only one), so normalizing is idempotent, but never down to
	// a public suffix: www.co.uk is a site of its own, co.uk is no site at all.
	for labels[0] == "www" && len(labels) > 2 && !isPublicSuffix(strings.Join(labels[1:], ".")) {
		labels = labels[1:]
	}
	domain := strings.Join(labels, ".")
	if isPublicSuffix(domain) {
		return reject("a public suffix, under which anyone can register sites (like co.uk or github.io); list a site under it, e.g. example." + domain)
	}
	return domain, nil
}

// isPublicSuffix reports whether domain is itself on the Public Suffix List (ICANN or private
// section, e.g. co.uk, github.io). A top-level domain the list does not know counts only as
// itself, which has no dot and is refused earlier.
func isPublicSuffix(domain string) bool {
	suffix, _ := publicsuffix.PublicSuffix(domain)
	return suffix == domain
}

// hostOf extracts the host part of an entry written as a URL or a bare host[:port][/path].
func hostOf(s string) (string, error) {
	raw := s
	if !strings.Contains(s, "://") {
		raw = "//" + s
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", errors.New("not parseable as a URL or host name")
	}
	if u.Scheme != "" && u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("scheme %q is not http or https", u.Scheme)
	}
	host := u.Hostname()
	if host == "" {
		return "", errors.New("no host name")
	}
	return host, nil
}

func idnaReason(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 && i+2 < len(msg) {
		return msg[i+2:]
	}
	return msg
}

// maxSkippedNamed bounds the entries SkippedLine names; `sitewatch validate` lists them all.
const maxSkippedNamed = 3

// SkippedLine names the rejected entries in one line for a run summary, `status`, `check` and
// the webhook ("2 watchlist entries skipped (not host names, never sent): line 12 `github,com`,
// line 13 `google..com`"), so a run that is complete without them does not read as if the
// watchlist had only the domains it sent. It is "" when nothing was rejected.
func (w *Watchlist) SkippedLine() string {
	if w == nil || len(w.Rejected) == 0 {
		return ""
	}
	named := make([]string, 0, maxSkippedNamed+1)
	for i, r := range w.Rejected {
		if i == maxSkippedNamed {
			named = append(named, fmt.Sprintf("… %d more", len(w.Rejected)-maxSkippedNamed))
			break
		}
		named = append(named, fmt.Sprintf("line %d `%s`", r.Line, r.Input))
	}
	return fmt.Sprintf("%s skipped (not host names, never sent): %s; `sitewatch validate` says why",
		textout.Plural(len(w.Rejected), "watchlist entry", "watchlist entries"), strings.Join(named, ", "))
}
