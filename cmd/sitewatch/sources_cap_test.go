package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"sitewatch/pipeline/atlas/atlastest"
)

// api.max_credits_per_run with two sources caps the run's total, not each source's, and the
// cap is spent in spend order: the expiring quota (7) first, then the direct wallet (5).
func TestRunSourcesCapIsTheRunsTotal(t *testing.T) {
	h := sourcesHarness(t, atlastest.Options{}, atlastest.Domains(10), 7, time.Now().Add(time.Hour)) // 21 calls
	cfg, err := os.ReadFile(h.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	capped := strings.Replace(string(cfg), "  timeout: 5s\n", "  timeout: 5s\n  max_credits_per_run: 12\n", 1)
	if err := os.WriteFile(h.cfgPath, []byte(capped), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := h.run("check"); !strings.Contains(h.stdout.String(), "marketplace pays 7 of its 7") ||
		!strings.Contains(h.stdout.String(), "direct pays 5 of its 10,000") {
		t.Errorf("check exit %d: the plan does not share the cap of 12 in spend order:\n%s", code, h.stdout)
	}
	if code := h.run("run"); code != ExitCredits {
		t.Fatalf("run exit %d, want %d (the cap stops it)\n%s\n%s", code, ExitCredits, h.stdout, tail(h.stderr.String(), 3000))
	}
	if got := h.srv.Stats().Charged; got != 12 {
		t.Errorf("the sources together were charged %d, want the cap, 12", got)
	}
	if got := paidBySource(t, h.db()); got["marketplace"] != 7 || got["direct"] != 5 {
		t.Errorf("ledger paid by source = %v, want marketplace 7, direct 5", got)
	}
	if !strings.Contains(h.stdout.String()+h.stderr.String(), "max_credits_per_run") {
		t.Errorf("the stop does not name api.max_credits_per_run:\n%s\n%s", h.stdout, tail(h.stderr.String(), 2000))
	}
}

// ATLAS_BASE_URL with api.sources points every source at it: a two-source config whose
// base_urls lead nowhere runs against one simulator, and check says where the sources are.
func TestRunSourcesBaseURLFromEnvironment(t *testing.T) {
	h := sourcesHarness(t, atlastest.Options{}, atlastest.Domains(4), 3, time.Now().Add(time.Hour)) // 9 calls
	cfg, err := os.ReadFile(h.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	nowhere := strings.ReplaceAll(string(cfg), h.srv.URL, "http://127.0.0.1:9") // the discard port: nothing answers
	if err := os.WriteFile(h.cfgPath, []byte(nowhere), 0o644); err != nil {
		t.Fatal(err)
	}
	h.extraEnv["ATLAS_BASE_URL"] = h.srv.URL
	if code := h.run("check"); code != ExitOK || !strings.Contains(h.stdout.String(), "2 credit sources, every one at ATLAS_BASE_URL") {
		t.Errorf("check exit %d, or it does not say the sources are at ATLAS_BASE_URL:\n%s\n%s", code, h.stdout, tail(h.stderr.String(), 2000))
	}
	if code := h.run("run"); code != ExitOK {
		t.Fatalf("run exit %d\n%s\n%s", code, h.stdout, tail(h.stderr.String(), 3000))
	}
	if got := paidBySource(t, h.db()); got["marketplace"] != 3 || got["direct"] != 6 {
		t.Errorf("ledger paid by source = %v, want marketplace 3, direct 6", got)
	}
}
