package pipeline

import (
	"context"
	"time"

	"sitewatch/pipeline/atlas"
	"sitewatch/schema"
)

// resumeBracket resumes candidate, a month lacking exactly one site-overview answer and
// otherwise only site-similar ones (and perhaps country-metadata), without an opening probe.
// Made with one (probe, bracket.go), the rest would be site-similar only and need a closing
// site-overview call, which could only be the probed overview again: one answer paid twice
// (issue 32 item 11: another machine's credit stop left such a month in the bucket).
// Instead the month's own newest overview answer opens the bracket, and the lacking overview,
// fetched after the site-similar answers, closes it: the API's month only moves forward, so
// two answers naming the same month enclose answers of that month. When the closing answer
// names another month the site-similar answers are not stored (month_unknown, as for any
// broken bracket) and the run reports the turn. The newest overview must be younger than
// dateTrust, so a month turn in between (which would waste those answers) stays unlikely;
// older months are probed as before. It says whether it ran the fetch.
func (r *runState) resumeBracket(ctx context.Context, candidate string) (bool, error) {
	if candidate == "" || r.opts.Refresh || r.opts.Snapshot != "" {
		return false, nil // with --snapshot a month other than it must store nothing: probe first
	}
	state, err := r.store.State(ctx, candidate)
	if err != nil {
		return false, err
	}
	plan := BuildPlan(candidate, r.wl.Domains, state, false)
	closer, ok := soleOverview(plan)
	if !ok {
		return false, nil
	}
	newest, err := r.store.NewestOverview(ctx, candidate)
	if err != nil || newest.IsZero() || r.env.Now().Sub(newest) > dateTrust {
		return false, err
	}
	r.months.Trust(candidate)
	r.sum.Snapshot = candidate
	r.env.Logger.Info("resuming the month without a probe: its one lacking site-overview call closes the bracket of its site-similar calls",
		"snapshot", candidate, "closing", closer.Domain, "newest_overview", newest.Format(time.RFC3339))
	r.probed = []atlas.Request{closer} // closeBracket's first closing call
	plan.drop(closer)
	r.plan = plan
	r.progress.plan(plan)
	return true, r.fetchBracketed(ctx, func(res atlas.Result) {
		r.progress.finished(res)
		r.handle(ctx, res)
	})
}

// soleOverview returns the plan's one site-overview call when it has exactly one and at
// least one site-similar call.
func soleOverview(plan *Plan) (atlas.Request, bool) {
	var overview atlas.Request
	overviews, similar := 0, false
	for _, req := range plan.Requests {
		switch req.Endpoint {
		case schema.EndpointOverview:
			overview = req
			overviews++
		case schema.EndpointSimilar:
			similar = true
		}
	}
	return overview, overviews == 1 && similar
}
