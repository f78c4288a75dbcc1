package pipeline

import (
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"sitewatch/pipeline/atlas"
	"sitewatch/pipeline/model"
	"sitewatch/schema"
)

func TestProgressLineFitsTheTerminal(t *testing.T) {
	pr := Progress{Month: "2026-10", DomainsDone: 1234, DomainsTotal: 10000, CallsDone: 2468, CallsTotal: 20001,
		Elapsed: time.Minute, ETA: 7 * time.Minute, RatePerSecond: 41.2}
	for _, width := range []int{120, 80, 60, 30, 10} {
		line := fitLine(progressSegments(pr, atlas.Stats{RateLimited: 17}, "98765", "7m0s"), width)
		if n := utf8.RuneCountInString(line); n >= width {
			t.Errorf("width %d: line of %d runes would wrap: %q", width, n, line)
		}
		if width >= 30 && !strings.Contains(line, "12%") {
			t.Errorf("width %d: no percentage in %q", width, line)
		}
	}
	if line := fitLine(progressSegments(pr, atlas.Stats{}, "?", "-"), 120); !strings.Contains(line, "ETA 7m0s") && !strings.Contains(line, "ETA -") {
		t.Errorf("wide line lacks the ETA: %q", line)
	}
	pr.Stopping = true
	line := fitLine(progressSegments(pr, atlas.Stats{InFlight: 4}, "?", "-"), 200)
	if !strings.Contains(line, "waiting for 4 calls in flight") || !strings.Contains(line, "press Ctrl-C again to abort") {
		t.Errorf("stopping line = %q", line)
	}
}

// TestProgressCountsDomains follows a plan's calls to domains done: a domain is done when all
// of its planned calls have finished (failed ones too), whatever order they finish in; the
// probe's calls before the plan and country-metadata count as calls only.
func TestProgressCountsDomains(t *testing.T) {
	p := newProgress(Env{}, nil, 10)
	p.done("b.example") // the probe: b's overview, dropped from the plan
	state := emptyState()
	state.AddStored("d.example", model.Endpoints(1)) // half-loaded: its overview is stored
	plan := BuildPlan("2026-10", []string{"a.example", "b.example", "c.example", "d.example"}, state, false)
	plan.drop(atlas.Request{Endpoint: schema.EndpointOverview, Domain: "b.example"})
	want := []atlas.Request{
		{Endpoint: schema.EndpointCountries},
		{Endpoint: schema.EndpointOverview, Domain: "a.example"}, {Endpoint: schema.EndpointSimilar, Domain: "a.example"},
		{Endpoint: schema.EndpointSimilar, Domain: "b.example"},
		{Endpoint: schema.EndpointOverview, Domain: "c.example"}, {Endpoint: schema.EndpointSimilar, Domain: "c.example"},
		{Endpoint: schema.EndpointSimilar, Domain: "d.example"},
	}
	if got := plan.Requests(); !slices.Equal(got, want) {
		t.Fatalf("plan = %v, want %v", got, want)
	}
	p.plan(plan)
	if p.domains != 4 || p.calls != 8 { // the probe and the 7 planned calls
		t.Fatalf("after the plan: %d domains, %d calls; want 4 and 8", p.domains, p.calls)
	}
	steps := []struct {
		domain string
		done   int
	}{{"", 0}, {"c.example", 0}, {"a.example", 0}, {"d.example", 1}, {"c.example", 2}, {"b.example", 3}, {"a.example", 4}}
	for i, s := range steps {
		p.done(s.domain)
		if p.domainsOK != s.done {
			t.Fatalf("after call %d (%q): %d domains done, want %d", i+1, s.domain, p.domainsOK, s.done)
		}
	}
	if p.finishedN != 8 || p.domainsOK != 4 || p.domains != 4 {
		t.Errorf("%d calls and %d of %d domains done, want 8 and 4 of 4", p.finishedN, p.domainsOK, p.domains)
	}
	if len(p.halfDone) != 0 || len(p.single) != 0 {
		t.Errorf("%d half-done and %d single-call domains still held after every call finished", len(p.halfDone), len(p.single))
	}
}
