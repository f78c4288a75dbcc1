package report

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"sitewatch/internal/testenv"
)

// layoutProbe is appended to a copy of the report. After the load event, once the embedded
// font is loaded, it measures, in the browser's own layout, every SVG text against its
// chart's viewBox and against the other texts of the chart, and every table cell, card, legend
// entry and small-multiple title for clipped content, and writes what it found into the DOM.
const layoutProbe = `<script>
// showAllRows lays out every All domains row at once: a row off screen skips layout
// (content-visibility), and measuring 65,000 such cells one by one would force 65,000 layouts.
function showAllRows() {
  if (document.getElementById('probe-rows')) return;
  var st = document.createElement('style'); st.id = 'probe-rows';
  st.textContent = '#all tbody tr{content-visibility:visible !important}';
  document.head.appendChild(st);
}
window.addEventListener('load', function () { document.fonts.load('12px "Liberation Sans"').then(function () {
  showAllRows();
  var out = [], texts = 0;
  document.querySelectorAll('svg').forEach(function (svg) {
    var rect = svg.getBoundingClientRect();
    if (svg.ownerSVGElement || rect.width === 0) return; // a nested plot area, or the layout not shown
    var vb = svg.viewBox.baseVal, boxes = [];
    if (!vb || vb.width === 0) vb = {width: rect.width, height: rect.height}; // fluid: user units are CSS px
    svg.querySelectorAll('text').forEach(function (t) {
      var b = t.getBBox(); texts++;
      if (b.x < -0.5 || b.y < -0.5 || b.x + b.width > vb.width + 0.5 || b.y + b.height > vb.height + 0.5)
        out.push('OUTSIDE ' + t.textContent);
      boxes.forEach(function (o) {
        if (b.x < o.b.x + o.b.width - 0.5 && o.b.x < b.x + b.width - 0.5 && b.y < o.b.y + o.b.height - 0.5 && o.b.y < b.y + b.height - 0.5)
          out.push('OVERLAP ' + t.textContent + ' / ' + o.s);
      });
      boxes.push({b: b, s: t.textContent});
    });
  });
  document.querySelectorAll('td, th, .card .value, .card .label, .card .detail, .multiple .name, .legend > span, nav a').forEach(function (e) {
    if (e.matches('#all td.t')) return; // may be cut short: whole on hover or tap, and in the CSV
    if (e.scrollWidth > e.clientWidth + 1 || e.scrollHeight > e.clientHeight + 1) out.push('CLIPPED ' + e.textContent.slice(0, 80));
  });
  document.querySelectorAll('.legend .sw').forEach(function (e) {
    var r = e.getBoundingClientRect();
    if (r.width < 8 || r.height < 8 || getComputedStyle(e).backgroundColor === 'rgba(0, 0, 0, 0)') out.push('SWATCH missing for ' + e.parentNode.textContent);
  });
  document.querySelectorAll('section').forEach(function (s) {
    if (s.getBoundingClientRect().right > document.documentElement.clientWidth + 1) out.push('WIDE section ' + s.id);
  });
  var p = document.createElement('pre');
  p.id = 'layout-probe';
  p.textContent = 'texts=' + texts + ' fonts=' + document.fonts.check('12px "Liberation Sans"') + '\n' + out.join('\n');
  document.body.appendChild(p);
  if (window.parent !== window) window.parent.postMessage({id: p.id, text: p.textContent}, '*');
}); });
</script>`

// chromiumPath finds Debian's chromium; CI=true makes its absence a failure.
func chromiumPath(t testing.TB) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	testenv.Missing(t, "chromium not installed (apt-get install -y chromium)")
	return ""
}

// renderedDOM opens html (plus the layout probe) in headless Chromium with networking off and
// returns the DOM after the probe ran.
func renderedDOM(t testing.TB, html string, width int) string {
	t.Helper()
	return renderedDOMShot(t, html, width, "")
}

// renderedDOMShot is renderedDOM that, with png set, also saves the first screen there from the
// same browser, in that screenshot's window (844 px tall on a phone, 2000 elsewhere).
func renderedDOMShot(t testing.TB, html string, width int, png string) string {
	t.Helper()
	height := 2000
	if png != "" && width < 600 {
		height = 844
	}
	probed := strings.Replace(html, "</body>", layoutProbe+"</body>", 1)
	dom := runChromium(t, probed, width, height, browserJob{waitFor: probeIDs(probed), dom: true, png: png})
	if png != "" {
		assertScreenshot(t, png)
	}
	return dom
}

