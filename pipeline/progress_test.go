package pipeline

import (
	"slices"
	"testing"

	"sitewatch/pipeline/model"
	"sitewatch/schema"
)

// TestProgressCountsDomains follows a plan's calls to domains done: a domain is done when all
// of its planned calls have finished (failed ones too), whatever order they finish in; the
// probe's calls before the plan and country-metadata count as calls only.
func TestProgressCountsDomains(t *testing.T) {
	p := newProgress(Env{}, nil, 10)
	p.done("b.example") // the probe: b's overview, dropped from the plan
	state := emptyState()
	state.AddStored("d.example", model.Endpoints(1)) // half-loaded: its overview is stored
	plan := BuildPlan("2026-10", []string{"a.example", "b.example", "c.example", "d.example"}, state, false)
	plan.drop(model.Request{Endpoint: schema.EndpointOverview, Domain: "b.example"})
	want := []model.Request{
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
