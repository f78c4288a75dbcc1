package pipeline

import (
	"context"
	"fmt"
	"slices"
	"time"

	"sitewatch/pipeline/model"
	"sitewatch/schema"
)

// OutcomeMonthUnknown is the run_calls outcome of a charged site-similar answer that was not
// stored because no overview answer after it confirmed the month it was fetched in.
const OutcomeMonthUnknown = "month_unknown"

// similarOnly says whether plan fetches site-similar answers and no site-overview answer: a
// site-similar answer carries no date, so without overview answers around it nothing in the
// run tells which month it is for.
func similarOnly(plan *Plan) bool {
	similar := false
	for _, c := range plan.calls {
		switch c.endpoint() {
		case schema.EndpointOverview:
			return false
		case schema.EndpointSimilar:
			similar = true
		}
	}
	return similar
}

// fetchBracketed makes a site-similar-only plan between two probes: the opening probe (made
// by probe) named the month; the answers are held, not stored, until a closing site-overview
// call names the month again. Only when both name the same month are they stored under it;
// otherwise (the API turned, or the closing call could not be made) they are not stored,
// their credits go on the ledger as month_unknown, and a rerun fetches them again. The
// bracket costs 2 credits, the two probes, unless a closing probe fails: up to
// closingAttempts are made before the held answers are given up (closeBracket).
func (r *runState) fetchBracketed(ctx context.Context, handle func(model.Result)) error {
	var held []model.Result
	hold := func(res model.Result) {
		if res.Err != nil || res.Endpoint != schema.EndpointSimilar {
			handle(res)
			return
		}
		r.progress.finished(res)
		held = append(held, res)
	}
	fetchErr := r.fetchPlan(ctx, hold)
	if len(held) == 0 {
		return fetchErr
	}
	confirmed, why := r.closeBracket(ctx, held)
	if !confirmed {
		r.dropUnconfirmed(ctx, held, why)
		return fetchErr
	}
	for _, res := range held {
		r.handle(ctx, res)
	}
	return fetchErr
}

// closingAttempts bounds the closing probes of one bracket. A failed closing probe drops every
// answer it would confirm, each already paid for, so one that failed (after the client's own
// retry) is made again, for another domain, before the held answers are given up.
const closingAttempts = 3

// closeBracket makes closing probes until one answers, at most closingAttempts
// (closingDomains). It stops at once when the run stops (credits, a signal) or a probe names
// another month. It says whether the month is confirmed, and if not, why.
func (r *runState) closeBracket(ctx context.Context, held []model.Result) (bool, string) {
	if len(r.probed) == 0 && r.closer == "" {
		return false, "no opening probe was made"
	}
	domains := r.closingDomains(held)
	var why string
	for i, d := range domains {
		confirmed, failed, reason := r.closingProbe(ctx, d)
		if confirmed || !failed || r.cause() != nil || ctx.Err() != nil {
			return confirmed, reason
		}
		why = reason
		if i+1 < len(domains) {
			r.env.Logger.Warn("the closing site-overview call failed; trying another before dropping the held answers",
				"domain", d, "next", domains[i+1], "held", len(held), "why", reason)
		}
	}
	return false, why
}

// closingDomains are the domains whose site-overview calls may close the bracket, at most
// closingAttempts: the bracket's closer when resumeBracket named one (an answer the month
// lacks), then the domains whose probe the API answered 5xx (unpaidProbes: their overview is
// lacking too, so the closing credit buys data, and the failed call cost nothing), then the
// domains of the held answers and of the watchlist (any overview of the month names it, but
// theirs are held: a credit for the confirmation alone), read only until enough are found:
// not a copy of a million domains. Every other domain probed in this run is skipped: the
// one whose probe answered, as its overview again would be one call paid twice in a run (the
// fault soak found an opening and a closing probe of the same domain 250 ms apart), one whose
// answer the client refused (drift: charged, and the same body would come back;
// TestDriftFaultNeverRetried's seed 33 found such a probe asked again as the closer), one cut
// off (it may have been charged), one the API rejected. Only when no other domain is left does
// the opening probe's domain close its own bracket, rather than losing the held answers.
func (r *runState) closingDomains(held []model.Result) []string {
	var domains []string
	if r.closer != "" {
		domains = append(domains, r.closer)
	}
	asked := make(map[string]bool, len(r.probed)) // probed in this run: not asked again
	for _, p := range r.probed {
		asked[p.Domain] = true
	}
	for _, d := range r.unpaidProbes {
		delete(asked, d) // a 5xx cost nothing and bought nothing
	}
	candidates := func(yield func(string) bool) {
		for _, d := range r.unpaidProbes {
			if !yield(d) {
				return
			}
		}
		for _, res := range held {
			if !yield(res.Domain) {
				return
			}
		}
		for _, d := range r.wl.Domains {
			if !yield(d) {
				return
			}
		}
	}
	for d := range candidates {
		if len(domains) == closingAttempts {
			break
		}
		if !slices.Contains(domains, d) && !asked[d] {
			domains = append(domains, d)
		}
	}
	if len(domains) == 0 && r.answeredProbe != "" {
		domains = append(domains, r.answeredProbe)
	}
	return domains
}

