package changes

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

func TestBuildLatest(t *testing.T) {
	w := openWarehouse(t)
	loadTwoMonths(t, w.DB())
	ctx := context.Background()
	if _, err := w.RunQualityChecks(ctx, "2026-02"); err != nil {
		t.Fatal(err)
	}
	d, err := Build(ctx, w.DB(), "")
	if err != nil {
		t.Fatal(err)
	}
	if d.Month != "2026-02" || d.PreviousMonth != "2026-01" || d.Domains != 2 {
		t.Errorf("months %s vs %s over %d domains, want 2026-02 vs 2026-01 over 2", d.Month, d.PreviousMonth, d.Domains)
	}
	if got := strings.Join(d.Incomplete, ","); got != "2026-03" {
		t.Errorf("Incomplete = %q, want 2026-03", got)
	}
	// Unchanged moves are no news: b.com's AI figures and channel shares did not move.
	var movers []string
	for _, m := range d.Movers {
		movers = append(movers, m.Metric+":"+m.Domain+":"+m.Channel)
	}
	want := "visits:b.com: visits:a.com: global_rank:a.com: global_rank:b.com: ai_visits:a.com: ai_traffic_share:a.com: " +
		"channel_share:a.com:direct channel_share:a.com:organic_search"
	if got := strings.Join(movers, " "); got != want {
		t.Errorf("movers:\n got %s\nwant %s", got, want)
	}
	if len(d.Competitors) != 3 || len(d.AIPlatforms) != 3 || len(d.Keywords) != 2 || len(d.Countries) != 2 {
		t.Errorf("lists: %d competitors, %d platforms, %d keywords, %d countries; want 3, 3, 2, 2",
			len(d.Competitors), len(d.AIPlatforms), len(d.Keywords), len(d.Countries))
	}
	if !d.QualityChecked {
		t.Error("QualityChecked = false after RunQualityChecks")
	}

	var buf bytes.Buffer
	if err := d.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	t.Logf("digest:\n%s\n%s", text, d.Headline())
	for _, s := range []string{
		"What changed in 2026-02",
		"compared with 2026-01, the complete month before; 2 domains loaded in both",
		"Not complete yet (not compared): 2026-03.",
		// the report's number style (numfmt) on every section: visits 2.00k, ranks #80,
		// percent with a typographic minus, share changes in points
		"b.com", "2.00k", "→ 1.00k", "−50.0%",
		"a.com", "#100", "→ #80", "up 20 places",
		"a.com direct", "50.0%", "→ 37.5%", "−12.5\u00a0pts",
		"x.com", "#50, 9.00k visits",
		"gemini.google.com", "#2, 40.0% of AI visits",
		`"sandals"`, "#2, 800 searches/month",
		"Italy (IT)", "#6 (5.0%) → #3 (15.0%)",
		"ES", "#5 (5.0%) → #6 (4.0%)",
		"Data quality of 2026-02:",
	} {
		if !strings.Contains(text, s) {
			t.Errorf("WriteText lacks %q:\n%s", s, text)
		}
	}
	head := d.Headline()
	wantHead := "sitewatch 2026-02 vs 2026-01: biggest mover b.com visits −50.0%, 1 new competitor, 2 new AI platforms, 1 new keyword, 1 country into a top 5."
	if first := strings.SplitN(head, "\n", 2)[0]; first != wantHead {
		t.Errorf("Headline first line:\n got %s\nwant %s", first, wantHead)
	}
	if n := strings.Count(head, "\n"); n != 1 {
		t.Errorf("Headline has %d lines, want 2:\n%s", n+1, head)
	}
}

func TestBuildMonths(t *testing.T) {
	ctx := context.Background()
	w := openWarehouse(t)
	db := w.DB()

	if _, err := Build(ctx, db, ""); !errors.Is(err, ErrNoCompleteMonth) {
		t.Errorf("empty warehouse: err = %v, want ErrNoCompleteMonth", err)
	}
	loadTwoMonths(t, db)
	completeThirdMonth(t, db)

	tests := []struct {
		month, wantMonth, wantPrev string
		wantErr                    error
	}{
		{"", "2026-03", "2026-02", nil},
		{"2026-02", "2026-02", "2026-01", nil},
		{"2026-01", "2026-01", "", nil},
		{"2025-12", "", "", ErrMonthNotComplete},
	}
	for _, tt := range tests {
		t.Run("month="+tt.month, func(t *testing.T) {
			d, err := Build(ctx, db, tt.month)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), "2026-03, 2026-02, 2026-01") {
					t.Errorf("error does not list the complete months: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Month != tt.wantMonth || d.PreviousMonth != tt.wantPrev {
				t.Errorf("got %s vs %q, want %s vs %q", d.Month, d.PreviousMonth, tt.wantMonth, tt.wantPrev)
			}
		})
	}

	d, err := Build(ctx, db, "2026-01")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := d.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "2026-01 is the first complete month: nothing to compare yet.") ||
		!strings.Contains(buf.String(), "Data quality of 2026-01: not checked yet.") {
		t.Errorf("first month digest:\n%s", buf.String())
	}
	if _, err := Build(ctx, db, "2026-13"); err == nil || !strings.Contains(err.Error(), "not YYYY-MM") {
		t.Errorf("bad month: err = %v", err)
	}
}
