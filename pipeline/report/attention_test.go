package report

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"sitewatch/pipeline/changes"
	"sitewatch/pipeline/changes/attentiontest"
)

// attentionProbe measures, after load and the font, where the needs-attention section starts
// (page y of its top), the viewport's height, whether the contents list is folded, and the
// text of every entry of the section (folded ones included).
const attentionProbe = `<script>
window.addEventListener('load', function () { document.fonts.ready.then(function () {
  var s = document.getElementById('attention'), link = document.querySelector('#contents ol a');
  var top = s ? Math.round(s.getBoundingClientRect().top + window.scrollY) : -1;
  var items = s ? Array.prototype.map.call(s.querySelectorAll('ol.att li'), function (li) { return li.textContent; }) : [];
  var p = document.createElement('pre');
  p.id = 'attention-probe';
  p.textContent = 'top=' + top + ' vh=' + window.innerHeight + ' toc=' + (link && link.checkVisibility() ? 'shown' : 'folded') + '\n' + items.join('\n');
  document.body.appendChild(p);
  if (window.parent !== window) window.parent.postMessage({id: p.id, text: p.textContent}, '*');
}); });
</script>`

var attentionRE = regexp.MustCompile(`(?s)<pre id="attention-probe">top=(-?\d+) vh=(\d+) toc=(\w+)\n?(.*?)</pre>`)

// attentionItems returns the section's entries as the report's HTML has them (no browser).
func attentionItems(t *testing.T, page string) []string {
	t.Helper()
	i := strings.Index(page, `<section id="attention">`)
	if i < 0 {
		t.Fatal("the report has no needs-attention section")
	}
	end := i + strings.Index(page[i:], "</section>")
	var out []string
	for _, m := range regexp.MustCompile(`(?s)<li class="\w+" data-rank="\d+">(.*?)</li>`).FindAllStringSubmatch(page[i:end], -1) {
		out = append(out, sameWords(html.UnescapeString(regexp.MustCompile(`<[^>]+>`).ReplaceAllString(m[1], ""))))
	}
	return out
}

// TestAttentionSection renders the fixed dataset whose list is known: the report's first
// section after the headline lists the same domains, in the same order, with the same words,
// as changes.ReadAttention (which `sitewatch changes`, the webhook and /metrics print).
func TestAttentionSection(t *testing.T) {
	db := openWarehouse(t)
	attentiontest.Load(t, db)
	var buf bytes.Buffer
	if err := Write(context.Background(), db, attentiontest.Month, &buf); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	a, err := changes.ReadAttention(context.Background(), db, attentiontest.Month, changes.AttentionSettings{})
	if err != nil {
		t.Fatal(err)
	}
	want := sameWordsAll(a.Lines(0))
	got := attentionItems(t, page)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("report lists\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	for i, e := range attentiontest.Expected {
		if i < len(got) && !strings.HasPrefix(got[i], fmt.Sprintf("%d. %s: ", i+1, e.Domain)) {
			t.Errorf("entry %d = %q, want %s", i+1, got[i], e.Domain)
		}
	}
	if !slicesContain(got, sameWords("3. faller.com: "+attentiontest.FallerReason)) {
		t.Errorf("faller.com's words are missing")
	}
	summary, att, chg := strings.Index(page, `<section id="summary">`), strings.Index(page, `<section id="attention">`), strings.Index(page, `<section id="changes">`)
	if summary >= att || att >= chg {
		t.Errorf("sections at %d (summary), %d (attention), %d (changes): want attention right after the headline", summary, att, chg)
	}
	if !strings.Contains(page, `<li><a href="#attention">Needs attention</a></li>`) {
		t.Errorf("the contents do not link the section")
	}
}

// TestAttentionOlderWarehouse shows a warehouse last written before the view still gets its
// report, with the section saying how to upgrade instead of a list.
func TestAttentionOlderWarehouse(t *testing.T) {
	db := openWarehouse(t)
	attentiontest.Load(t, db)
	if _, err := db.Exec(`DROP VIEW needs_attention; DROP MACRO TABLE needs_attention_in`); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Write(context.Background(), db, attentiontest.Month, &buf); err != nil {
		t.Fatal(err)
	}
	if page := buf.String(); !strings.Contains(page, "no needs_attention view yet") || strings.Contains(page, "No domain moved unusually") {
		t.Errorf("the section does not say the view is missing")
	}
}

