package pipeline

import (
	"context"
	"errors"
	"fmt"

	"sitewatch/pipeline/model"
	"sitewatch/schema"
)

// recordCharge puts a charged answer that is not stored on the run_calls ledger, so the
// run's spend is exact even if its process dies before the end.
func (r *runState) recordCharge(ctx context.Context, res model.Result, month, outcome string) {
	credits := res.Charged
	if credits == 0 { // month "" (no answer told it yet) is kept: the credit was spent all the same
		return
	}
	c := model.Charge{RunID: r.sum.RunID, SnapshotMonth: month, Domain: res.Domain, Endpoint: res.Endpoint,
		Credits: credits, FetchedAt: res.FetchedAt, Outcome: outcome, Source: res.Source}
	if err := r.store.RecordCharge(ctx, c); err != nil {
		r.fail(fmt.Errorf("record the credit of %s %s: %w", res.Endpoint, model.DisplayDomain(res.Domain), err))
	}
}

// handle lands one result: a body is stored (and its domain loaded when complete), a failure
// is recorded in fetch_errors. A storage failure stops the run.
func (r *runState) handle(ctx context.Context, res model.Result) {
	if res.Err != nil {
		r.handleFailure(ctx, res)
		return
	}
	month := r.monthOf(res)
	if month != r.months.Month() {
		r.touched[month] = true
	}
	// Even after a storage failure stopped the run, later answers are still offered to the
	// warehouse: they are paid for, and the failure may have been passing.
	raw := model.Raw{Endpoint: res.Endpoint, Domain: res.Domain, Body: res.Body, FetchedAt: res.FetchedAt,
		RunID: r.sum.RunID, Credits: res.Charged, Refresh: r.opts.Refresh, Source: res.Source,
		Overview: res.Overview, Similar: res.Similar, Countries: res.Countries}
	err := r.store.Store(ctx, month, raw)
	switch {
	case err == nil:
		r.landed()
		r.tell(ctx, CallLanded{Request: res.Request, Month: month, Charged: res.Charged})
	case isBodyError(err):
		// The body cannot be loaded (a malformed date, say): this domain's problem, not the
		// warehouse's. A pair that decodes is kept raw (*warehouse.UnloadableError), so no
		// rerun pays for the same body again.
		req := res.Request
		req.Endpoint = blamedEndpoint(err, req.Endpoint)
		r.recordFailure(ctx, req, 200, CodeMalformedBody, err)
	default:
		r.fail(fmt.Errorf("store %s %s: %w", res.Endpoint, model.DisplayDomain(res.Domain), err))
	}
}

// handleFailure records a call that failed after its retries, unless the run's own stop
// ended it (its status says that).
func (r *runState) handleFailure(ctx context.Context, res model.Result) {
	if model.IsStop(res.Err) || errors.Is(res.Err, context.Canceled) {
		// The answer that stops the run (a v1 body, a junk balance) may have been charged.
		r.recordCharge(ctx, res, r.monthOrExpected(), model.OutcomeRefused)
		return
	}
	status, code := 0, ""
	var ae *model.Error
	if errors.As(res.Err, &ae) {
		status, code = ae.Status, ae.Code
	}
	// A charged body the client refused (drift, legacy v1, secret in body) is on the ledger.
	r.recordCharge(ctx, res, r.monthOrExpected(), model.OutcomeRefused)
	r.recordFailure(ctx, res.Request, status, code, res.Err)
}

// CodeMalformedBody is the fetch_errors code of a 200 body that could not be loaded.
const CodeMalformedBody = "MALFORMED_BODY"

// blamedEndpoint names the endpoint whose body a load error is about: a domain is flattened
// when its second body arrives, which need not be the faulty one.
func blamedEndpoint(err error, arrived schema.Endpoint) schema.Endpoint {
	var de *schema.DecodeError
	switch {
	case errors.As(err, &de):
		return de.Endpoint
	case errors.Is(err, schema.ErrMalformedValue): // schema/flatten's *FlattenError
		return schema.EndpointOverview // every date the flattener parses is in the overview
	}
	return arrived
}

func isBodyError(err error) bool {
	var de *schema.DecodeError
	return errors.Is(err, schema.ErrMalformedValue) || errors.As(err, &de)
}

// recordFailure records one failed call in fetch_errors and in the summary.
func (r *runState) recordFailure(ctx context.Context, req model.Request, status int, code string, cause error) {
	month := r.monthOrExpected()
	fe := model.FetchError{
		RunID: r.sum.RunID, SnapshotMonth: month, Domain: req.Domain, Endpoint: req.Endpoint,
		HTTPStatus: status, Code: code, Message: cause.Error(), OccurredAt: r.env.Now().UTC(),
	}
	r.env.Logger.Warn("call failed", "domain", req.Domain, "endpoint", string(req.Endpoint), "status", status, "code", code, "err", cause)
	r.tell(ctx, CallFailed{Request: req, Status: status, Code: code, Err: cause})
	if month != "" {
		if err := r.store.RecordFetchError(ctx, fe); err != nil {
			r.fail(fmt.Errorf("record the failure of %s %s: %w", req.Endpoint, model.DisplayDomain(req.Domain), err))
		}
	}
	if status == 400 {
		return
	}
	r.sum.noteFailure(fe)
	r.callFailed(cause) // stop.go: many in a row stop the run
}
