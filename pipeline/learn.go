package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"sitewatch/pipeline/model"
	"sitewatch/pipeline/months"
	"sitewatch/schema"
)

// monthState is what a run learns about the API's month and decides from it: the month each
// answer belongs to, a --snapshot mismatch, a month already complete, the other months answers
// were stored under after a turn, and the probe calls made.
type monthState struct {
	months   *months.Tracker
	mismatch *MonthMismatchError
	upToDate bool
	touched  map[string]bool // months other than the run's that answers were stored under
	probed   []model.Request // the probe calls made (not planned again in this run)
	// closer is the domain whose site-overview call closes a bracket opened without a probe
	// (resumeBracket); "" when a probe opened it.
	closer string
	// answeredProbe is the domain whose probe answered (its overview is paid for in this run).
	answeredProbe string
	// unpaidProbes are the domains whose probe the API answered 5xx (never charged): their
	// overview is still lacking and may close a bracket (closingDomains).
	unpaidProbes []string
}

func newMonthState() *monthState {
	return &monthState{months: months.NewTracker(), touched: map[string]bool{}}
}

// candidateState is what the warehouse holds of candidate, nothing when there is none.
func (r *runState) candidateState(ctx context.Context, candidate string) (*model.SnapshotState, error) {
	if candidate == "" {
		return emptyState(), nil
	}
	state, err := r.store.State(ctx, candidate)
	if err != nil {
		return nil, fmt.Errorf("read snapshot %s state: %w", candidate, err)
	}
	return state, nil
}

// candidateMonth is the month the run expects the API to serve: --snapshot, else the newest
// month held (most likely still served while it is incomplete).
func (r *runState) candidateMonth(ctx context.Context) (string, error) {
	if r.opts.Snapshot != "" {
		return r.opts.Snapshot, nil
	}
	return r.store.LatestMonth(ctx)
}

// probe makes site-overview calls one at a time until an answer tells the API's month (a
// domain the API rejects, or a call that fails after its retries, moves on to the next
// domain). It prefers a domain the candidate month still lacks, so the probe's credit buys
// data whenever the API still serves that month. Then it decides: a month other than
// --snapshot stores nothing (mismatch); a month already complete stores nothing (up to
// date); otherwise the probe's answer is stored and the run goes on.
func (r *runState) probe(ctx context.Context, candidate string, state *model.SnapshotState) error {
	lacking, held := probeOrder(r.wl.Domains, state)
	needed := len(lacking) // lacking[:needed] are overviews the month lacks; later ones are held
	if len(lacking) == 0 {
		if trusted, err := r.trustCandidate(ctx, candidate, state); err != nil || trusted {
			return err
		}
		lacking = held[:1] // all held: one answer tells whether the month is still served
	}
	var rejected []model.Result // 400s answered before the month was known: filed once it is
	fellBack := false
	for i := 0; i < len(lacking); i++ {
		answer, err := r.probeOne(ctx, lacking[i])
		switch {
		case answer == nil || answer.Err == nil:
		case isRejection(answer.Err) && r.monthOrExpected() == "":
			rejected = append(rejected, *answer)
		default:
			r.handleFailure(ctx, *answer) // a stop's own answer too: its credit is on the ledger
			if i < needed && uncharged(answer.Err) {
				r.unpaidProbes = append(r.unpaidProbes, lacking[i])
			}
		}
		if err != nil {
			return err
		}
		if answer != nil && answer.Err == nil {
			err := r.decide(ctx, *answer)
			r.fileRejections(ctx, rejected)
			return err
		}
		if r.cause() != nil {
			return r.cause()
		}
		if len(rejected) == len(lacking) && len(held) > 0 && !fellBack {
			// Every domain the month lacks is one the API rejects, which only a month can
			// record: without a held domain's answer (1 credit, as for a complete month) every
			// rerun would ask them again and never complete the month.
			fellBack, lacking = true, append(lacking, held[0])
		}
	}
	r.fileRejections(ctx, rejected)
	return fmt.Errorf("%w: no site-overview answer told the API's month (the domains the snapshot lacks failed; see fetch_errors)", ErrIncomplete)
}

// probeOne makes the site-overview call of domain alone; the answer is nil when the call
// was not made (the fetcher stopped).
func (r *runState) probeOne(ctx context.Context, domain string) (*model.Result, error) {
	req := model.Request{Endpoint: schema.EndpointOverview, Domain: domain}
	r.probed = append(r.probed, req)
	var answer *model.Result
	err := r.client.FetchAll(ctx, []model.Request{req}, func(res model.Result) {
		r.progress.finished(res)
		answer = &res
	})
	if answer != nil && answer.Err == nil {
		r.answeredProbe = domain
	}
	return answer, err
}

// uncharged says whether err is the API's 5xx for a call: never charged (spec: 500, 502 and
// 504 refund or charge nothing), so asking again costs nothing unless it answers. A failure
// without a status (a cut connection, a time-out) may have been charged.
func uncharged(err error) bool {
	var ae *model.Error
	return errors.As(err, &ae) && ae.Status >= 500 && !model.IsStop(err)
}

// fileRejections records the probe's 400s now that an answer named the month (if none did,
// they are only logged: no month can hold them).
func (r *runState) fileRejections(ctx context.Context, rejected []model.Result) {
	for _, res := range rejected {
		r.handleFailure(ctx, res)
	}
}

// dateTrust is how long after its newest site-overview answer a month that lacks only
// country-metadata (which belongs to no month) is taken to be still served without a probe. A
// probe there would be an overview the month already holds: a credit for nothing.
const dateTrust = 24 * time.Hour

