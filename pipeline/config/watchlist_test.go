package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestNormalizeDomain(t *testing.T) {
	ok := []struct{ name, in, want string }{
		{"Plain", "example.com", "example.com"},
		{"UpperCase", "Example.COM", "example.com"},
		{"Scheme", "https://example.com", "example.com"},
		{"SchemePathQueryFragment", "https://www.example.org/pricing?x=1#top", "example.org"},
		{"Userinfo", "http://user:pw@example.com/", "example.com"},
		{"Port", "example.com:8443", "example.com"},
		{"TrailingDot", "example.com.", "example.com"},
		{"LeadingWWW", "www.example.com", "example.com"},
		{"WWWOnlyLabelKept", "www.com", "www.com"},
		{"Subdomain", "blog.example.co.uk", "blog.example.co.uk"},
		{"IDN", "bücher.de", "xn--bcher-kva.de"},
		{"IDNUpper", "https://BÜCHER.de/x", "xn--bcher-kva.de"},
		{"Punycode", "xn--bcher-kva.de", "xn--bcher-kva.de"},
		{"Spaces trimmed", "  example.com  ", "example.com"},
		{"WWWBeforePublicSuffixKept", "www.co.uk", "www.co.uk"},
		{"WWWWWWBeforePublicSuffix", "https://www.www.co.uk/", "www.co.uk"},
		{"WWWUnderPrivateSuffixKept", "www.github.io", "www.github.io"},
		{"SiteUnderPrivateSuffix", "www.octocat.github.io", "octocat.github.io"},
		{"WWWUnderCoUK", "www.bbc.co.uk", "bbc.co.uk"},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NormalizeDomain(tc.in)
			if err != nil || got != tc.want {
				t.Fatalf("NormalizeDomain(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
	bad := []struct{ name, in string }{
		{"Empty", ""},
		{"Blank", "   "},
		{"IPv4", "192.168.0.1"},
		{"IPv4URL", "http://10.0.0.1:8080/x"},
		{"IPv6", "[::1]"},
		{"IPv6URL", "http://[2001:db8::1]/"},
		{"Markup", "<script>alert(1)</script>"},
		{"Quote", `exa"mple.com`},
		{"SQL", "example.com'; DROP TABLE sites; --"},
		{"InnerSpace", "exa mple.com"},
		{"EmptyLabel", "example..com"},
		{"LeadingDot", ".example.com"},
		{"Underscore", "my_site.com"},
		{"LeadingHyphen", "-example.com"},
		{"SingleLabel", "localhost"},
		{"LongLabel", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com"},
		{"NumericTLD", "1.2.3.4.5"},
		{"FTPScheme", "ftp://example.com"},
		{"Semicolon", "exa;mple.com"},
		{"PublicSuffixICANN", "co.uk"},
		{"PublicSuffixPrivate", "github.io"},
		{"PublicSuffixURL", "https://CO.UK/"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NormalizeDomain(tc.in)
			if !errors.Is(err, ErrNotHostName) {
				t.Fatalf("NormalizeDomain(%q) = %q, %v; want ErrNotHostName", tc.in, got, err)
			}
		})
	}
}

func TestNewWatchlist(t *testing.T) {
	cfg := &Config{Domains: []string{"example.com", "https://www.Example.com/", "10.0.0.1", "example.org/x", "example.org"}}
	wl := NewWatchlist(cfg)
	if got, want := len(wl.Domains), 2; got != want {
		t.Fatalf("domains = %v, want %d", wl.Domains, want)
	}
	if wl.Domains[0] != "example.com" || wl.Domains[1] != "example.org" {
		t.Errorf("domains = %v", wl.Domains)
	}
	if len(wl.Duplicates) != 2 || len(wl.Rejected) != 1 || len(wl.Rewritten) != 1 {
		t.Errorf("duplicates %v rejected %v rewritten %v", wl.Duplicates, wl.Rejected, wl.Rewritten)
	}
}

// TestWatchlistSharesAnUnchangedList: a list of normal, unique domains is the config's own
// slice (one copy at a million domains); the first entry that changes, repeats or is refused
// gives the watchlist its own, and appending to either never writes into the other.
func TestWatchlistSharesAnUnchangedList(t *testing.T) {
	plain := &Config{Domains: append(make([]string, 0, 8), "a.com", "b.org", "c.net")}
	wl := NewWatchlist(plain)
	if !slices.Equal(wl.Domains, plain.Domains) || &wl.Domains[0] != &plain.Domains[0] {
		t.Fatalf("domains %v: want the config's own slice %v", wl.Domains, plain.Domains)
	}
	grown := append(wl.Domains, "extra.com")
	if &grown[0] == &plain.Domains[0] || len(plain.Domains) != 3 || cap(wl.Domains) != 3 {
		t.Errorf("appending to the watchlist wrote into the config's slice")
	}
	for _, tc := range []struct {
		domains []string
		want    []string
	}{
		{[]string{"a.com", "b.org", "WWW.C.net"}, []string{"a.com", "b.org", "c.net"}},
		{[]string{"a.com", "b.org", "a.com", "d.io"}, []string{"a.com", "b.org", "d.io"}},
		{[]string{"a.com", "10.0.0.1", "d.io"}, []string{"a.com", "d.io"}},
		{[]string{"not a host", "a.com"}, []string{"a.com"}},
	} {
		cfg := &Config{Domains: slices.Clone(tc.domains)}
		wl := NewWatchlist(cfg)
		if !slices.Equal(wl.Domains, tc.want) {
			t.Errorf("%q: domains %q, want %q", tc.domains, wl.Domains, tc.want)
		}
		if !slices.Equal(cfg.Domains, tc.domains) {
			t.Errorf("%q: the config's domains became %q", tc.domains, cfg.Domains)
		}
		if len(wl.Domains) > 0 && &wl.Domains[0] == &cfg.Domains[0] {
			t.Errorf("%q: a changed list shares the config's slice", tc.domains)
		}
	}
}

func TestPublicSuffixReason(t *testing.T) {
	_, err := NormalizeDomain("github.io")
	if err == nil || !strings.Contains(err.Error(), "public suffix") || !strings.Contains(err.Error(), "example.github.io") {
		t.Errorf("err = %v, want the public-suffix reason with an example", err)
	}
}