// TestAttentionInChromium renders the reports of 28, 300 and 5,000 simulated domains in
// Chromium at 1400 × 900 and 390 × 844 and asserts the section's position (its top on the
// first screen at 1400 px, within the first two on a phone; the contents folded on the phone
// only) and contents (the entries of changes.ReadAttention in order).
func TestAttentionInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 5,000 domains and starts a browser")
	}
	chromiumPath(t)
	artifacts := artifactDir(t)
	for _, n := range []int{28, 300, 5000} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			db := simWarehouse(t, n)
			var buf bytes.Buffer
			if err := Write(context.Background(), db, simMonths[1], &buf); err != nil {
				t.Fatal(err)
			}
			a, err := changes.ReadAttention(context.Background(), db, simMonths[1], changes.AttentionSettings{})
			if err != nil {
				t.Fatal(err)
			}
			want := sameWordsAll(a.Lines(0))
			for _, vp := range []struct{ w, h, screens int }{{1400, 900, 1}, {390, 844, 2}} {
				probed := strings.Replace(buf.String(), "</body>", attentionProbe+"</body>", 1)
				png := "" // the 28-domain page's first screen is kept as an artifact, taken by the same browser
				if n == 28 {
					png = fmt.Sprintf("%s/attention-%dpx.png", artifacts, vp.w)
				}
				dom := string(chromiumDOM(t, probed, vp.w, vp.h, png))
				m := attentionRE.FindStringSubmatch(dom)
				if m == nil {
					t.Fatalf("%d px: the attention probe did not run; DOM tail:\n%s", vp.w, tail(dom, 1500))
				}
				top, _ := strconv.Atoi(m[1])
				vh, _ := strconv.Atoi(m[2])
				t.Logf("%d domains at %d × %d: section top at %d px, contents %s, %d entries", n, vp.w, vp.h, top, m[3], len(a.Domains))
				if top < 0 || top > vp.screens*vh {
					t.Errorf("%d px: the section starts at %d px, want within %d screen(s) of %d px", vp.w, top, vp.screens, vh)
				}
				if folded := m[3] == "folded"; folded != (vp.w < 600) {
					t.Errorf("%d px: contents %s; want folded on a phone only", vp.w, m[3])
				}
				items := sameWordsAll(strings.Split(strings.TrimSpace(html.UnescapeString(m[4])), "\n"), 0)
				if strings.Join(items, "\n") != strings.Join(want, "\n") {
					t.Errorf("%d px: the section lists %d entries, changes.ReadAttention %d; first %q vs %q", vp.w, len(items), len(want), items[0], want[0])
				}
				if png != "" {
					assertScreenshot(t, png)
				}
			}
		})
	}
}

func slicesContain(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// chromiumDOM is runChromium's --dump-dom with a longer deadline (10 minutes): the 5,000-domain
// page on a machine shared by many test runs can take longer than 2 minutes to lay out. With
// png set, the same browser saves the window's first screen there (the probe only reads the
// page and adds a line at its bottom).
func chromiumDOM(t *testing.T, page string, width, height int, png string) []byte {
	t.Helper()
	chromium := chromiumPath(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "report.html")
	if err := os.WriteFile(file, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	if width < minWindow {
		file = filepath.Join(dir, "frame.html")
		if err := os.WriteFile(file, []byte(fmt.Sprintf(phoneFrame, width, height)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--window-size="+strconv.Itoa(max(width, minWindow))+","+strconv.Itoa(height),
		"--virtual-time-budget=10000", "--dump-dom")
	if png != "" {
		cmd.Args = append(cmd.Args, "--screenshot="+png)
	}
	cmd.Args = append(cmd.Args, "file://"+file)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium at %d × %d: %v\n%s", width, height, err, tail(stderr.String(), 2000))
	}
	return out
}

// sameWords is a needs-attention line as words: the page joins a figure to its unit with a
// no-break space and shows `command` spans as code (prose), a terminal neither.
func sameWords(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\u00a0", " "), "`", "")
}

func sameWordsAll(lines []string, _ int) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = sameWords(l)
	}
	return out
}
