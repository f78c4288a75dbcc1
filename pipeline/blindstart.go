package pipeline

import (
	"context"
	"errors"

	"sitewatch/pipeline/atlas"
	"sitewatch/schema"
)

// blindStart says a run may skip the lone probe that learns the API's month: the warehouse
// holds no month and --snapshot names none, so no answer can find the month up to date or
// mismatched, and every call of the watchlist is wanted whatever month the API serves. The
// month is then learned from the first site-overview answer, and the calls go out together
// instead of after one call's round trip (~0.5 s at 200–800 ms of latency).
func (r *runState) blindStart(candidate string) bool {
	return candidate == "" && r.opts.Snapshot == ""
}

// fetchBlind fetches the whole watchlist at once. Answers that arrive before the first
// site-overview answer names the month are held, then handled under that month; if no answer
// ever names it, their credits go on the ledger as month_unknown (nothing is stored).
func (r *runState) fetchBlind(ctx context.Context) error {
	r.plan = BuildPlan("", r.wl.Domains, emptyState(), r.opts.Refresh)
	r.progress.plan(r.plan)
	var held []atlas.Result
	handle := func(res atlas.Result) {
		r.progress.finished(res)
		switch {
		case r.months.Month() != "":
			r.handle(ctx, res)
		case res.Err != nil || res.Endpoint != schema.EndpointOverview || r.stopCause != nil:
			held = append(held, res)
		default:
			if err := r.decide(ctx, res); err != nil {
				r.fail(err) // the API's first answer names no data month
				return
			}
			r.progress.setMonth(r.months.Month())
			for _, h := range held {
				r.handle(ctx, h)
			}
			held = nil
		}
	}
	err := r.fetchHoldingBack(ctx, handle)
	for _, res := range held { // no answer named the month
		if res.Err != nil {
			r.handleFailure(ctx, res)
			continue
		}
		r.recordCharge(ctx, res, "", OutcomeMonthUnknown)
	}
	return err
}

// fetchHoldingBack is fetchPlan for a blind start. When the credits known may not cover the
// plan, one site-overview call (the plan's last) is held back and sent only once every other
// call was answered: a credit stop (calls are admitted in any order) then always leaves the
// month lacking an overview. A month left holding every overview but lacking site-similar
// answers could be resumed only by paying an overview it holds again (the answers carry no
// date: bracket.go); one lacking an overview is resumed with that overview as the closing
// call, paying nothing twice (resumeBracket). A call that failed leaves the held-back one for
// the next run too. Held back only when credits may run short: otherwise it costs a round trip.
func (r *runState) fetchHoldingBack(ctx context.Context, handle func(atlas.Result)) error {
	reqs := r.plan.Requests
	if r.countriesAlone() {
		if err := r.client.FetchAll(ctx, reqs[:1], handle); err != nil {
			return err
		}
		reqs = reqs[1:]
	}
	rest, closer, ok := holdBackOverview(reqs)
	if !ok || !r.mayNotCover(int64(len(reqs))) {
		return r.client.FetchAll(ctx, reqs, handle)
	}
	failed := 0
	err := r.client.FetchAll(ctx, rest, func(res atlas.Result) {
		if res.Err != nil && !isRejection(res.Err) {
			failed++
		}
		handle(res)
	})
	if err != nil || failed > 0 || r.stopCause != nil {
		r.env.Logger.Info("the last site-overview call is left for the next run, which closes its month with it",
			"domain", closer.Domain, "failed_calls", failed)
		return err
	}
	return r.client.FetchAll(ctx, []atlas.Request{closer}, handle)
}

// holdBackOverview takes the last site-overview call out of reqs when they also hold a
// site-similar call (ok false: nothing to hold back).
func holdBackOverview(reqs []atlas.Request) (rest []atlas.Request, closer atlas.Request, ok bool) {
	last, similar := -1, false
	for i, req := range reqs {
		switch req.Endpoint {
		case schema.EndpointOverview:
			last = i
		case schema.EndpointSimilar:
			similar = true
		}
	}
	if last < 0 || !similar {
		return reqs, atlas.Request{}, false
	}
	rest = append(append(make([]atlas.Request, 0, len(reqs)-1), reqs[:last]...), reqs[last+1:]...)
	return rest, reqs[last], true
}

// isRejection says whether err is the API's 400 for a domain (recorded as rejected: done).
func isRejection(err error) bool {
	var ae *atlas.Error
	return errors.As(err, &ae) && ae.Status == 400
}

// setMonth names the month in the progress once the first answer told it.
func (p *progress) setMonth(month string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.month = month
}
