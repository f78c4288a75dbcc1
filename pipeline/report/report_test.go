package report

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestWriteFixture(t *testing.T) {
	db := openWarehouse(t)
	loadFixture(t, db)
	var buf bytes.Buffer
	if err := Write(context.Background(), db, "2026-02", &buf); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	for _, want := range []string{
		"snapshot 2026-02",
		"<b>Data snapshot date (API):</b> 2026-02-01",
		"<b>Reporting period:</b> 2026-01",
		"A &lt;Shop&gt;", // titles escaped by html/template
		"Traffic trend per domain (estimate)",
		"Channel mix (estimate)",
		"AI assistant referrals by platform (estimate)",
		"Top competitors by visits (estimate)",
		"<svg",
		"@font-face",
		"<td>analytics</td>", // b.com traffic comes from GA
		"<td>estimate</td>",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, bad := range []string{"A <Shop>", "<script", "<link", "<iframe", `src="http`, `href="http`, "url(http", "Liberation Serif"} {
		if strings.Contains(html, bad) {
			t.Errorf("report contains %q (must be escaped / self-contained)", bad)
		}
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
	insert(t, db, `INSERT INTO sources_share VALUES (?, ?, ?, ?)`, []any{"2026-03", evil, "direct", 1.0})
	insert(t, db, `INSERT INTO ai_platforms VALUES (?, ?, ?, ?, ?)`, []any{"2026-03", evil, "<i>ai</i>", 1, 100.0})
	insert(t, db, `INSERT INTO similar_sites (snapshot_month, domain, position, similar_domain, total_visits) VALUES (?, ?, ?, ?, ?)`,
		[]any{"2026-03", evil, 1, "<svg onload=x>", 3.0})
	var buf bytes.Buffer
	if err := Write(context.Background(), db, "2026-03", &buf); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	for _, bad := range []string{"<img", "<b>t</b>", "<i>ai</i>", "<svg onload"} {
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
		{"EmptyWarehouse", empty, "2026-02", "snapshot 2026-02 has no data: the warehouse holds no snapshot yet; run `sitewatch run --snapshot 2026-02` first"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := Write(context.Background(), tt.db, tt.snapshot, &buf)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Write(%q) error = %v, want it to contain %q", tt.snapshot, err, tt.want)
			}
			if buf.Len() != 0 {
				t.Errorf("Write wrote %d bytes despite the error", buf.Len())
			}
		})
	}
}