// closingProbe fetches the overview of domain and says whether its month is the run's month,
// whether the call failed (an answer that cannot serve: worth another probe), and why not.
// Its answer is handled like any other: an answer of another month is a month turn, which
// stops the run.
func (r *runState) closingProbe(ctx context.Context, domain string) (confirmed, failed bool, why string) {
	req := model.Request{Endpoint: schema.EndpointOverview, Domain: domain}
	var answer *model.Result
	err := r.client.FetchAll(ctx, []model.Request{req}, func(res model.Result) { answer = &res })
	if answer == nil {
		return false, false, fmt.Sprintf("the closing site-overview call could not be made (%v)", err)
	}
	if answer.Err != nil {
		r.handleFailure(ctx, *answer)
		return false, !model.IsStop(answer.Err), fmt.Sprintf("the closing site-overview call failed (%v)", answer.Err)
	}
	month := r.months.OverviewMonth(overviewOf(*answer))
	r.handle(ctx, *answer)
	if month != r.months.Month() {
		return false, false, fmt.Sprintf("the closing site-overview answer is for %q, not %s: the API turned", month, r.months.Month())
	}
	return true, false, ""
}

// dropUnconfirmed puts the held answers' credits on the ledger without storing them.
func (r *runState) dropUnconfirmed(ctx context.Context, held []model.Result, why string) {
	r.env.Logger.Warn("site-similar answers not stored: their month could not be confirmed; a rerun fetches them again",
		"answers", len(held), "snapshot", r.months.Month(), "why", why)
	for _, res := range held {
		r.recordCharge(ctx, res, r.months.Month(), OutcomeMonthUnknown)
	}
}

// resumeBracket resumes candidate, a month lacking exactly one site-overview answer and
// otherwise only site-similar ones (and perhaps country-metadata), without an opening probe.
// Made with one (probe, above), the rest would be site-similar only and need a closing
// site-overview call, which could only be the probed overview again: one answer paid twice
// (issue 32 item 11: another machine's credit stop left such a month in the bucket).
// Instead the month's own newest overview answer opens the bracket, and the lacking overview,
// fetched after the site-similar answers, closes it: the API's month only moves forward, so
// two answers naming the same month enclose answers of that month. When the closing answer
// names another month the site-similar answers are not stored (month_unknown, as for any
// broken bracket) and the run reports the turn. The newest overview must be younger than
// dateTrust, so a month turn in between (which would waste those answers) stays unlikely;
// older months are probed as before. A month lacking only site-similar answers is probed
// first, not resumed so: a held domain's overview would close as cheaply as a probe opens, but
// a turn since its newest overview would waste every site-similar answer instead of one probe.
// state is what the warehouse holds of candidate. It says whether it ran the fetch.
func (r *runState) resumeBracket(ctx context.Context, candidate string, state *model.SnapshotState) (bool, error) {
	if candidate == "" || r.opts.Refresh || r.opts.Snapshot != "" {
		return false, nil // with --snapshot a month other than it must store nothing: probe first
	}
	plan := BuildPlan(candidate, r.wl.Domains, state, false)
	closer, ok := soleOverview(plan)
	if !ok {
		return false, nil
	}
	newest, trusted, err := r.adoptIfRecent(ctx, candidate)
	if !trusted {
		return false, err
	}
	r.env.Logger.Info("resuming the month without a probe: its one lacking site-overview call closes the bracket of its site-similar calls",
		"snapshot", candidate, "closing", closer.Domain, "newest_overview", newest.Format(time.RFC3339))
	r.closer = closer.Domain // closeBracket's first closing call
	r.probed = []model.Request{closer}
	plan.drop(closer)
	r.plan = plan
	r.progress.plan(plan)
	return true, r.fetchBracketed(ctx, func(res model.Result) {
		r.progress.finished(res)
		r.handle(ctx, res)
	})
}

// soleOverview returns the plan's one site-overview call when it has exactly one and at
// least one site-similar call.
func soleOverview(plan *Plan) (model.Request, bool) {
	var overview model.Request
	overviews, similar := 0, false
	for _, c := range plan.calls {
		switch c.endpoint() {
		case schema.EndpointOverview:
			overview = plan.request(c)
			overviews++
		case schema.EndpointSimilar:
			similar = true
		}
	}
	return overview, overviews == 1 && similar
}
