package wire

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"sitewatch/pipeline"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/livestatus"
	"sitewatch/pipeline/metrics"
	"sitewatch/pipeline/model"
)

// TestWatchFollowsARunsEvents feeds Watch's observer a run's events as the core tells them and
// checks what watches the run from outside: the live status file (running with the progress
// the run reports when polled, then final with the outcome) and /metrics (in progress, the
// spend, the source's credits, then the loaded month and the outcome). No run, no socket but
// the scrape's loopback.
func TestWatchFollowsARunsEvents(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := &config.Config{Warehouse: config.WarehouseConfig{DuckDB: filepath.Join(dir, "w.duckdb")}}
	rec := metrics.New(metrics.Options{})
	obs := Watch{Metrics: rec}.Observer(cfg, slog.New(slog.DiscardHandler))
	started := time.Date(2026, 6, 3, 4, 0, 0, 0, time.UTC)
	now := pipeline.ProgressReport{Progress: pipeline.Progress{Month: "2026-06", Loaded: 2, ETA: 30 * time.Second, RatePerSecond: 2.5},
		Stats:   model.Stats{Requests: 5, CreditsSpent: 5, CreditsRemaining: 95, ByStatus: map[int]int64{200: 5}},
		Sources: []pipeline.SourceSpend{{Name: "direct", Credits: 5, Remaining: 95}}, Planned: true}
	obs.Event(ctx, pipeline.RunStarted{RunID: "r1", Month: "2026-06", Domains: 3, At: started, Now: func() pipeline.ProgressReport { return now }})

	live := livestatus.Path(cfg.Warehouse.DuckDB)
	st, err := livestatus.Read(live)
	if err != nil || st == nil {
		t.Fatalf("no live status file after RunStarted: %v", err)
	}
	if st.State != livestatus.StateRunning || st.RunID != "r1" || st.Total != 3 {
		t.Errorf("live status %+v, want running, run r1 of 3 domains", st)
	}
	obs.Event(ctx, now)
	fams := scrape(t, rec)
	for name, want := range map[string]float64{"sitewatch_run_in_progress": 1, "sitewatch_credits_spent_total": 5, "sitewatch_credits_remaining": 95} {
		if v, ok := fams.Value(name); !ok || v != want {
			t.Errorf("%s = %v (%v), want %v", name, v, ok, want)
		}
	}
	if v, ok := fams.Value("sitewatch_source_credits_spent_total", "source", "direct"); !ok || v != 5 {
		t.Errorf("sitewatch_source_credits_spent_total{source=direct} = %v (%v), want 5", v, ok)
	}

	sum := &pipeline.Summary{RunID: "r1", Snapshot: "2026-06", Status: pipeline.StatusComplete, DomainsLoaded: 3, DomainsTotal: 3}
	now.Loaded, now.ETA = 3, -1
	obs.Event(ctx, pipeline.RunFinished{Summary: sum, At: started.Add(time.Minute), MonthLoaded: true})
	if st, err = livestatus.Read(live); err != nil || st == nil {
		t.Fatalf("no live status file after RunFinished: %v", err)
	}
	if st.State != livestatus.StateFinal || st.Outcome != pipeline.StatusComplete || st.Loaded != 3 || st.ETASeconds != nil {
		t.Errorf("live status %+v, want final, complete, 3 loaded, no ETA", st)
	}
	fams = scrape(t, rec)
	if v, ok := fams.Value("sitewatch_run_in_progress"); !ok || v != 0 {
		t.Errorf("sitewatch_run_in_progress after the run = %v (%v), want 0", v, ok)
	}
	if v, ok := fams.Value("sitewatch_domains_loaded", "month", "2026-06"); !ok || v != 3 {
		t.Errorf("sitewatch_domains_loaded{month=2026-06} = %v (%v), want 3", v, ok)
	}
	if v, ok := fams.Value("sitewatch_runs_total", "outcome", pipeline.StatusComplete); !ok || v != 1 {
		t.Errorf("sitewatch_runs_total{outcome=complete} = %v (%v), want 1", v, ok)
	}
}

func scrape(t *testing.T, rec *metrics.Recorder) metrics.Families {
	t.Helper()
	srv := httptest.NewServer(rec.Handler())
	defer srv.Close()
	fams, err := metrics.Scrape(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}
