package discover

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sitewatch/internal/testenv"
	"sitewatch/pipeline/config"
)

// userFile is a domains.yaml as a user writes one: comments everywhere, an anchor and its
// alias, quoted and unquoted entries, CRLF line ends and a trailing comment block.
var userFile = strings.ReplaceAll(`# sitewatch config — edited by hand
schedule: "0 6 2 * *"   # monthly
api:
  base_url: http://127.0.0.1:1
  rate_limit: 3
domains:
  # our brands
  - &main example.com
  - "quoted.example.org"   # quoted on purpose
  - 'single.example.net'
  # competitors
  - https://www.Competitor.io/pricing
  - *main
    # an indented note after the list

# trailing comment block:
# keep this
`, "\n", "\r\n")

var day = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "domains.yaml")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// withoutLines returns data minus the 1-based lines listed.
func withoutLines(data []byte, lines []int) []byte {
	drop := map[int]bool{}
	for _, l := range lines {
		drop[l] = true
	}
	var out []byte
	for i, l := range bytes.SplitAfter(data, []byte("\n")) {
		if !drop[i+1] {
			out = append(out, l...)
		}
	}
	return out
}

func TestAppendKeepsEveryByte(t *testing.T) {
	path := writeTemp(t, userFile)
	wf, err := ReadWatchfile(path)
	if err != nil {
		t.Fatal(err)
	}
	out, adds, err := wf.Append([]string{"six.com", "newrise.com"}, day, "2026-10")
	if err != nil {
		t.Fatal(err)
	}
	if err := wf.Replace(out); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	var lines []int
	for _, a := range adds {
		lines = append(lines, a.Line)
	}
	if !bytes.Equal(withoutLines(got, lines), []byte(userFile)) {
		t.Errorf("new file minus the added lines differs from the old file:\n%q", got)
	}
	for _, a := range adds {
		line := strings.Split(string(got), "\r\n")[a.Line-1]
		want := "  - " + a.Domain + "  # added by sitewatch discover 2026-11-27 from 2026-10"
		if line != want {
			t.Errorf("line %d = %q, want %q (CRLF, the list's indentation, the comment)", a.Line, line, want)
		}
	}
	if adds[0].Line != 14 {
		t.Errorf("first added line %d, want 14: after the last item, before the comments that follow it", adds[0].Line)
	}
	prev, err := os.ReadFile(path + PrevSuffix)
	if err != nil || string(prev) != userFile {
		t.Errorf("previous file kept beside it: %v, content equal %v", err, string(prev) == userFile)
	}
	cfg, err := config.Load(path, func(string) string { return "" })
	if err != nil {
		t.Fatalf("the edited file no longer loads: %v", err)
	}
	wl := config.NewWatchlist(cfg)
	if n := len(wl.Domains); n < 2 || wl.Domains[n-2] != "six.com" || wl.Domains[n-1] != "newrise.com" {
		t.Errorf("watchlist after the edit = %v, want it to end in six.com, newrise.com", wl.Domains)
	}
	if a := AddedLines(got); len(a) != 2 || a[0].Domain != "six.com" || a[0].Date != "2026-11-27" || a[0].From != "2026-10" {
		t.Errorf("AddedLines = %+v", a)
	}
}

