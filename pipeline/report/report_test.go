package report

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func render(t *testing.T, db *sql.DB, snapshot string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(context.Background(), db, snapshot, &buf); err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("SITEWATCH_REPORT_DIR"); dir != "" {
		name := strings.NewReplacer("/", "_").Replace(t.Name()) + ".html"
		if err := os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return buf.String()
}

// sectionIDs are the page's sections in order; the contents list links each.
var sectionIDs = []string{"summary", "falls", "changes", "traffic", "size", "yoy", "channels", "geography", "keywords", "ai", "competitors", "runs", "watchlist"}

func TestWriteRich(t *testing.T) {
	db := openWarehouse(t)
	loadRich(t, db)
	html := render(t, db, "2026-02")
	last := -1
	for _, id := range sectionIDs {
		at := strings.Index(html, `<section id="`+id+`"`)
		if at < 0 {
			t.Errorf("section %q missing", id)
			continue
		}
		if at < last {
			t.Errorf("section %q out of order", id)
		}
		last = at
		if !strings.Contains(html, `<a href="#`+id+`">`) {
			t.Errorf("contents list lacks a link to %q", id)
		}
	}
	for _, want := range []string{
		"<b>Data snapshot date (API):</b> 2026-02-01",
		"<b>Reporting period:</b> 2026-01",
		"Domains loaded</div><div class=\"value\">28 of 28",
		"Watchlist visits, Jan 2026 (estimate)",
		"Biggest riser in visits, MoM", "Largest fall in visits, MoM",
		"Snapshot 2026-02 against 2026-01, the complete month before it, over the 28 domains", "Visits: biggest moves", "Global rank: biggest moves",
		"Each chart has its own scale",
		"log scale",
		"Bars stop at ±100%; the printed value is the true change.",
		"+108.3% (2.20B → 4.58B)", // theguardian.com's jump, printed uncapped
		"United Kingdom", "Austria",
		"goo keyword 0", "Most valuable keywords",
		"AI visits · ", "other platforms",
		"common-rival.example (on watchlist)", // not on the watchlist: must not match below
		"Credits spent on this snapshot</div><div class=\"value\">57",
		"no quality checks recorded",
		`<span class="badge">analytics</span>`,
	} {
		if want == "common-rival.example (on watchlist)" {
			if strings.Contains(html, want) {
				t.Errorf("a competitor not on the watchlist is marked as on it")
			}
			continue
		}
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if n := strings.Count(html, `<div class="multiple">`); n != len(richDomains) {
		t.Errorf("%d small multiples, want one per domain (%d)", n, len(richDomains))
	}
	// One competitor listed by all 28 domains in another spelling appears once, listed by 28.
	if n := strings.Count(html, `<tr><td class="d">common-rival.example</td>`); n != 1 {
		t.Errorf("common-rival.example has %d table rows, want 1", n)
	}
	if !strings.Contains(html, "common-rival.example · listed by 28") && !strings.Contains(html, "listed by 28") {
		t.Errorf("the shared competitor is not shown as listed by 28 domains")
	}
	noFont := regexp.MustCompile(`base64,[A-Za-z0-9+/=]+`).ReplaceAllString(html, "")
	noFont = regexp.MustCompile(`(?s)<script>.*</script>`).ReplaceAllString(noFont, "") // figures only, not the script's code
	if n := strings.Count(html, "<script"); n != 1 || strings.Contains(html, "<script src") {
		t.Errorf("report has %d scripts, want the one inline script (chart readouts; All domains sort, filter, CSV)", n)
	}
	for _, bad := range []string{"0.00×", "NaN", "Inf", "e+0", "e-0", "<link", "<iframe", `src="http`, `href="http`, "url(http", "Liberation Serif", "…"} {
		if strings.Contains(noFont, bad) {
			t.Errorf("report contains %q", bad)
		}
	}
	if strings.Contains(html, `id="incomplete"`) {
		t.Errorf("a complete snapshot shows the incomplete warning")
	}
	assertSVGTextFits(t, html)
}

var (
	svgRE     = regexp.MustCompile(`<svg [^>]*viewBox="0 0 ([\d.]+) ([\d.]+)"[^>]*>(.*?)</svg>`)
	svgTextRE = regexp.MustCompile(`<text x="([\d.-]+)" y="([\d.-]+)" font-size="([\d.]+)" text-anchor="(\w+)"[^>]*>([^<]*)</text>`)
)

// assertSVGTextFits checks with the embedded font's metrics that every SVG text lies inside its
// viewBox: no label is cut off, whatever the browser.
func assertSVGTextFits(t *testing.T, html string) {
	t.Helper()
	svgs := svgRE.FindAllStringSubmatch(html, -1)
	if len(svgs) < 30 {
		t.Fatalf("found %d SVG charts, want at least 30 (28 small multiples and the charts)", len(svgs))
	}
	texts := 0
	for _, m := range svgs {
		w, _ := strconv.ParseFloat(m[1], 64)
		h, _ := strconv.ParseFloat(m[2], 64)
		for _, tm := range svgTextRE.FindAllStringSubmatch(m[3], -1) {
			x, _ := strconv.ParseFloat(tm[1], 64)
			y, _ := strconv.ParseFloat(tm[2], 64)
			size, _ := strconv.ParseFloat(tm[3], 64)
			s := unescape(tm[5])
			tw := textWidth(s, size)
			x0 := x
			switch tm[4] {
			case "middle":
				x0 = x - tw/2
			case "end":
				x0 = x - tw
			}
			if x0 < -0.5 || x0+tw > w+0.5 || y-size < -0.5 || y+size*0.25 > h+0.5 {
				t.Errorf("text %q at x %.1f–%.1f, y %.1f falls outside its %gx%g chart", s, x0, x0+tw, y, w, h)
			}
			texts++
		}
	}
	if texts < 200 {
		t.Errorf("checked %d SVG texts, want at least 200", texts)
	}
}

func unescape(s string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&", "&#34;", `"`, "&#39;", "'", "&quot;", `"`).Replace(s)
}

func TestWriteFixture(t *testing.T) {
	db := openWarehouse(t)
	loadFixture(t, db)
	html := render(t, db, "2026-02")
	for _, want := range []string{
		"snapshot 2026-02",
		"A &lt;Shop&gt;", // titles escaped by html/template
		"@font-face",
		"<td>analytics</td>", // b.com traffic comes from GA
		"<td>estimate</td>",
		"Completeness unknown: 2 domains loaded, no run recorded for 2026-02",
		"▲ 10", // a.com: rank 100 -> 90
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(html, "A <Shop>") {
		t.Errorf("report contains an unescaped title")
	}
}

func TestIncompleteSnapshotWarning(t *testing.T) {
	tests := []struct {
		name, status         string
		total, rejected      int
		want                 string
		wantWarning, wantAny bool
	}{
		{"StoppedForCredits", "stopped_credits", 28, 0, "Incomplete snapshot: 2 of 28 domains loaded", true, true},
		{"Failed", "failed", 5, 1, "Incomplete snapshot: 2 of 4 domains loaded", true, true},
		{"Complete", "complete", 2, 0, "", false, false},
		{"CompleteAfterRejections", "complete", 3, 1, "", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := openWarehouse(t)
			loadFixture(t, db)
			insertRun(t, db, "2026-02", tt.status, tt.total, 2, tt.rejected, 10, 4, 0)
			html := render(t, db, "2026-02")
			if got := strings.Contains(html, `id="incomplete"`); got != tt.wantWarning {
				t.Fatalf("warning shown = %v, want %v", got, tt.wantWarning)
			}
			if tt.want != "" && !strings.Contains(html, tt.want) {
				t.Errorf("warning lacks %q", tt.want)
			}
			if tt.status == "stopped_credits" && !strings.Contains(html, "stopped for credits") {
				t.Errorf("warning does not say the run stopped for credits")
			}
			// 2026-02 is past: the API serves only its current month, so the banner says what
			// is true instead of suggesting a run that could only exit 5.
			if tt.wantWarning && (!strings.Contains(html, "can no longer be fetched") || strings.Contains(html, "run --snapshot")) {
				t.Errorf("warning does not say that the past month cannot be completed")
			}
		})
	}
}

func TestQualitySection(t *testing.T) {
	db := openWarehouse(t)
	loadFixture(t, db)
	html := render(t, db, "2026-02")
	if !strings.Contains(html, "No quality checks recorded for this snapshot.") {
		t.Errorf("a snapshot never checked is not reported as such")
	}
	const q = `INSERT INTO quality_checks (snapshot_month, "check", table_name, domain, observed, expected, severity, observed_value, checked_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
	at := day("2026-02-02")
	insert(t, db, q,
		[]any{"2026-02", "history_contiguous", "traffic_history", nil, "contiguous", "contiguous", "ok", nil, at},
		[]any{"2026-02", "channel_shares_sum", "sources_share", "a.com", "0.375", "1 ± 0.02", "error", 0.375, at},
		[]any{"2026-02", "visits_jump", "traffic_history", "b.com", "+320%", "within +50% / −33%", "warn", 4.2, at},
		[]any{"2026-01", "visits_jump", "traffic_history", "c.com", "+800%", "within +50% / −33%", "warn", 9.0, at})
	html = render(t, db, "2026-02")
	for _, want := range []string{"Data-quality findings</div><div class=\"value\">2", "1 errors · 1 warnings from 3 checks",
		"channel_shares_sum", "1 ± 0.02", "&#43;320%", `<td class="up">passed</td>`} {
		if !strings.Contains(html, want) {
			t.Errorf("quality section lacks %q", want)
		}
	}
	if strings.Contains(html, "+800%") {
		t.Errorf("a finding of another snapshot is shown")
	}
}

// TestWriteEscapesDomains stores markup in every text field the report prints and checks that
// none reaches the page unescaped, in the tables or in the SVG charts.
func TestWriteEscapesDomains(t *testing.T) {
	db := openWarehouse(t)
	evil := `<img src=x onerror=alert(1)>.com`
	insert(t, db, `INSERT INTO sites (snapshot_month, domain, title, total_visits, traffic_period, ai_total_visits) VALUES (?, ?, ?, ?, ?, ?)`,
		[]any{"2026-03", evil, "<b>t</b>", 10.0, "2026-02", 100})
	insert(t, db, `INSERT INTO traffic_history VALUES (?, ?, ?, ?)`,
		[]any{"2026-03", evil, day("2026-01-01"), 5}, []any{"2026-03", evil, day("2026-02-01"), 7})
	insert(t, db, `INSERT INTO sources_share VALUES (?, ?, ?, ?)`, []any{"2026-03", evil, "<u>direct</u>", 1.0})
	insert(t, db, `INSERT INTO ai_platforms VALUES (?, ?, ?, ?, ?)`, []any{"2026-03", evil, "<i>ai</i>", 1, 100.0})
	insert(t, db, `INSERT INTO keywords VALUES (?, ?, ?, ?, ?, ?, ?)`, []any{"2026-03", evil, 1, "<s>kw</s>", 10, 1.0, 2.0})
	insert(t, db, `INSERT INTO geography_share VALUES (?, ?, ?, ?)`, []any{"2026-03", evil, "<q>", 0.5})
	insert(t, db, `INSERT INTO similar_sites (snapshot_month, domain, position, similar_domain, total_visits) VALUES (?, ?, ?, ?, ?)`,
		[]any{"2026-03", evil, 1, "<svg onload=x>", 3.0})
	html := render(t, db, "2026-03")
	for _, bad := range []string{"<img", "<b>t</b>", "<i>ai</i>", "<svg onload", "<u>", "<s>", "<q>"} {
		if strings.Contains(html, bad) {
			t.Errorf("report contains unescaped %q", bad)
		}
	}
	if !strings.Contains(html, "&lt;img src=x onerror=alert(1)&gt;.com") {
		t.Errorf("report does not show the escaped domain")
	}
}

func TestWriteErrors(t *testing.T) {
	db := openWarehouse(t)
	empty := openWarehouse(t)
	loadFixture(t, db)
	tests := []struct {
		name     string
		db       *sql.DB
		snapshot string
		want     string
	}{
		{"Malformed", db, "2026-1", `snapshot "2026-1" is not a month in the form YYYY-MM`},
		{"BadMonth", db, "2026-13", `snapshot "2026-13" is not a month`},
		{"NoSuchSnapshot", db, "2025-07", "snapshot 2025-07 has no data in the warehouse (snapshots loaded: 2026-01, 2026-02)"},
		{"EmptyWarehouse", empty, "2026-02", "snapshot 2026-02 has no data: the warehouse holds no snapshot yet; 2026-02 is past: the API serves only its current month"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := Write(context.Background(), tt.db, tt.snapshot, &buf)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Write(%q) error = %v, want it to contain %q", tt.snapshot, err, tt.want)
			}
			if strings.HasPrefix(err.Error(), "report") {
				t.Errorf("error %q starts with a prefix the CLI adds itself", err)
			}
			if buf.Len() != 0 {
				t.Errorf("Write wrote %d bytes despite the error", buf.Len())
			}
		})
	}
}

// TestReportFormats pins what the report adds to numfmt's style (pipeline/numfmt): durations,
// and a change's colour following the change as printed.
func TestReportFormats(t *testing.T) {
	tests := []struct{ name, got, want string }{
		{"duration", duration(125), "2m 05s"}, {"seconds", duration(42), "42s"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
	for _, tc := range []struct {
		change float64
		want   string
	}{{0.02, "up"}, {-0.02, "down"}, {0.0004, ""}, {-0.0004, ""}, {0, ""}} {
		if got := changeTone(tc.change); got != tc.want {
			t.Errorf("changeTone(%v) = %q, want %q: colour follows the printed value", tc.change, got, tc.want)
		}
	}
}
