package report

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// tableProbe is appended to a copy of the report. At the load event it drives the All domains
// table as a reader would and measures it in the browser's own layout: each sort's time from
// the heading's click to a laid-out table (numeric sorts of 5,000 rows must take ≤ 500 ms),
// the order each sort leaves, the height of rows (one line), the domain column staying put
// when the table scrolls sideways, ranks sorting best first, every heading a tab stop that
// Enter sorts, with aria-sort, the visits and category filters, and the CSV a click on
// the button hands to the Blob it downloads (captured by wrapping Blob, so no file is written).
const tableProbe = `<script>
window.addEventListener('load', function () {
  var out = [], t = document.getElementById('all'), body = t.tBodies[0], heads = t.tHead.rows[0].cells, times = [];
  function shown() { return Array.prototype.filter.call(body.rows, function (r) { return !r.hidden; }); }
  function key(r, c) { var v = r.cells[c].getAttribute('data-v'); return v === null ? null : +v; }
  function sort(c) { var t0 = performance.now(); heads[c].click(); void t.offsetHeight; body.rows[0].getBoundingClientRect(); var ms = performance.now() - t0; times.push(Math.round(ms)); return ms; }
  function ordered(c, dir, what) {
    var rows = shown(), last = null, seenNull = false;
    for (var i = 0; i < rows.length; i++) {
      var k = key(rows[i], c);
      if (k === null) { seenNull = true; continue; }
      if (seenNull) { out.push('ORDER ' + what + ': a row without data before one with data at ' + i); return; }
      if (last !== null && dir * (k - last) < 0) { out.push('ORDER ' + what + ': ' + last + ' then ' + k + ' at row ' + i); return; }
      last = k;
    }
  }
  sort(3); ordered(3, -1, 'visits descending'); var firstByVisits = shown()[0].cells[0].textContent;
  sort(3); ordered(3, 1, 'visits ascending');
  sort(4); ordered(4, -1, 'MoM descending');
  sort(6); ordered(6, 1, 'rank best first');
  if (heads[6].getAttribute('aria-sort') !== 'ascending' || heads[3].getAttribute('aria-sort') !== 'none') out.push('ARIA rank sorted: aria-sort ' + heads[6].getAttribute('aria-sort') + ', visits ' + heads[3].getAttribute('aria-sort'));
  Array.prototype.forEach.call(heads, function (h, i) { if (h.tabIndex !== 0) out.push('KEYBOARD heading ' + i + ' is not a tab stop'); });
  heads[4].focus(); heads[4].dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', bubbles: true})); ordered(4, -1, 'MoM by Enter');
  if (heads[4].getAttribute('aria-sort') !== 'descending') out.push('ARIA MoM by Enter: aria-sort ' + heads[4].getAttribute('aria-sort'));
  sort(0);
  var doms = shown().map(function (r) { return r.cells[0].textContent; });
  for (var i = 1; i < doms.length; i++) if (doms[i - 1].toLowerCase() > doms[i].toLowerCase()) { out.push('ORDER domain: ' + doms[i - 1] + ' before ' + doms[i]); break; }
  sort(3); // a heading clicked anew sorts numbers largest first: back to the most visited first
  if (shown()[0].cells[0].textContent !== firstByVisits) out.push('ORDER visits again starts with ' + shown()[0].cells[0].textContent + ', not ' + firstByVisits);
  var rowH = 0;
  for (var i = 0; i < Math.min(40, body.rows.length); i++) rowH = Math.max(rowH, body.rows[i].getBoundingClientRect().height);
  var sc = document.querySelector('#watchlist .scroll'), d0 = body.rows[0].cells[0], v0 = body.rows[0].cells[3];
  var before = v0.getBoundingClientRect().left;
  sc.scrollLeft = 600;
  var sticky = sc.scrollLeft === 0 ? 'noscroll' : (Math.abs(d0.getBoundingClientRect().left - sc.getBoundingClientRect().left) <= 2 && v0.getBoundingClientRect().left < before - 100 ? 'ok' : 'moved ' + Math.round(d0.getBoundingClientRect().left - sc.getBoundingClientRect().left) + 'px');
  sc.scrollLeft = 0;
  var min = document.getElementById('all-min'), cat = document.getElementById('all-cat'), count = document.getElementById('all-count');
  var want1M = Array.prototype.filter.call(body.rows, function (r) { var k = key(r, 3); return k !== null && k >= 1e6; }).length;
  min.value = '1000000'; min.dispatchEvent(new Event('change'));
  var big = shown(), matched = +t.getAttribute('data-matches'), limit = +t.getAttribute('data-limit');
  if (matched !== want1M || big.length !== Math.min(limit, want1M)) out.push('FILTER visits matched ' + matched + ' rows and shows ' + big.length + ', ' + want1M + ' have 1M visits or more (limit ' + limit + ')');
  big.forEach(function (r) { var k = key(r, 3); if (k === null || k < 1e6) out.push('FILTER visits: ' + r.cells[0].textContent + ' has ' + k); });
  if (count.textContent.indexOf(String(matched)) !== 0) out.push('COUNT says "' + count.textContent + '" for ' + matched + ' rows');
  var catName = cat.options.length > 1 ? cat.options[1].value : '';
  cat.value = catName; cat.dispatchEvent(new Event('change'));
  var inCat = shown(), catMatched = +t.getAttribute('data-matches');
  inCat.forEach(function (r) { var c = r.cells[2].textContent; if (c !== catName && c.indexOf(catName + ' > ') !== 0) out.push('FILTER category: ' + r.cells[0].textContent + ' is ' + c); });
  var parts = null, RealBlob = window.Blob;
  window.Blob = function (p, o) { parts = p; return new RealBlob(p, o); };
  document.getElementById('all-csv').click();
  window.Blob = RealBlob;
  var csv = parts ? parts.join('') : '', lines = csv.replace(/^\ufeff/, '').split('\r\n').filter(function (l) { return l !== ''; });
  if (lines.length !== catMatched + 1) out.push('CSV has ' + lines.length + ' lines for ' + catMatched + ' matching rows');
  if (inCat.length > 0 && lines.length > 1) {
    var f = lines[1].split(','), r = inCat[0];
    if (f[0] !== r.cells[0].textContent || f[3] !== r.cells[3].getAttribute('data-v')) out.push('CSV first row ' + lines[1] + ' is not ' + r.cells[0].textContent + ' with ' + r.cells[3].getAttribute('data-v') + ' visits');
  }
  min.value = '0'; min.dispatchEvent(new Event('change')); cat.value = ''; cat.dispatchEvent(new Event('change'));
  var shownLimited = shown().length, more = document.getElementById('all-more');
  if (!more.hidden) more.click();
  var p = document.createElement('pre');
  p.id = 'table-probe';
  p.textContent = 'rows=' + body.rows.length + ' sorts=' + times.join(',') + ' rowh=' + Math.round(rowH) + ' sticky=' + sticky + ' over1M=' + big.length +
    ' category=' + catName.replace(/ /g, '_') + ':' + inCat.length + ' csv=' + lines.length + ' shownAfter=' + shownLimited + ' shownAll=' + shown().length + '\nHEAD ' + (lines[0] || '') + '\n' + out.slice(0, 20).join('\n');
  document.body.appendChild(p);
  if (window.parent !== window) window.parent.postMessage({id: p.id, text: p.textContent}, '*');
});
</script>`