func TestAppendLFAndLastLineWithoutEnd(t *testing.T) {
	wf := &Watchfile{Path: "d.yaml", Data: []byte("domains:\n- a.com\n- b.com")}
	out, _, err := wf.Append([]string{"c.com"}, day, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := "domains:\n- a.com\n- b.com\n- c.com  # added by sitewatch discover 2026-11-27\n"; string(out) != want {
		t.Errorf("got %q, want %q", out, want)
	}
}

func TestAppendListNotLast(t *testing.T) {
	wf := &Watchfile{Path: "d.yaml", Data: []byte("domains:\n    -   a.com # x\n\n# about notify\nnotify:\n  on: [complete]\n")}
	out, _, err := wf.Append([]string{"c.com"}, day, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := "domains:\n    -   a.com # x\n    -   c.com  # added by sitewatch discover 2026-11-27\n\n# about notify\nnotify:\n  on: [complete]\n"; string(out) != want {
		t.Errorf("got %q, want %q", out, want)
	}
}

func TestAppendRefusesShapesItCannotExtend(t *testing.T) {
	for name, content := range map[string]string{
		"flow":    "domains: [a.com, b.com]\n",
		"missing": "schedule: x\n",
		"empty":   "domains:\n",
	} {
		t.Run(name, func(t *testing.T) {
			wf := &Watchfile{Path: "d.yaml", Data: []byte(content)}
			if _, _, err := wf.Append([]string{"c.com"}, day, ""); !errors.Is(err, ErrCannotAppend) {
				t.Errorf("err = %v, want ErrCannotAppend", err)
			}
		})
	}
}

func TestReplaceRefusesAFileEditedMeanwhile(t *testing.T) {
	path := writeTemp(t, userFile)
	wf, err := ReadWatchfile(path)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := wf.Append([]string{"six.com"}, day, "")
	if err != nil {
		t.Fatal(err)
	}
	edited := userFile + "  - typed-meanwhile.com\r\n"
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := wf.Replace(out); !errors.Is(err, ErrChanged) {
		t.Fatalf("err = %v, want ErrChanged", err)
	}
	if got, _ := os.ReadFile(path); string(got) != edited {
		t.Errorf("the edited file was overwritten")
	}
	if _, err := os.Stat(path + PrevSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a %s file was written (%v); want nothing written", PrevSuffix, err)
	}
}

func TestReplaceRefusesAReadOnlyFile(t *testing.T) {
	path := writeTemp(t, userFile)
	wf, err := ReadWatchfile(path)
	if err != nil {
		t.Fatal(err)
	}
	out, _, _ := wf.Append([]string{"six.com"}, day, "")
	makeUnwritable(t, path)
	if err := wf.Replace(out); err == nil || !strings.Contains(err.Error(), "not writable") {
		t.Fatalf("err = %v, want not writable", err)
	}
	if got, _ := os.ReadFile(path); string(got) != userFile {
		t.Errorf("a read-only file was replaced")
	}
	if _, err := os.Stat(path + PrevSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a %s file was written (%v); want nothing written", PrevSuffix, err)
	}
}

func TestAffordable(t *testing.T) {
	for _, c := range []struct {
		n      int
		budget int64
		want   int
	}{{5, -1, 5}, {5, 0, 0}, {5, 1, 0}, {5, 7, 3}, {2, 100, 2}} {
		if got := Affordable(c.n, c.budget); got != c.want {
			t.Errorf("Affordable(%d, %d) = %d, want %d", c.n, c.budget, got, c.want)
		}
	}
	if YearlyCost(3) != 72 {
		t.Errorf("YearlyCost(3) = %d, want 72", YearlyCost(3))
	}
}

func TestWriteDiff(t *testing.T) {
	wf := &Watchfile{Path: "d.yaml", Data: []byte("a: 1\r\ndomains:\r\n  - a.com\r\n# end\r\n")}
	_, adds, err := wf.Append([]string{"c.com"}, day, "")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteDiff(&b, "d.yaml", wf.Data, adds); err != nil {
		t.Fatal(err)
	}
	want := "--- d.yaml\n+++ d.yaml\n@@ -1,4 +1,5 @@\n a: 1\n domains:\n   - a.com\n+  - c.com  # added by sitewatch discover 2026-11-27\n # end\n"
	if b.String() != want {
		t.Errorf("diff:\n%s\nwant:\n%s", b.String(), want)
	}
}

// makeUnwritable makes path not writable for this process: mode 0444, and for root (whom
// modes do not bind) the immutable attribute, removed again at cleanup.
func makeUnwritable(t *testing.T, path string) {
	t.Helper()
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		return
	}
	if out, err := exec.Command("chattr", "+i", path).CombinedOutput(); err != nil {
		testenv.Missing(t, "running as root and chattr +i failed (%v: %s): no way to make a file unwritable here", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("chattr", "-i", path).Run() })
}