// trustCandidate resumes candidate without a probe when it lacks only country-metadata and its
// newest overview answer is younger than dateTrust. A month lacking site-similar answers is
// always probed: those answers carry no date, so only overview answers around them tell their
// month (fetchBracketed).
func (r *runState) trustCandidate(ctx context.Context, candidate string, state *model.SnapshotState) (bool, error) {
	if candidate == "" || r.opts.Refresh || (&Plan{}).Complete(state, r.wl.Domains) ||
		similarOnly(BuildPlan(candidate, r.wl.Domains, state, false)) {
		return false, nil // site-similar answers are stored only between two probes (fetchBracketed)
	}
	newest, trusted, err := r.adoptIfRecent(ctx, candidate)
	if trusted {
		r.env.Logger.Info("resuming the month without a probe: it lacks only calls that carry no date",
			"snapshot", candidate, "newest_overview", newest.Format(time.RFC3339))
	}
	return trusted, err
}

// adoptIfRecent takes candidate as the API's month without a probe when its newest
// site-overview answer is younger than dateTrust (the API still serves it), and returns when
// that answer was fetched.
func (r *runState) adoptIfRecent(ctx context.Context, candidate string) (newest time.Time, trusted bool, err error) {
	newest, err = r.store.NewestOverview(ctx, candidate)
	if err != nil || newest.IsZero() || r.env.Now().Sub(newest) > dateTrust {
		return newest, false, err
	}
	r.months.Trust(candidate)
	r.sum.noteMonth(candidate)
	return newest, true, nil
}

// probeOrder splits the domains into those the candidate month lacks the overview of (probed
// first: their answer is wanted anyway) and those it holds. When lacking domains exist but all
// fail, no held domain is probed: its credit would buy data already held. Domains the API
// rejected come last among the held: their 400 names no month, so a complete month probed
// there first was never found up to date (every run failed, exit 1).
func probeOrder(domains []string, state *model.SnapshotState) (lacking, held []string) {
	out := make([]string, 0, len(domains))
	var rejected []string
	for _, d := range domains {
		_, isRejected := state.Rejected[d]
		switch {
		case state.Stored(d).Has(schema.EndpointOverview) || state.Loaded(d):
			held = append(held, d)
		case isRejected:
			rejected = append(rejected, d)
		default:
			out = append(out, d)
		}
	}
	return out, append(held, rejected...)
}

// decide acts on the probe's answer once its month is known.
func (r *runState) decide(ctx context.Context, res model.Result) error {
	month := r.months.Overview(res.Domain, overviewOf(res))
	if month == "" {
		r.recordCharge(ctx, res, r.monthOrExpected(), OutcomeMonthUnknown) // paid, not stored: on the ledger all the same
		r.recordFailure(ctx, res.Request, 200, CodeMalformedBody, errors.New("the answer names no data month (traffic.period and meta.snapshot_date missing or invalid)"))
		return fmt.Errorf("%w: the API's first answer (%s) names no data month", ErrIncomplete, res.Domain)
	}
	r.sum.noteMonth(month)
	if err := r.decideMonth(ctx, month); err != nil {
		return err
	}
	if r.mismatch != nil || r.upToDate {
		// Its answer is not stored (nothing rewritten), but its credit is on the ledger.
		r.recordCharge(ctx, res, month, "probe")
		return nil
	}
	r.handle(ctx, res)
	return nil
}

// decideMonth checks the API's month against --snapshot and the warehouse: another month
// than --snapshot is a mismatch, a month held complete is up to date; either stores nothing.
func (r *runState) decideMonth(ctx context.Context, month string) error {
	if r.opts.Snapshot != "" && month != r.opts.Snapshot {
		r.mismatch = &MonthMismatchError{Want: r.opts.Snapshot, Served: month}
		r.sum.noteMonth(r.opts.Snapshot)
		return nil
	}
	if r.opts.Refresh {
		return nil
	}
	state, err := r.store.State(ctx, month)
	if err != nil {
		return fmt.Errorf("read snapshot %s state: %w", month, err)
	}
	if r.upToDate = (&Plan{}).Complete(state, r.wl.Domains); r.upToDate {
		if since, ok, err := r.store.MonthCompleteSince(ctx, month); err == nil && ok {
			r.sum.noteCompleteSince(since)
		}
	}
	return nil
}

// overviewOf returns the decoded site-overview of a successful answer (the client decodes
// each body once).
func overviewOf(res model.Result) *schema.SiteOverview {
	if res.Overview == nil {
		return &schema.SiteOverview{}
	}
	return res.Overview
}

// monthOf returns the month an answer belongs to, and notes a turn of the API's month.
func (r *runState) monthOf(res model.Result) string {
	switch res.Endpoint {
	case schema.EndpointOverview:
		month := r.months.Overview(res.Domain, overviewOf(res))
		if month != "" && month != r.months.Month() {
			r.turn(month)
		}
		if month == "" {
			month = r.months.Month()
		}
		return month
	case schema.EndpointSimilar:
		return r.months.Other(res.Domain)
	}
	return r.months.Month()
}

// turn stops the run when the API moves to another month mid-run: the rest of the plan was
// for the old month, which can no longer be fetched.
func (r *runState) turn(to string) {
	if r.sum.noteTurn(to) {
		r.env.Logger.Warn("the API turned to a new month during the run", "from", r.months.Month(), "to", to)
		r.fail(&MonthTurnedError{From: r.months.Month(), To: to})
	}
}

// monthOrExpected is the run's month, or before the first answer the month expected.
func (r *runState) monthOrExpected() string {
	if r.months.Month() != "" {
		return r.months.Month()
	}
	return r.opts.Snapshot
}