// probeIDs lists the ids of the results the probes in html add when they are done.
func probeIDs(html string) []string {
	var ids []string
	for _, m := range probeIDRE.FindAllStringSubmatch(html, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

var probeIDRE = regexp.MustCompile(`p\.id = '([a-z-]+-probe)'`)

// assertScreenshot fails the test unless Chromium wrote a non-empty PNG at png.
func assertScreenshot(t testing.TB, png string) {
	t.Helper()
	if fi, err := os.Stat(png); err != nil || fi.Size() == 0 {
		t.Errorf("no screenshot at %s (%v)", png, err)
	}
}

var probeRE = regexp.MustCompile(`(?s)<pre id="layout-probe">texts=(\d+) fonts=(\w+)\n?(.*?)</pre>`)

// TestRenderInChromium renders the 28-domain report at a desktop and a laptop width and
// asserts on the browser's layout: every section present and linked, every domain labelled
// in the small multiples, no SVG text outside its chart or on top of another, no clipped table
// cell, card or legend entry, every legend entry with a visible swatch.
func TestRenderInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	db := openWarehouse(t)
	loadRich(t, db)
	insertRun(t, db, "2026-02", "stopped_credits", 30, 28, 0, 2, 2, 0) // a later run ran out of credits
	html := render(t, db, "2026-02")
	for _, width := range []int{1400, 390} {
		t.Run(strconv.Itoa(width), func(t *testing.T) {
			// At 1400 px the charts draw their wide layout (label column, 600 px of bars); at
			// 390 px the narrow one, none wider than the screen (checkLayout fails on that).
			// Its browser ran the layout probe too: dom is that page's.
			widest, dom := checkLayout(t, html, 28, width, budget{}, "", nil)
			if width == 1400 && widest < 800 {
				t.Errorf("at 1400 px the widest chart is %d px: the wide layouts are not shown", widest)
			}
			m := probeRE.FindStringSubmatch(dom)
			if m == nil {
				t.Fatalf("the layout probe did not run; DOM tail:\n%s", tail(dom, 2000))
			}
			if n, _ := strconv.Atoi(m[1]); n < 300 {
				t.Errorf("probe measured %d SVG texts, want at least 300", n)
			}
			if m[2] != "true" {
				t.Errorf("the embedded font did not load")
			}
			if problems := strings.TrimSpace(m[3]); problems != "" {
				t.Errorf("layout problems:\n%s", problems)
			}
			if width >= minWindow { // below, dom is the phone frame's, not the report's
				assertRenderedContents(t, dom)
			}
			checkTable(t, html, 28, width)
		})
	}
}

// TestLayoutProbeCatchesFaults shows the probe can fail: a text past its chart's edge, two
// texts on top of each other, a clipped cell and a legend entry without a swatch colour.
func TestLayoutProbeCatchesFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	bad := `<!DOCTYPE html><html><body>
<svg viewBox="0 0 100 40" width="100" height="40"><text x="60" y="20" font-size="12">far-too-long-label.example</text>
<text x="2" y="35" font-size="12">aaaa</text><text x="10" y="35" font-size="12">bbbb</text></svg>
<table style="table-layout:fixed;width:60px"><tr><td style="overflow:hidden;white-space:nowrap">a very long cell that cannot fit</td></tr></table>
<div class="legend"><span><span class="sw" style="display:inline-block;width:12px;height:12px"></span>no colour</span></div>
</body></html>`
	m := probeRE.FindStringSubmatch(renderedDOM(t, bad, 800))
	if m == nil {
		t.Fatal("the layout probe did not run")
	}
	for _, want := range []string{"OUTSIDE far-too-long-label.example", "OVERLAP bbbb / aaaa", "CLIPPED a very long cell", "SWATCH missing for no colour"} {
		if !strings.Contains(m[3], want) {
			t.Errorf("probe did not report %q; it reported:\n%s", want, m[3])
		}
	}
}

// assertRenderedContents checks the rendered report: every section present and linked, a
// small multiple per domain, the incomplete-snapshot warning.
func assertRenderedContents(t *testing.T, dom string) {
	t.Helper()
	for _, id := range sectionIDs {
		if !strings.Contains(dom, `<section id="`+id+`">`) || !strings.Contains(dom, `href="#`+id+`"`) {
			t.Errorf("section %q missing or not in the contents", id)
		}
	}
	for _, d := range richDomains {
		if !strings.Contains(dom, `<div class="name">`+d) {
			t.Errorf("no small multiple titled %s", d)
		}
	}
	if !strings.Contains(dom, "Incomplete snapshot: 28 of 30 domains loaded") || !strings.Contains(dom, "stopped for credits") {
		t.Errorf("the incomplete-snapshot warning is missing")
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
