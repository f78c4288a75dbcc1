package wire

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sitewatch/pipeline"
	"sitewatch/pipeline/changes"
	"sitewatch/pipeline/changes/attentiontest"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/metrics"
	"sitewatch/pipeline/notify"
	"sitewatch/pipeline/report"
	"sitewatch/pipeline/warehouse"
)

// TestAttentionSameOnEverySurface loads the fixed dataset whose needs-attention list is known
// and checks that `sitewatch changes` (Digest.WriteText), the report's first section, the
// webhook's complete digest (notifyOutcome, to a real HTTP receiver) and /metrics (the
// recorder after recordAttention, scraped over HTTP) lead with the same domains, in the same
// order, with the same reasons — the config's attention settings reaching each of them.
func TestAttentionSameOnEverySurface(t *testing.T) {
	ctx := context.Background()
	db := attentionWarehouse(t)
	// A floor of 1,000 visits lets tiny.com in: proof that the config reaches every surface.
	cfg := &config.Config{Attention: config.AttentionConfig{MinVisits: 1000}}
	settings := AttentionSettings(cfg)
	a, err := changes.ReadAttention(ctx, db, attentiontest.Month, settings)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := a.Lines(0)
	if !strings.Contains(strings.Join(want, "\n"), ". tiny.com: fell 30.0%") {
		t.Fatalf("the 1,000-visit floor did not list tiny.com:\n%s", strings.Join(want, "\n"))
	}

	// sitewatch changes
	d, err := changes.BuildWith(ctx, db, attentiontest.Month, settings)
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := d.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(text.String(), a.Title()+"\n") {
		t.Errorf("changes does not lead with %q:\n%s", a.Title(), text.String())
	}
	if got := numbered(text.String(), len(want)); !equalLines(got, want) {
		t.Errorf("changes lists\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}

	// the report
	var page bytes.Buffer
	if err := report.WriteWith(ctx, db, attentiontest.Month, settings, &page); err != nil {
		t.Fatal(err)
	}
	if got := reportItems(page.String()); !equalLines(got, want) {
		t.Errorf("the report lists\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}

	// the webhook's complete digest
	posted := make(chan map[string]any, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var p map[string]any
		if err := json.Unmarshal(body, &p); err != nil {
			t.Errorf("webhook body: %v", err)
		}
		posted <- p
	}))
	defer srv.Close()
	sum := &pipeline.Summary{RunID: "att-r", Snapshot: attentiontest.Month, Status: pipeline.StatusComplete, DomainsLoaded: 15, DomainsTotal: 15}
	notifyOutcome(ctx, notify.New(srv.URL, slog.New(slog.DiscardHandler)), db, sum, settings, nil, nil)
	p := <-posted
	lead, _ := a.Lines(changes.AttentionLeadLines)
	if got, want := webhookRows(t, p), viewRows(a); !equalLines(got, want) {
		t.Errorf("the webhook's needs_attention lists\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	msg, _ := p["text"].(string)
	if i, j := strings.Index(msg, lead[0]), strings.Index(msg, "\nchanges: "); i < 0 || j < 0 || i > j {
		t.Errorf("the webhook's text does not lead with the list before the changes:\n%s", msg)
	}

	// /metrics
	rec := metrics.New(metrics.Options{})
	w := &runWatch{cfg: cfg, logger: slog.New(slog.DiscardHandler), metrics: rec}
	w.recordAttention(ctx, db, sum)
	ms := httptest.NewServer(rec.Handler())
	defer ms.Close()
	fams, err := metrics.Scrape(ctx, ms.URL)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := fams.Value("sitewatch_needs_attention_domains", "month", attentiontest.Month); !ok || int(v) != len(a.Domains) {
		t.Errorf("sitewatch_needs_attention_domains = %v (%v), want %d", v, ok, len(a.Domains))
	}
	for i, dom := range a.Domains {
		v, ok := fams.Value("sitewatch_needs_attention_rank", "domain", dom.Domain, "kind", dom.Reasons[0].Kind, "severity", dom.Severity())
		if i < metrics.AttentionLeadDomains && (!ok || int(v) != i+1) {
			t.Errorf("sitewatch_needs_attention_rank{domain=%q} = %v (%v), want %d", dom.Domain, v, ok, i+1)
		}
	}
	for kind, n := range a.ByKind() {
		if v, ok := fams.Value("sitewatch_needs_attention_reasons", "kind", kind); !ok || int(v) != n {
			t.Errorf("sitewatch_needs_attention_reasons{kind=%q} = %v (%v), want %d", kind, v, ok, n)
		}
	}
	checkSeverityGauge(t, fams, a.BySeverity())
}

// checkSeverityGauge checks sitewatch_needs_attention_severity against want, every severity
// exported (0 in a quiet month).
func checkSeverityGauge(t *testing.T, fams metrics.Families, want map[string]int) {
	t.Helper()
	for _, severity := range changes.AttentionSeverities {
		if v, ok := fams.Value("sitewatch_needs_attention_severity", "severity", severity); !ok || int(v) != want[severity] {
			t.Errorf("sitewatch_needs_attention_severity{severity=%q} = %v (%v), want %d", severity, v, ok, want[severity])
		}
	}
}

// webhookRows is the payload's needs_attention objects as "domain kind metric value previous z
// severity | reason" lines.
func webhookRows(t *testing.T, p map[string]any) []string {
	t.Helper()
	list, ok := p["needs_attention"].([]any)
	if !ok {
		t.Fatalf("needs_attention is %T, want a list of objects", p["needs_attention"])
	}
	var out []string
	for _, item := range list {
		o := item.(map[string]any)
		out = append(out, fmt.Sprintf("%v %v %v %v %v %v %v | %v", o["domain"], o["kind"], o["metric"], o["value"], o["previous"], o["z"], o["severity"], o["reason"]))
	}
	return out
}

// viewRows is a's rows as webhookRows writes them (JSON numbers, null as <nil>).
func viewRows(a *changes.Attention) []string {
	num := func(f *float64) any {
		if f == nil {
			return nil
		}
		return *f
	}
	var out []string
	for _, d := range a.Domains {
		for _, r := range d.Reasons {
			var metric any
			if r.Metric != "" {
				metric = r.Metric
			}
			out = append(out, fmt.Sprintf("%v %v %v %v %v %v %v | %v", d.Domain, r.Kind, metric, num(r.Value), num(r.Previous), num(r.Z), r.Severity, r.Text))
		}
	}
	return out
}

var numberedRE = regexp.MustCompile(`^\s*(\d+\. .*)$`)

// numbered returns the first n lines of text that start with "N. ", trimmed.
func numbered(text string, n int) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if m := numberedRE.FindStringSubmatch(l); m != nil && len(out) < n {
			out = append(out, m[1])
		}
	}
	return out
}

var itemRE = regexp.MustCompile(`(?s)<li class="\w+" data-rank="\d+">(.*?)</li>`)
var tagRE = regexp.MustCompile(`<[^>]+>`)

// reportItems returns the entries of the report's needs-attention section as text.
func reportItems(page string) []string {
	i := strings.Index(page, `<section id="attention">`)
	if i < 0 {
		return nil
	}
	end := i + strings.Index(page[i:], "</section>")
	var out []string
	for _, m := range itemRE.FindAllStringSubmatch(page[i:end], -1) {
		// The page keeps a figure and its unit on one line with a no-break space; the words
		// are the same as every other surface's.
		out = append(out, strings.ReplaceAll(html.UnescapeString(tagRE.ReplaceAllString(m[1], "")), "\u00a0", " "))
	}
	return out
}

func equalLines(a, b []string) bool {
	return strings.Join(a, "\n") == strings.Join(b, "\n") && len(a) == len(b)
}

// TestAttentionQuietMonthOnEverySurface: the fixture's quiet month has no row, and `changes`,
// the webhook (an empty list of objects, the text one line) and /metrics (0 domains) say so.
func TestAttentionQuietMonthOnEverySurface(t *testing.T) {
	ctx := context.Background()
	db := attentionWarehouse(t)
	quiet := "Needs attention in " + attentiontest.Quiet + ": nothing unusual"
	d, err := changes.BuildWith(ctx, db, attentiontest.Quiet, changes.AttentionSettings{})
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := d.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(text.String(), quiet+"\n") {
		t.Errorf("changes of the quiet month does not lead with %q:\n%s", quiet, text.String())
	}
	posted := make(chan map[string]any, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var p map[string]any
		if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
			t.Errorf("webhook body: %v", err)
		}
		posted <- p
	}))
	defer srv.Close()
	sum := &pipeline.Summary{RunID: "att-q", Snapshot: attentiontest.Quiet, Status: pipeline.StatusComplete, DomainsLoaded: 16, DomainsTotal: 16}
	notifyOutcome(ctx, notify.New(srv.URL, slog.New(slog.DiscardHandler)), db, sum, changes.AttentionSettings{}, nil, nil)
	p := <-posted
	if list, ok := p["needs_attention"].([]any); !ok || len(list) != 0 || p["needs_attention_total"] != 0.0 {
		t.Errorf("needs_attention = %v, total %v; want [] and 0", p["needs_attention"], p["needs_attention_total"])
	}
	if msg, _ := p["text"].(string); !strings.Contains(msg, "\n"+quiet+"\n") {
		t.Errorf("the webhook's text lacks %q:\n%s", quiet, msg)
	}
	rec := metrics.New(metrics.Options{})
	w := &runWatch{cfg: &config.Config{}, logger: slog.New(slog.DiscardHandler), metrics: rec}
	w.recordAttention(ctx, db, sum)
	ms := httptest.NewServer(rec.Handler())
	defer ms.Close()
	fams, err := metrics.Scrape(ctx, ms.URL)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := fams.Value("sitewatch_needs_attention_domains", "month", attentiontest.Quiet); !ok || v != 0 {
		t.Errorf("sitewatch_needs_attention_domains = %v (%v), want 0", v, ok)
	}
	checkSeverityGauge(t, fams, map[string]int{changes.SeverityHigh: 0, changes.SeverityMedium: 0})
}

// attentionWarehouse is a warehouse file holding the fixture with planted cases, closed when t ends.
func attentionWarehouse(t *testing.T) *sql.DB {
	t.Helper()
	dir := t.TempDir()
	w, err := warehouse.Open(context.Background(), warehouse.Options{DuckDBPath: filepath.Join(dir, "sitewatch.duckdb"), ParquetDir: filepath.Join(dir, "parquet")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	attentiontest.Load(t, w.DB())
	return w.DB()
}