var tableRE = regexp.MustCompile(`(?s)<pre id="table-probe">rows=(\d+) sorts=([\d,]+) rowh=(\d+) sticky=(\S+) over1M=(\d+) category=(\S*):(\d+) csv=(\d+) shownAfter=(\d+) shownAll=(\d+)\nHEAD ([^\n]*)\n?(.*?)</pre>`)

// tableResult is what tableProbe measured.
type tableResult struct {
	rows, rowH, over1M, inCategory, csvLines, shownAfter, shownAll int
	sorts                                                          []time.Duration
	sticky, category, head, problems                               string
}

// probeTable runs tableProbe on html at width and fails the test on anything it reports.
func probeTable(t testing.TB, html string, width int) tableResult {
	t.Helper()
	probed := strings.Replace(html, "</body>", tableProbe+"</body>", 1)
	dom := runChromium(t, probed, width, 2000, browserJob{waitFor: probeIDs(probed), dom: true})
	m := tableRE.FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("%d px: the table probe did not run; DOM tail:\n%s", width, tail(dom, 1500))
	}
	atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
	r := tableResult{rows: atoi(m[1]), rowH: atoi(m[3]), sticky: m[4], over1M: atoi(m[5]), category: strings.ReplaceAll(strings.ReplaceAll(m[6], "_", " "), "&amp;", "&"),
		inCategory: atoi(m[7]), csvLines: atoi(m[8]), shownAfter: atoi(m[9]), shownAll: atoi(m[10]), head: m[11], problems: strings.TrimSpace(m[12])}
	for _, ms := range strings.Split(m[2], ",") {
		r.sorts = append(r.sorts, time.Duration(atoi(ms))*time.Millisecond)
	}
	return r
}

// checkTable holds the All domains table of an n-domain report at width to the issue: every
// sort ordered (its time is logged here and held to 300 ms by BenchmarkReport5000), one-line rows, a domain
// column that stays when the table scrolls sideways (at phone width, where it must scroll),
// filters that keep only matching rows, and a CSV of exactly the rows shown.
func checkTable(t *testing.T, html string, n, width int) {
	t.Helper()
	r := probeTable(t, html, width)
	t.Logf("%d domains at %d px: sorts %v (the first reads the keys), rows %d px, sticky %s, %d rows ≥ 1M visits, %d in %q, CSV %d lines",
		n, width, r.sorts, r.rowH, r.sticky, r.over1M, r.inCategory, r.category, r.csvLines)
	if r.rows != n || r.shownAfter != min(n, allLimit) || r.shownAll != n {
		t.Errorf("%d px: table has %d rows, %d shown after the filters were cleared and %d after Show all; want %d, %d and %d",
			width, r.rows, r.shownAfter, r.shownAll, n, min(n, allLimit), n)
	}
	if r.problems != "" {
		t.Errorf("%d px: table problems:\n%s", width, r.problems)
	}
	if r.rowH > 24 {
		t.Errorf("%d px: a row is %d px tall, want one line (≤ 24 px)", width, r.rowH)
	}
	if width < 600 && r.sticky != "ok" {
		t.Errorf("%d px: the domain column does not stay when the table scrolls sideways: %s", width, r.sticky)
	}
	if r.over1M == 0 {
		t.Errorf("%d px: the 1M-visits filter kept no row", width)
	}
	if r.category == "" || r.inCategory == 0 || r.csvLines < r.inCategory+1 {
		t.Errorf("%d px: category %q shows %d rows, CSV has %d lines: want rows, and one CSV line per matching row plus the header", width, r.category, r.inCategory, r.csvLines)
	}
	if !strings.HasPrefix(r.head, "Domain,Title,Category,Visits,MoM,YoY,Global rank") {
		t.Errorf("%d px: CSV header %q", width, r.head)
	}
}
