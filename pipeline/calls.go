package pipeline

import (
	"context"
	"fmt"

	"sitewatch/pipeline/model"
)

// fetch learns the API's month from one site-overview answer (the probe), then fetches what
// that month still needs: country-metadata first, then both calls of each domain in turn.
func (r *runState) fetch(ctx context.Context, candidate string) error {
	if r.blindStart(candidate) {
		return r.fetchBlind(ctx) // blindstart.go: nothing held, no lone probe needed
	}
	// Read once for both: a million domains' state takes seconds and ~100 MB to build.
	held, err := r.candidateState(ctx, candidate)
	if err != nil {
		return err
	}
	if resumed, err := r.resumeBracket(ctx, candidate, held); resumed || err != nil {
		return err // bracket.go resumeBracket: one lacking overview closes the bracket, none paid twice
	}
	if err := r.probe(ctx, candidate, held); err != nil || r.upToDate || r.mismatch != nil {
		return err
	}
	// The probe stored its answer (and named the month): the plan reads the month again.
	state, err := r.store.State(ctx, r.months.Month())
	if err != nil {
		return fmt.Errorf("read snapshot %s state: %w", r.months.Month(), err)
	}
	r.plan = BuildPlan(r.months.Month(), r.wl.Domains, state, r.opts.Refresh)
	for _, req := range r.probed {
		r.plan.drop(req)
	}
	r.progress.plan(r.plan)
	handle := func(res model.Result) {
		r.progress.finished(res)
		r.handle(ctx, res)
	}
	if !similarOnly(r.plan) {
		return r.fetchPlan(ctx, handle)
	}
	return r.fetchBracketed(ctx, handle)
}

// fetchPlan makes the plan's calls, country-metadata first: alone when the credits might not
// cover the plan (countries.go), else beside the other calls.
func (r *runState) fetchPlan(ctx context.Context, handle func(model.Result)) error {
	calls := r.plan.calls
	if r.countriesAlone() {
		if err := r.client.FetchAll(ctx, r.plan.requests(calls[:1]), handle); err != nil {
			return err
		}
		calls = calls[1:]
	}
	return r.fetchCalls(ctx, nil, calls, handle)
}
