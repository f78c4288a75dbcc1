package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"sitewatch/pipeline/atlas/atlastest"
)

// sourcesAtRate is sourcesHarness with the direct source slowed to 3 requests/s and given a
// reserve of minCredits, the listing to 10/s, as the README's example config does; the server
// allows 200/s.
func sourcesAtRate(t *testing.T, opts atlastest.Options, domains []string, quota int64, minCredits string) *harness {
	t.Helper()
	h := sourcesHarness(t, opts, domains, quota, time.Now().Add(time.Hour))
	b, err := os.ReadFile(h.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(b), "      key_env: ATLAS_API_KEY\n      rate_limit: 200\n",
		"      key_env: ATLAS_API_KEY\n      rate_limit: 3\n      min_credits: "+minCredits+"\n", 1)
	cfg = strings.Replace(cfg, "      marketplace_key_env: LISTING_KEY\n      rate_limit: 200\n", "      marketplace_key_env: LISTING_KEY\n      rate_limit: 10\n", 1)
	if err := os.WriteFile(h.cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return h
}

// TestSourcesFiguresAreTheConfigs: with api.sources, check and run --dry-run print each source's
// own rate (the configured 3/s, not the server's 200/s) and reserve; validate prints every
// source instead of the single-source header.
func TestSourcesFiguresAreTheConfigs(t *testing.T) {
	h := sourcesAtRate(t, atlastest.Options{}, atlastest.Domains(3), 100, "50")
	if code := h.run("validate"); code != ExitOK {
		t.Fatalf("validate exit %d\n%s%s", code, h.stdout, h.stderr)
	}
	first, _, _ := strings.Cut(h.stdout.String(), "\n")
	golden(t, "validate-sources.golden", strings.Replace(first, h.cfgPath, "domains.yaml", 1)+"\n")
	if strings.Contains(first, "mode direct") || strings.Contains(first, "rate_limit 0") {
		t.Errorf("validate prints the single-source header for api.sources: %s", first)
	}
	for _, args := range [][]string{{"check"}, {"run", "--dry-run"}} {
		if code := h.run(args...); code != ExitOK {
			t.Fatalf("%v exit %d\n%s%s", args, code, h.stdout, h.stderr)
		}
		out := h.stdout.String()
		for _, want := range []string{"balance 10,000 credits, 3 requests/s", "quota 100 of 100 left", "10 requests/s"} {
			if !strings.Contains(out, want) {
				t.Errorf("%v lacks %q:\n%s", args, want, out)
			}
		}
		if strings.Contains(out, "200 requests/s") {
			t.Errorf("%v prints the server's rate, not the source's:\n%s", args, out)
		}
	}
	if out := h.stdout.String(); !strings.Contains(out, "min_credits reserve") || !strings.Contains(out, "direct 50") {
		t.Errorf("run --dry-run does not print the sources' reserves:\n%s", out)
	}
}

// TestSourcesReserveErrorNamesTheSource: a run stopped by a source's min_credits names that
// source and its setting (api.sources[].min_credits), not api.min_credits, and no internal word.
func TestSourcesReserveErrorNamesTheSource(t *testing.T) {
	h := sourcesAtRate(t, atlastest.Options{Keys: map[string]int64{"canary-key-7f3a9c": 60}}, atlastest.Domains(10), 5, "50")
	code := h.run("run")
	if code != ExitCredits {
		t.Fatalf("run exit %d, want %d\n%s%s", code, ExitCredits, h.stdout, tail(h.stderr.String(), 2000))
	}
	out := h.stdout.String()
	t.Logf("summary:\n%s", out)
	for _, bad := range []string{"atlas start", "below api.min_credits"} {
		if strings.Contains(out, bad) {
			t.Errorf("the summary says %q:\n%s", bad, out)
		}
	}
	if !strings.Contains(out, "error: credit source direct reached its reserve, min_credits of source direct (api.sources): 50 credits remain, a call costs 1, reserve is 50; top up credit source direct") {
		t.Errorf("the summary does not name the source and its reserve:\n%s", out)
	}
}
