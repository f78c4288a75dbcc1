package pipeline

import (
	"runtime"
	"slices"
	"strconv"
	"testing"

	"sitewatch/pipeline/internal/heapgrowth"
	"sitewatch/pipeline/model"
	"sitewatch/schema"
)

// TestPlanOrderAndCounts: countries first, then each pending domain's calls in watchlist order
// (only the missing one of a half-loaded domain), loaded and rejected domains skipped.
func TestPlanOrderAndCounts(t *testing.T) {
	state := emptyState()
	state.SetLoaded("b.example")
	state.Rejected["c.example"] = "invalid_domain"
	state.AddStored("e.example", model.Endpoints(2)) // its site-similar body is stored
	plan := BuildPlan("2026-10", []string{"a.example", "b.example", "c.example", "d.example", "e.example"}, state, false)
	want := []model.Request{
		{Endpoint: schema.EndpointCountries},
		{Endpoint: schema.EndpointOverview, Domain: "a.example"}, {Endpoint: schema.EndpointSimilar, Domain: "a.example"},
		{Endpoint: schema.EndpointOverview, Domain: "d.example"}, {Endpoint: schema.EndpointSimilar, Domain: "d.example"},
		{Endpoint: schema.EndpointOverview, Domain: "e.example"},
	}
	if got := plan.Requests(); !slices.Equal(got, want) {
		t.Fatalf("plan = %v,\nwant %v", got, want)
	}
	if plan.Credits() != 6 || plan.PendingDomains() != 3 || plan.Loaded != 1 || plan.HalfLoaded != 1 || len(plan.RejectedByAPI) != 1 {
		t.Errorf("credits %d pending %d loaded %d half %d rejected %v", plan.Credits(), plan.PendingDomains(), plan.Loaded, plan.HalfLoaded, plan.RejectedByAPI)
	}
	plan.drop(model.Request{Endpoint: schema.EndpointOverview, Domain: "d.example"})
	plan.drop(model.Request{Endpoint: schema.EndpointCountries})
	if got := plan.Requests(); !slices.Equal(got, append(want[1:3:3], want[4:]...)) || plan.PendingDomains() != 3 {
		t.Errorf("after dropping d's overview and the countries: %v (%d domains)", got, plan.PendingDomains())
	}
	var drained []model.Request
	for next := plan.queue(plan.calls); ; {
		req, ok := next()
		if !ok {
			break
		}
		drained = append(drained, req)
	}
	if !slices.Equal(drained, plan.Requests()) {
		t.Errorf("the queue handed out %v, want %v", drained, plan.Requests())
	}
}

// TestPlanIsCompact bounds what a plan holds per call for the whole fetch: 4 bytes and the
// watchlist it points into (32 bytes a call, 64 MB at a million domains, as Requests).
func TestPlanIsCompact(t *testing.T) {
	const n = 200_000
	domains := make([]string, n)
	for i := range domains {
		domains[i] = "domain-" + strconv.Itoa(i) + ".example"
	}
	var calls int
	grown := heapgrowth.Of(func() any {
		plan := BuildPlan("2026-10", domains, emptyState(), false)
		calls = plan.Credits()
		return plan
	})
	perCall := float64(grown) / float64(calls)
	runtime.KeepAlive(domains)
	if calls != 2*n+1 {
		t.Fatalf("%d calls, want %d", calls, 2*n+1)
	}
	// A call names one of 200,000 domains and an endpoint (19 bits): below 2 bytes the
	// measurement missed the plan.
	if perCall < 2 || perCall > 6 {
		t.Errorf("the plan holds %.1f bytes a call, want 2 to 6", perCall)
	}
	t.Logf("plan: %.1f bytes a call", perCall)
}
