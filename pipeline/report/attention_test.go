package report

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"regexp"
	"strconv"
	"strings"
	"testing"

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

// attentionScreens is where Needs attention must start: within the first screen of a 1400 ×
// 900 window, within the first two of a 390 × 844 phone.
var attentionScreens = map[int]struct{ height, screens int }{1400: {900, 1}, 390: {844, 2}}

// checkAttention holds the Needs attention section of an n-domain report, as attentionProbe
// found it in dom (TestLayoutBudgets's pages of 28, 300 and 5,000 simulated domains), to its
// place: its top within attentionScreens (measured in checkLayout's window, 2000 px tall at
// 1400 px: the page has no height-dependent box above the section), the contents folded on
// the phone only, and its entries those of changes.ReadAttention (want) in order.
func checkAttention(t *testing.T, dom string, n, width int, want []string) {
	t.Helper()
	m := attentionRE.FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("%d px: the attention probe did not run; DOM tail:\n%s", width, tail(dom, 1500))
	}
	top, _ := strconv.Atoi(m[1])
	screen, ok := attentionScreens[width]
	if !ok {
		t.Fatalf("no screen height for Needs attention at %d px", width)
	}
	items := sameWordsAll(strings.Split(strings.TrimSpace(html.UnescapeString(m[4])), "\n"), 0)
	t.Logf("%d domains at %d px: Needs attention starts at %d px, contents %s, %d entries", n, width, top, m[3], len(want))
	if top < 0 || top > screen.screens*screen.height {
		t.Errorf("%d px: Needs attention starts at %d px, want within %d screen(s) of %d px", width, top, screen.screens, screen.height)
	}
	if folded := m[3] == "folded"; folded != (width < 600) {
		t.Errorf("%d px: contents %s; want folded on a phone only", width, m[3])
	}
	if strings.Join(items, "\n") != strings.Join(want, "\n") {
		t.Errorf("%d px: Needs attention lists %d entries, changes.ReadAttention %d:\n%q\nwant\n%q", width, len(items), len(want), items, want)
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
