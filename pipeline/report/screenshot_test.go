package report

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"sitewatch/pipeline/changes/attentiontest"
)

// maxScreenshot bounds each of the manual's PNG screenshots.
const maxScreenshot = 300 << 10

// TestFirstScreenScreenshots retakes the manual's screenshots of the report (docs/report.md):
// its first screen, and the panel of the first domain Needs attention names, opened at its
// anchor as a tap on the line does; the 28-domain demo watchlist from the simulator, written by
// the real code from a real warehouse, at 1400 × 900 and 390 × 844 px in headless Chromium. It
// runs only when asked, as it writes into the repository:
//
//	SITEWATCH_SCREENSHOTS=$PWD/docs/img go test -count=1 -run TestFirstScreenScreenshots ./pipeline/report/
func TestFirstScreenScreenshots(t *testing.T) {
	dir := os.Getenv("SITEWATCH_SCREENSHOTS")
	if dir == "" {
		t.Skip("set SITEWATCH_SCREENSHOTS to the directory to write report-1400.png, report-390.png and report-panel-*.png into (docs/img)")
	}
	db := simWarehouse(t, 28)
	var buf bytes.Buffer
	if err := Write(context.Background(), db, simMonths[1], &buf); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(page, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// The simulated month is quiet (nothing unusual): the panel is shot on the fixture with
	// planted cases, at the first domain Needs attention names, opened at its anchor as a tap
	// on its line does.
	planted := openWarehouse(t)
	attentiontest.Load(t, planted)
	var flagged bytes.Buffer
	if err := Write(context.Background(), planted, attentiontest.Month, &flagged); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`<section id="attention">(?s:.*?)href="#(d-[^"]+)"`).FindSubmatch(flagged.Bytes())
	if m == nil {
		t.Fatalf("Needs attention links to no domain's panel in the planted month")
	}
	tmp := t.TempDir()
	if err := os.WriteFile(filepath.Join(tmp, "flagged.html"), flagged.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// Headless Chromium paints nothing after scrolling its own window to a fragment; a frame
	// scrolled to it is painted, as a browser tab is after the tap.
	framed := func(width, height int) string {
		page := filepath.Join(tmp, "framed-"+strconv.Itoa(width)+".html")
		body := fmt.Sprintf(`<!doctype html><html><body style="margin:0"><iframe src="flagged.html#%s" style="border:0;width:%dpx;height:%dpx;display:block"></iframe></body></html>`, m[1], width, height)
		if err := os.WriteFile(page, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return page
	}
	for _, shot := range []struct {
		name, url     string
		width, height int
	}{
		{"report-1400.png", page, 1400, 900}, {"report-390.png", page, 390, 844},
		{"report-panel-1400.png", framed(1400, 900), 1400, 900}, {"report-panel-390.png", framed(390, 844), 390, 844},
	} {
		png, size := filepath.Join(dir, shot.name), [2]int{shot.width, shot.height}
		shoot(t, shot.url, size[0], size[1], png)
		b, err := os.ReadFile(png)
		if err != nil {
			t.Fatal(err)
		}
		// A PNG's IHDR holds its width and height at bytes 16–23.
		if len(b) < 24 || int(binary.BigEndian.Uint32(b[16:])) != size[0] || int(binary.BigEndian.Uint32(b[20:])) != size[1] {
			t.Errorf("%s is not a %d × %d PNG", png, size[0], size[1])
		}
		if len(b) > maxScreenshot {
			t.Errorf("%s is %d KB, budget %d KB", png, len(b)>>10, maxScreenshot>>10)
		}
		t.Logf("%s: %d KB", png, len(b)>>10)
	}
}

// shoot screenshots page's first screen in a viewport of exactly width × height.
func shoot(t *testing.T, page string, width, height int, png string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), chromiumHang)
	defer cancel()
	job := browserJob{url: "file://" + page, width: width, height: height, exact: true, png: png}
	if _, err := browse(ctx, chromiumPath(t), filepath.Join(t.TempDir(), "profile"), job); err != nil {
		t.Fatal(err)
	}
}