// loadRich inserts a realistic snapshot 2026-02: eight domains, 25 months of history, ten
// channels, countries, AI platforms and competitors, for the rendering test.
func loadRich(t *testing.T, db *sql.DB) {
	t.Helper()
	domains := []string{"shop-alpha.com", "bravo-news.org", "charlie.io", "delta-travel.com",
		"echo-finance.net", "foxtrot.dev", "golf-outdoor.co.uk", "hotel-booking-comparison-site.com"}
	chs := []string{"direct", "organic_search", "paid_search", "organic_social", "paid_social",
		"email", "referrals", "generative_ai", "affiliate", "display_ads"}
	plats := []string{"chatgpt.com", "perplexity.ai", "gemini.google.com", "copilot.microsoft.com", "claude.ai"}
	for i, d := range domains {
		base := 5e7 / float64((i+1)*(i+1))
		insert(t, db, `INSERT INTO sites (snapshot_month, domain, snapshot_date, title, is_data_from_ga, global_rank,
			traffic_period, ai_total_visits, total_visits, bounce_rate) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			[]any{"2026-02", d, day("2026-02-01"), "Title of " + d, i == 2, 100 * (i + 1) * (i + 1), "2026-01",
				int64(base * 0.02), base, 0.3 + float64(i)/50})
		for m := 0; m < 25; m++ {
			month := time.Date(2024, 1+time.Month(m), 1, 0, 0, 0, 0, time.UTC)
			v := base * (1 + 0.2*float64((m*(i+3))%7)/7 + 0.01*float64(m))
			insert(t, db, `INSERT INTO traffic_history VALUES (?, ?, ?, ?)`, []any{"2026-02", d, month, int64(v)})
		}
		rest := 1.0
		for c, ch := range chs {
			share := rest * (0.3 + 0.05*float64((i+c)%5))
			if c == len(chs)-1 {
				share = rest
			}
			rest -= share
			insert(t, db, `INSERT INTO sources_share VALUES (?, ?, ?, ?)`, []any{"2026-02", d, ch, share})
		}
		for p, pl := range plats[:3+i%3] {
			insert(t, db, `INSERT INTO ai_platforms VALUES (?, ?, ?, ?, ?)`,
				[]any{"2026-02", d, pl, p + 1, 60.0 / float64(p+1)})
		}
		insert(t, db, `INSERT INTO geography_share VALUES (?, ?, ?, ?)`,
			[]any{"2026-02", d, "US", 0.5}, []any{"2026-02", d, "DE", 0.2}, []any{"2026-02", d, "FR", 0.1})
		for k := 0; k < 4; k++ {
			comp := fmt.Sprintf("rival-%d-%d.com", i, k)
			if k == 0 {
				comp = domains[(i+1)%len(domains)]
			}
			insert(t, db, `INSERT INTO similar_sites (snapshot_month, domain, position, similar_domain, global_rank, total_visits)
				VALUES (?, ?, ?, ?, ?, ?)`, []any{"2026-02", d, k + 1, comp, 500 * (k + 1), base * (1.5 - 0.3*float64(k))})
		}
	}
	insert(t, db, `INSERT INTO countries VALUES (?, ?, ?, ?)`,
		[]any{"US", "USA", "840", "United States"}, []any{"DE", "DEU", "276", "Germany"}, []any{"FR", "FRA", "250", "France"})
}

// TestRenderInChromium writes the report to a file, opens it in headless Chromium (Debian's
// chromium) with networking off and checks that a non-trivial screenshot is produced. It skips
// when chromium is absent unless CI=true. SITEWATCH_REPORT_DIR keeps the HTML and PNG for a look.
func TestRenderInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	chromium := "/usr/bin/chromium"
	if _, err := os.Stat(chromium); err != nil {
		if p, lerr := exec.LookPath("chromium"); lerr == nil {
			chromium = p
		} else if os.Getenv("CI") == "true" {
			t.Fatalf("chromium not found (CI=true requires it; .ci/run installs Debian's chromium)")
		} else {
			t.Skip("chromium not installed (apt-get install -y chromium)")
		}
	}
	db := openWarehouse(t)
	loadRich(t, db)
	dir := t.TempDir()
	if keep := os.Getenv("SITEWATCH_REPORT_DIR"); keep != "" {
		dir = keep
	}
	htmlPath := filepath.Join(dir, "report.html")
	f, err := os.Create(htmlPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(context.Background(), db, "2026-02", f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "shot.png")
	os.Remove(shot)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+filepath.Join(t.TempDir(), "profile"), "--window-size=1280,2000",
		"--screenshot="+shot, "file://"+htmlPath)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	pf, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v\nchromium output:\n%s", err, out)
	}
	defer pf.Close()
	img, err := png.Decode(pf)
	if err != nil {
		t.Fatalf("decode screenshot: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1280 || b.Dy() != 2000 {
		t.Errorf("screenshot is %dx%d, want 1280x2000", b.Dx(), b.Dy())
	}
	colors, dark := stats(img)
	// A blank or error page has a handful of colours; the charts bring hundreds (antialiasing
	// of ten series colours) and a fair amount of dark text and lines.
	if colors < 200 || dark < 0.005 {
		t.Errorf("screenshot looks empty: %d distinct colours, %.2f%% dark pixels", colors, dark*100)
	}
}

func stats(img image.Image) (colors int, darkShare float64) {
	seen := map[[3]uint32]bool{}
	dark, total := 0, 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			seen[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
			if r>>8 < 100 && g>>8 < 100 && bl>>8 < 100 {
				dark++
			}
			total++
		}
	}
	return len(seen), float64(dark) / float64(total)
}
