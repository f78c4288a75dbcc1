package pipeline

import (
	"context"
	"errors"
	"slices"
	"sync"

	"sitewatch/pipeline/model"
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

// fetchBlind fetches the whole watchlist without a probe. Until an answer names the month only
// site-overview calls go out (each names the month itself: blindGate); answers that arrive
// before the month is known (failures, a credit-short start's countries) are held, then
// handled under that month; if no answer ever names it, the credits of those held go on the
// ledger as month_unknown (nothing is stored).
func (r *runState) fetchBlind(ctx context.Context) error {
	r.plan = BuildPlan("", r.wl.Domains, emptyState(), r.opts.Refresh)
	r.progress.plan(r.plan)
	var held []model.Result
	gate := &blindGate{wake: make(chan struct{}, 1)}
	handle := func(res model.Result) {
		r.progress.finished(res)
		// Told after the answer is handled: the answer that names the month opens the gate.
		defer func() { gate.answered(res, r.months.Month() != "") }()
		switch {
		case r.months.Month() != "":
			r.handle(ctx, res)
		case res.Err != nil || res.Endpoint != schema.EndpointOverview || r.cause() != nil:
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
	err := r.fetchHoldingBack(ctx, gate, handle)
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
func (r *runState) fetchHoldingBack(ctx context.Context, gate *blindGate, handle func(model.Result)) error {
	calls := r.plan.calls
	if r.countriesAlone() {
		var err error
		if calls, err = r.fetchCountriesAlone(ctx, gate, calls, handle); err != nil {
			return err
		}
	}
	rest, last, ok := holdBackOverview(calls)
	if !ok || !r.mayNotCover(int64(len(calls))) {
		return r.fetchCalls(ctx, gate, calls, handle)
	}
	closer := r.plan.request(last)
	failed := 0
	err := r.fetchCalls(ctx, gate, rest, func(res model.Result) {
		if res.Err != nil && !isRejection(res.Err) {
			failed++
		}
		handle(res)
	})
	if err != nil || failed > 0 || r.cause() != nil {
		r.env.Logger.Info("the last site-overview call is left for the next run, which closes its month with it",
			"domain", closer.Domain, "failed_calls", failed)
		return err
	}
	return r.client.FetchAll(ctx, []model.Request{closer}, handle)
}

// fetchCountriesAlone is countriesAlone for a blind start: one site-overview call goes alone
// first, so the countries (calls[0]), paid alone next, have a month to be filed under; when
// that overview names none, the countries wait in the gate with the other calls that carry no
// date. It returns the calls left.
func (r *runState) fetchCountriesAlone(ctx context.Context, gate *blindGate, calls []call, handle func(model.Result)) ([]call, error) {
	countries, rest := calls[0], calls[1:]
	if i := slices.IndexFunc(rest, func(c call) bool { return c.endpoint() == schema.EndpointOverview }); i >= 0 {
		gate.handedOut() // its answer is counted like those the gate hands out
		if err := r.client.FetchAll(ctx, []model.Request{r.plan.request(rest[i])}, handle); err != nil {
			return nil, err
		}
		rest = append(rest[:i:i], rest[i+1:]...)
	}
	if r.months.Month() == "" {
		return append([]call{countries}, rest...), nil
	}
	return rest, r.client.FetchAll(ctx, []model.Request{r.plan.request(countries)}, handle)
}

// holdBackOverview takes the last site-overview call out of calls when they also hold a
// site-similar call (ok false: nothing to hold back).
func holdBackOverview(calls []call) (rest []call, closer call, ok bool) {
	last, similar := -1, false
	for i, c := range calls {
		switch c.endpoint() {
		case schema.EndpointOverview:
			last = i
		case schema.EndpointSimilar:
			similar = true
		}
	}
	if last < 0 || !similar {
		return calls, 0, false
	}
	rest = append(append(make([]call, 0, len(calls)-1), calls[:last]...), calls[last+1:]...)
	return rest, calls[last], true
}

// isRejection says whether err is the API's 400 for a domain (recorded as rejected: done).
func isRejection(err error) bool {
	var ae *model.Error
	return errors.As(err, &ae) && ae.Status == 400
}

// setMonth names the month in the progress once the first answer told it.
func (p *progress) setMonth(month string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.month = month
}

// blindGate orders a blind start's calls: until an answer has named the month, it hands out
// only site-overview calls, and the calls that carry no date (site-similar, countries) wait.
// An answer that names no month cannot be filed under one, so a run stopped before it learned
// its month (a lease lost, the API failing every overview) would have paid for answers it
// must throw away and the next run pays again (the fault soak's seed 748585222). The cost: the
// first site-similar call waits for the first overview answer, about one round trip, once per
// warehouse (a blind start is a warehouse's first run).
//
// It needs a fetcher that takes its calls from a queue (one credit source's FetchFrom); with
// several credit sources (api.sources), whose calls are split between the sources up front,
// the calls go out in the plan's order and answers that name no month stay held as before.
type blindGate struct {
	wake chan struct{} // a token each time the month is learned or an overview is answered

	mu               sync.Mutex
	known            bool
	sent, overviewed int // overview calls handed out, and answered, while the month was unknown
}

// answered notes an answer (known: the run knows its month now) and wakes the queue.
func (g *blindGate) answered(res model.Result, known bool) {
	g.mu.Lock()
	if !g.known && res.Endpoint == schema.EndpointOverview {
		g.overviewed++
	}
	g.known = g.known || known
	g.mu.Unlock()
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// handedOut counts an overview call sent outside the queue while the month is unknown.
func (g *blindGate) handedOut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.known {
		g.sent++
	}
}

// queue hands out calls for the client's FetchFrom: overview calls first while the month is
// unknown, the others once it is known. When every overview handed out was answered and none
// named the month, it ends: the calls left would buy answers no month can hold.
func (g *blindGate) queue(ctx context.Context, stopped <-chan struct{}, plan *Plan, calls []call) func() (model.Request, bool) {
	var waiting []call
	next := 0
	return func() (model.Request, bool) {
		for {
			g.mu.Lock()
			if g.known {
				g.mu.Unlock()
				if len(waiting) > 0 {
					c := waiting[0]
					waiting = waiting[1:]
					return plan.request(c), true
				}
				if next < len(calls) {
					next++
					return plan.request(calls[next-1]), true
				}
				return model.Request{}, false
			}
			for next < len(calls) && calls[next].endpoint() != schema.EndpointOverview {
				waiting = append(waiting, calls[next])
				next++
			}
			if next < len(calls) {
				g.sent++
				g.mu.Unlock()
				next++
				return plan.request(calls[next-1]), true
			}
			done := g.overviewed == g.sent
			g.mu.Unlock()
			if done {
				return model.Request{}, false
			}
			select {
			case <-g.wake:
			case <-stopped:
				return model.Request{}, false
			case <-ctx.Done():
				return model.Request{}, false
			}
		}
	}
}

// fetchCalls fetches calls from a queue when the fetcher takes one (one credit source; no
// list of Requests is built), through gate unless it is nil; else as a list, in order.
func (r *runState) fetchCalls(ctx context.Context, gate *blindGate, calls []call, handle func(model.Result)) error {
	qf, ok := r.client.(QueueFetcher)
	if !ok || !qf.Queueable() {
		return r.client.FetchAll(ctx, r.plan.requests(calls), handle)
	}
	next := r.plan.queue(calls)
	if gate != nil {
		next = gate.queue(ctx, qf.Stopped(), r.plan, calls)
	}
	return qf.FetchFrom(ctx, next, handle)
}
