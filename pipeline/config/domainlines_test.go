package config

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestWatchlistReadApartReadsAsYAML: a watchlist read line by line (splitDomains) gives the
// same domains, lines and messages as the YAML parser reading the whole file, and anything
// the line reader does not take for certain is left to the parser.
func TestWatchlistReadApartReadsAsYAML(t *testing.T) {
	head := "warehouse:\n  duckdb: d.duckdb\n"
	cases := map[string]string{
		"indented":           head + "domains:\n  - example.com\n  - b.example   # a comment\n\n  # a comment line\n  - https://www.c.example/path\n",
		"at column 0":        head + "domains:\n- a.example\n- b.example\nschedule: \"0 6 2 * *\"\n",
		"nulls and empties":  head + "domains:\n  - a.example\n  -\n  - ~\n  - null\n  - 'quoted.example'\n",
		"numbers and bools":  head + "domains:\n  - 1.5\n  - true\n  - 0x1F\n  - a#b.example\n",
		"key comment":        head + "domains: # the watchlist\n  - a.example\n",
		"before other keys":  "domains:\n  - a.example\n  - b.example\n" + head,
		"flow":               head + "domains: [a.example, b.example]\n",
		"nested item":        head + "domains:\n  - a.example\n  - - b.example\n",
		"mapping item":       head + "domains:\n  - a.example\n  - name: b.example\n",
		"continued scalar":   head + "domains:\n  - a.example\n    b.example\n",
		"two indentations":   head + "domains:\n  - a.example\n    - b.example\n",
		"anchor and alias":   head + "domains:\n  - &x a.example\n  - *x\n",
		"quoted":             head + "domains:\n  - \"a.example\"\n  - 'b.example'\n",
		"colon inside":       head + "domains:\n  - a.example: 1\n  - b.example:\n",
		"tab":                head + "domains:\n  - a.example\t# tab\n",
		"empty block":        head + "domains:\nschedule: x\n",
		"twice":              head + "domains:\n  - a.example\ndomains:\n  - b.example\n",
		"second document":    head + "domains:\n  - a.example\n---\ndomains:\n  - b.example\n",
		"document start":     "---\n" + head + "domains:\n  - a.example\n",
		"crlf":               strings.ReplaceAll(head+"domains:\n  - a.example\n", "\n", "\r\n"),
		"syntax error after": head + "domains:\n  - a.example\napi: [unclosed\n",
		"bad key elsewhere":  head + "domains:\n  - a.example\napi:\n  rate_limt: 5\n",
		"nested domains key": head + "discover:\n  domains:\n    - x.example\ndomains:\n  - a.example\n",
		"no final newline":   head + "domains:\n  - a.example\n  - b.example",
		"key last":           head + "domains:",
	}
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cases[f] = string(body)
	}
	getenv := func(string) string { return "" }
	for name, text := range cases {
		t.Run(name, func(t *testing.T) {
			whole, wholeErr := parseWhole("domains.yaml", text, getenv)
			got, gotErr := Parse("domains.yaml", []byte(text), getenv)
			if fmt.Sprint(gotErr) != fmt.Sprint(wholeErr) {
				t.Fatalf("error %v, the parser's %v", gotErr, wholeErr)
			}
			if whole == nil {
				return
			}
			if !slices.Equal(got.Domains, whole.Domains) || !slices.Equal(got.lines, whole.lines) {
				t.Errorf("domains %q at lines %v, the parser's %q at %v", got.Domains, got.lines, whole.Domains, whole.lines)
			}
		})
	}
}

// TestLargeWatchlistParsesInLittleMemory: 200,000 domains are read apart from the YAML parser,
// which allocated ~16 bytes for every byte of such a file (a node per item).
func TestLargeWatchlistParsesInLittleMemory(t *testing.T) {
	var b strings.Builder
	b.WriteString("api:\n  base_url: http://127.0.0.1:1\nwarehouse:\n  duckdb: d.duckdb\ndomains:\n")
	for i := range 200_000 {
		fmt.Fprintf(&b, "  - site-%d.example\n", i)
	}
	data := []byte(b.String())
	getenv := func(string) string { return "" }
	allocated := func(parse func(string, []byte, func(string) string) (*Config, error)) (uint64, *Config) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		cfg, err := parse("domains.yaml", data, getenv)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		return after.TotalAlloc - before.TotalAlloc, cfg
	}
	apart, cfg := allocated(Parse)
	whole, _ := allocated(func(path string, data []byte, getenv func(string) string) (*Config, error) {
		return parseWhole(path, string(data), getenv)
	})
	if len(cfg.Domains) != 200_000 || cfg.DomainLine(199_999) != 200_005 {
		t.Fatalf("%d domains, the last at line %d; want 200000 at line 200005", len(cfg.Domains), cfg.DomainLine(199_999))
	}
	t.Logf("a %d-byte watchlist: %d bytes allocated read apart, %d by the YAML parser", len(data), apart, whole)
	if apart*3 > whole {
		t.Errorf("reading the watchlist apart allocated %d bytes, the YAML parser %d: want at most a third", apart, whole)
	}
}

// TestLoadHoldsOneCopyOfTheFile: Load of a 200,000-domain watchlist allocates the file's text
// once (the domains are substrings of it) and ~24 bytes a domain (its string header, its line,
// its line's offset); it held the file twice and split it into a slice of lines (24 bytes a
// line) on the way, which set the peak of `publish` at a million domains (issue 34).
func TestLoadHoldsOneCopyOfTheFile(t *testing.T) {
	const n = 200_000
	var b strings.Builder
	b.WriteString("api:\n  base_url: http://127.0.0.1:1\nwarehouse:\n  duckdb: d.duckdb\ndomains:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - site-%d.example\n", i)
	}
	path := filepath.Join(t.TempDir(), "domains.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	cfg, err := Load(path, func(string) string { return "" })
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Domains) != n || cfg.Domains[n-1] != fmt.Sprintf("site-%d.example", n-1) {
		t.Fatalf("%d domains, the last %q", len(cfg.Domains), cfg.Domains[len(cfg.Domains)-1])
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	bound := uint64(b.Len()) + 32*n + 256<<10
	t.Logf("a %d-byte watchlist of %d domains: Load allocated %d bytes (%.2f× the file; bound %d)",
		b.Len(), n, allocated, float64(allocated)/float64(b.Len()), bound)
	if allocated > bound {
		t.Errorf("Load allocated %d bytes for a %d-byte file of %d domains: want at most %d (the file once, 32 bytes a domain)", allocated, b.Len(), n, bound)
	}
}
