package atlastest_test

import (
	"strings"
	"testing"

	"sitewatch/pipeline/atlas/atlastest"
)

// FuzzNormalizeDomain checks that an accepted url yields a normalized LDH host name that
// normalizes to itself, and that nothing panics.
func FuzzNormalizeDomain(f *testing.F) {
	for _, s := range []string{
		"example.com", "https://www.Example.com:443/a?b#c", "bücher.de", "1.2.3.4", "[::1]",
		"a..b", "my_site.com", "<b>x</b>.com", "xn--bcher-kva.de", "www.com", "EXAMPLE.COM.",
		"http://user@example.com", "example.com:0", "ex ample.com", "xn--.com", "a.b-",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		d, err := atlastest.NormalizeDomain(raw)
		if err != nil {
			return
		}
		if d == "" || len(d) > 253 || d != strings.ToLower(d) || strings.ContainsAny(d, " /:@[]_") {
			t.Fatalf("NormalizeDomain(%q) = %q", raw, d)
		}
		again, err := atlastest.NormalizeDomain(d)
		if err != nil || (again != d && "www."+again != d) {
			t.Fatalf("NormalizeDomain(%q) = %q, which normalizes to %q, %v", raw, d, again, err)
		}
	})
}
