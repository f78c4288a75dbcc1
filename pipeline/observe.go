package pipeline

import (
	"context"
	"log/slog"
	"time"

	"sitewatch/pipeline/config"
	"sitewatch/pipeline/model"
	"sitewatch/schema"
)

// Observer watches a run from outside: it is told, in order, what the run does. The core
// draws, posts and records nothing itself; cmd/sitewatch renders the progress line and
// pipeline/wire attaches the metrics, the live status file, the webhook and the watchlist's
// growth (docs/design.md, "Layering"). Event may be called from several of the run's
// goroutines at once (the progress ticker beside the fetch): a listener guards its own state.
// A listener's failure is its own: it logs it and never changes the run's outcome.
type Observer interface {
	Event(ctx context.Context, ev Event)
}

// Event is one thing a run tells its Observer: one of the types below.
type Event interface{ event() }

// RunsAbandoned: the warehouse's open found runs whose process died (they are recorded as
// abandoned); sent before the run starts.
type RunsAbandoned struct{ Runs []model.RunRecord }

// RunStarted: the run recorded its start. Month is the month it expects ("" until an answer
// tells it); Now reads the run's progress at any time until RunFinished (the live status file
// polls it).
type RunStarted struct {
	RunID   string
	Month   string
	Domains int
	At      time.Time
	Now     func() ProgressReport
}

// CallLanded: an answer was stored under Month (its domain is loaded once both are in).
type CallLanded struct {
	Request model.Request
	Month   string
	Charged int64
}

// CallFailed: a call failed after its retries (Status 400: the API rejected the domain; 200:
// a body that cannot be loaded), recorded in fetch_errors.
type CallFailed struct {
	Request model.Request
	Status  int
	Code    string
	Err     error
}

// RunStopping: the run's own rules stopped its fetch (the first cause wins: a storage
// failure, the upstream failing, a month turn, a first answer naming no month), or a signal
// or the loss of the lease did. The calls in flight still land.
type RunStopping struct{ Cause error }

// ProgressReport is the run's progress, about once every Env.ProgressEvery and once at the
// end (Last). Planned is false while only the probe has run: the month and its calls are not
// known yet.
type ProgressReport struct {
	Progress
	Stats   model.Stats
	Sources []SourceSpend // per credit source, with api.sources
	Planned bool
	Last    bool
}

// PhaseChanged: the run entered a phase that may take long without a call (Name "publish",
// bounded by Bound), or left it (Name "").
type PhaseChanged struct {
	Name  string
	Bound time.Duration
}

// RunFinished: the run recorded its end. Summary is the run's, settled; Message its first
// error ("" when none); MonthLoaded says whether Summary.Snapshot is the month the run loaded
// (false when the API served another month than --snapshot asked for).
type RunFinished struct {
	Summary     *Summary
	Message     string
	At          time.Time
	MonthLoaded bool
}

// RunSettled: the run's answers are committed and its answer log stopped; the warehouse is
// still open (Store). The after-run effects listen for it: the needs-attention metrics, the
// watchlist's growth (when Grow: `schedule`), the webhook. Err is the run's error.
type RunSettled struct {
	Summary *Summary
	Err     error
	Store   Warehouse
	Grow    bool
	At      time.Time
}

func (RunsAbandoned) event()  {}
func (RunStarted) event()     {}
func (CallLanded) event()     {}
func (CallFailed) event()     {}
func (RunStopping) event()    {}
func (ProgressReport) event() {}
func (PhaseChanged) event()   {}
func (RunFinished) event()    {}
func (RunSettled) event()     {}

// Observers tells each of its observers every event, in order.
type Observers []Observer

// Event tells every observer ev.
func (all Observers) Event(ctx context.Context, ev Event) {
	for _, o := range all {
		o.Event(ctx, ev)
	}
}

// nopObserver is the observer of a run nothing watches.
type nopObserver struct{}

func (nopObserver) Event(context.Context, Event) {}

// observerOf is the run's observer per env.Observe (nothing watches without it).
func observerOf(env Env, cfg *config.Config, logger *slog.Logger) Observer {
	if env.Observe == nil {
		return nopObserver{}
	}
	if o := env.Observe(cfg, logger); o != nil {
		return o
	}
	return nopObserver{}
}

// tell sends ev to the run's observer with the run's context, which a signal or the loss of
// the lease may have ended: a listener that must reach the outside all the same (the webhook)
// detaches from it.
func (r *runState) tell(ctx context.Context, ev Event) {
	if r.obs != nil { // a runState made without newRunState (a test's) has none
		r.obs.Event(ctx, ev)
	}
}

// notifyAbandoned logs and reports the runs the warehouse found dead at open.
func notifyAbandoned(ctx context.Context, obs Observer, runs []model.RunRecord, logger *slog.Logger) {
	for _, a := range runs {
		logger.Warn("a run whose process died was recorded as abandoned", "run_id", a.RunID, "snapshot", a.SnapshotMonth,
			"domains_loaded", a.DomainsLoaded, "credits_spent", a.CreditsSpent)
	}
	if len(runs) > 0 {
		obs.Event(ctx, RunsAbandoned{Runs: runs})
	}
}

// progressNow is the run's progress as a report, for the observer's polls.
func (r *runState) progressNow() ProgressReport {
	return ProgressReport{Progress: r.progress.snapshot(), Stats: r.client.Stats(), Planned: r.progress.planned()}
}

// storedAnswers counts the answers state holds: every stored site-overview and site-similar
// answer, and country-metadata.
func storedAnswers(state *model.SnapshotState) int {
	n := 0
	if state.CountriesLoaded {
		n++
	}
	state.EachStored(func(_ string, eps model.Endpoints) {
		for _, ep := range schema.DomainEndpoints {
			if eps.Has(ep) {
				n++
			}
		}
	})
	return n
}
