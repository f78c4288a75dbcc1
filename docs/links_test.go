package docs

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// TestLinksResolve checks that every relative link in README.md and docs/*.md names a file
// that exists and, with a #fragment, a heading (or an <a id>) that GitHub renders with that
// anchor. External links (scheme://, mailto:) are not fetched.
func TestLinksResolve(t *testing.T) {
	files, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join("..", "README.md"))
	anchors := map[string]map[string]bool{} // cleaned path -> anchors, read once
	for _, file := range files {
		doc := readDoc(t, file)
		for _, l := range doc.links {
			target, frag, _ := strings.Cut(l.target, "#")
			path := filepath.Clean(file)
			if target != "" {
				path = filepath.Clean(filepath.Join(filepath.Dir(file), target))
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s:%d: link %q: %v", file, l.line, l.target, err)
					continue
				}
			}
			if frag == "" {
				continue
			}
			if !strings.HasSuffix(path, ".md") {
				t.Errorf("%s:%d: link %q: an #anchor into a file that is not Markdown", file, l.line, l.target)
				continue
			}
			if anchors[path] == nil {
				anchors[path] = readDoc(t, path).anchors
			}
			if !anchors[path][frag] {
				t.Errorf("%s:%d: link %q: %s has no heading with anchor #%s", file, l.line, l.target, path, frag)
			}
		}
	}
}

// TestSlug pins the anchor rule to GitHub's rendering of this repository's headings.
func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"What happens when…":                "what-happens-when",
		"Configuration: `domains.yaml`":     "configuration-domainsyaml",
		"atlas-sim — the API simulator":     "atlas-sim--the-api-simulator",
		"table `ai_platform_history`":       "table-ai_platform_history",
		"API client: pacing, retries, stop": "api-client-pacing-retries-stop",
		"Exit codes":                        "exit-codes",
	} {
		if got := slug(heading); got != want {
			t.Errorf("slug(%q) = %q, want %q", heading, got, want)
		}
	}
}

type link struct {
	target string
	line   int
}

type doc struct {
	links   []link
	anchors map[string]bool
}

var (
	linkRE   = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codeRE   = regexp.MustCompile("`[^`]*`")
	anchorRE = regexp.MustCompile(`<a (?:id|name)="([^"]+)"`)
	schemeRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// readDoc collects the relative links (outside code) and the anchors of a Markdown file.
func readDoc(t *testing.T, path string) doc {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	d := doc{anchors: map[string]bool{}}
	seen := map[string]int{} // GitHub suffixes a repeated anchor with -1, -2, …
	fenced := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if trimmed := strings.TrimSpace(line); strings.HasPrefix(trimmed, "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		if h, ok := heading(line); ok {
			a := slug(h)
			if k := seen[a]; k > 0 {
				d.anchors[a+"-"+strconv.Itoa(k)] = true
			} else {
				d.anchors[a] = true
			}
			seen[a]++
		}
		for _, m := range anchorRE.FindAllStringSubmatch(line, -1) {
			d.anchors[m[1]] = true
		}
		for _, m := range linkRE.FindAllStringSubmatch(codeRE.ReplaceAllString(line, ""), -1) {
			if !schemeRE.MatchString(m[1]) {
				d.links = append(d.links, link{m[1], n})
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return d
}

// heading returns the text of an ATX heading line.
func heading(line string) (string, bool) {
	level := len(line) - len(strings.TrimLeft(line, "#"))
	if level == 0 || level > 6 || len(line) == level || line[level] != ' ' {
		return "", false
	}
	return strings.TrimSpace(strings.TrimRight(strings.TrimSpace(line[level:]), "#")), true
}

// slug renders a heading's anchor as GitHub does: lower case; letters, digits, '_', '-' and
// spaces kept, every other character (punctuation, backticks, '…', '—') dropped; spaces to '-'.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
