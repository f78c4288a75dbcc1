package pipeline

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"sitewatch/pipeline/publish"
	"strings"
	"time"

	"sitewatch/pipeline/atlas"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/discover"
	"sitewatch/pipeline/metrics"
	"sitewatch/pipeline/months"
	"sitewatch/pipeline/notify"
	"sitewatch/pipeline/secret"
	"sitewatch/pipeline/warehouse"
	"sitewatch/schema"
	"sitewatch/schema/flatten"
)

// Env is what a command reads from and writes to the outside world; tests fill it in.
type Env struct {
	Getenv     func(string) string
	Stdin      io.Reader // `sitewatch query -` reads SQL from it
	Stdout     io.Writer
	Stderr     io.Writer
	Logger     *slog.Logger
	IsTerminal bool // stderr is a terminal: draw a live progress line instead of log lines
	// TermWidth returns the terminal's width in columns (nil or <= 0: 80).
	TermWidth func() int
	// Metrics, when set, records runs for Prometheus (schedule --listen, run --metrics-file).
	Metrics *metrics.Recorder
	// OnProgress, when set, is told the run's progress about once a second and at the end
	// (the live status file and metrics are fed from it).
	OnProgress func(Progress, atlas.Stats)
	Now        func() time.Time
	// ProgressEvery is the interval of progress log lines when not on a terminal.
	ProgressEvery time.Duration
	// Lease, when set, is taken before a run's first credit (lease.go).
	Lease Lease
	// AnswerLog, when set, writes what a run commits to the bucket while it holds the lease
	// (answerlog_hook.go).
	AnswerLog AnswerLog
	// Sync, when set, pulls the bucket's newer months into the warehouse once the lease is
	// held, before the run plans (bucketsync_hook.go).
	Sync BucketSync
	// AfterPublish are the formats a run's publish writes after the Hive layout (the wiring
	// passes the Iceberg adapter's); nil: none.
	AfterPublish []publish.MonthHook
	// PublishBound bounds the upload a run makes of the month it completed (0:
	// AutoPublishBound); tests shorten it.
	PublishBound time.Duration
}

// RunOptions are the flags of `sitewatch run`.
type RunOptions struct {
	// Snapshot is the month the caller expects the API to serve (YYYY-MM); "" takes whatever
	// month the API serves now. When the API serves another month the run stores nothing and
	// fails with a *MonthMismatchError.
	Snapshot string
	Refresh  bool
	// GrowWatchlist lets a complete month grow the watchlist per the config's discover: block
	// (grow.go); `schedule` sets it.
	GrowWatchlist bool
}

// Run statuses recorded in the runs table.
const (
	StatusRunning        = "running"
	StatusComplete       = "complete"
	StatusUpToDate       = "up_to_date"
	StatusStoppedCredits = "stopped_credits"
	StatusUnauthorized   = "unauthorized"
	StatusFailed         = "failed"
	StatusInterrupted    = "interrupted"
	StatusMonthMismatch  = "month_mismatch"
	StatusMonthTurned    = "month_turned"
	StatusAbandoned      = "abandoned" // set by the warehouse for a run whose process died
)

// ErrIncomplete reports a run that attempted everything but left domains unloaded.
var ErrIncomplete = errors.New("snapshot incomplete")

// ErrNothingToFetch reports a watchlist with no domain that can be sent.
var ErrNothingToFetch = errors.New("no watchlist entry is a host name that can be sent")

// MonthMismatchError is `run --snapshot M` against an API that serves another month: the
// API serves only its current month, so M cannot be fetched. Nothing was stored.
type MonthMismatchError struct {
	Want, Served string
}

func (e *MonthMismatchError) Error() string {
	return fmt.Sprintf("the API serves %s, not %s: nothing was stored under %s (past months cannot be fetched; the API serves only its current month); run without --snapshot to load %s",
		e.Served, e.Want, e.Want, e.Served)
}

// MonthTurnedError reports that the API moved to a new month during the run: answers were
// stored under their own months, From stays incomplete, and a rerun completes To.
type MonthTurnedError struct {
	From, To string
}

func (e *MonthTurnedError) Error() string {
	return fmt.Sprintf("the API turned from %s to %s during the run: answers are stored under their own months, %s stays incomplete; rerun `sitewatch run` to complete %s",
		e.From, e.To, e.From, e.To)
}

// Summary is what one run did.
type Summary struct {
	RunID            string
	Snapshot         string // the month the API's data is for ("" when no answer told it)
	Status           string
	DomainsTotal     int
	DomainsLoaded    int
	DomainsRejected  int // by the API (400), in this snapshot
	Requests         int
	RateLimited      int
	CreditsSpent     int
	CreditsRemaining int64 // -1 unknown
	Duration         time.Duration
	Watchlist        *config.Watchlist
	// CompleteSince is when Snapshot was first complete, for an up-to-date run.
	CompleteSince time.Time
	// TurnedTo is the month the API moved to during the run ("" if it did not),
	// TurnedLoaded how many domains of it are loaded, and TurnedAnswers how many of its
	// answers are stored (paid, kept: a domain is loaded only with both of its answers).
	TurnedTo      string
	TurnedLoaded  int
	TurnedAnswers int
	// Published says what the run uploaded to publish.url; PublishError why it could not.
	Published, PublishError string
	APIRejections           map[string]string // domain -> code
	Failures                []warehouse.FetchError
	// Sources is what each credit source paid, in spend order (spend.go).
	Sources []SourceSpend
	// Growth is what discover appended to the watchlist after the month (grow.go), or nil.
	Growth *discover.Growth
}

// runState is one run in progress.
type runState struct {
	cfg        *config.Config
	opts       RunOptions
	env        Env
	store      Store
	client     Fetcher
	wl         *config.Watchlist
	months     *months.Tracker
	plan       *Plan
	sum        *Summary
	stopCause  error // the first storage failure, ErrUpstreamFailing or a month turn: each stops the fetch
	mismatch   *MonthMismatchError
	upToDate   bool
	touched    map[string]bool // months other than the run's that answers were stored under
	probed     []atlas.Request // the probe calls made (not planned again in this run)
	failStreak int
	progress   *progress
	obs        observers
	foldLogs   bool // the run's publish may fold the answer log (it still held the lease)
}

// Run fetches and loads the snapshot of the month the API serves now, resuming where an
// earlier run of that month stopped. Its error says why the snapshot is not complete;
// cmd/sitewatch maps it to the exit codes of the contract.
func Run(ctx context.Context, cfg *config.Config, opts RunOptions, env Env) (*Summary, error) {
	env, secrets := env.WithDefaults().redacting(cfg)
	wl := config.NewWatchlist(cfg)
	if len(wl.Domains) == 0 {
		return nil, &config.Error{Path: cfg.Path, Msg: ErrNothingToFetch.Error() + "; `sitewatch validate` lists why each entry was rejected"}
	}
	notifier := notify.New(cfg.Notify.WebhookURL, env.Logger).Only(cfg.Notify.On)
	signalCtx := ctx
	ctx, client, wh, release, held, err := openRun(ctx, cfg, opts, env, notifier) // runopen.go: probes beside the warehouse
	if err != nil {
		return nil, err
	}
	defer release() // after publishAfter: the lease is held until the run's answers are in the bucket
	r := newRunState(cfg, opts, env, wh, client, wl)
	stopLog := startAnswerLog(signalCtx, env.AnswerLog, r.sum.RunID, wh, held) // answerlog_hook.go
	runErr := r.execute(ctx)
	stopLog()                     // no paid call after this: the last answers go to the bucket before the warehouse closes
	r.foldLogs = ctx.Err() == nil // under the lease: its publish may remove the segments it holds
	r.recordAttention(ctx, wh.DB())
	r.growWatchlist(ctx, wh.DB(), runErr) // grow.go: after the month, before the digest
	notifyOutcome(ctx, notifier, wh.DB(), r.sum, AttentionSettings(cfg), runErr)
	// Closing checkpoints the WAL into the file: a failure (a full disk) leaves the run's work
	// in the WAL, which the next open replays, but this run must not report success.
	if err := wh.Close(); err != nil && runErr == nil {
		r.sum.Status = StatusFailed
		runErr = err // names the file, the failed write and what to do
	}
	// The upload ends on a signal, not on the loss of the lease (ctx): a run whose lease was
	// deleted, replaced or taken over still saves what it paid for, or the next holder, finding
	// none of it in the bucket, pays it all again. Its writes stay conditional (If-Match and
	// GuardRuns), so a new holder's month is never overwritten.
	runErr = r.publishAfter(signalCtx, runErr) // runpublish.go: a complete month, or a restore copy
	r.sum.PublishError = secrets.Redact(r.sum.PublishError)
	return r.sum, secret.Wrap(runErr, secrets)
}

func newRunState(cfg *config.Config, opts RunOptions, env Env, store Store, client Fetcher, wl *config.Watchlist) *runState {
	return &runState{cfg: cfg, opts: opts, env: env, store: store, client: client, wl: wl,
		months: months.NewTracker(), touched: map[string]bool{},
		sum: &Summary{RunID: newRunID(env.Now()), DomainsTotal: len(wl.Domains), Watchlist: wl, CreditsRemaining: -1}}
}

// DryRun returns the plan of a run without calling anything. It reads the warehouse read-only
// (and treats a missing one as empty), so it creates nothing and works while a BI tool reads
// the file. The API's month is known only from its first answer, so the plan is for the
// expected month: --snapshot, else the newest month held (Plan.MonthKnown says which). With a
// bucket (env.Sync) it counts what the bucket holds and the warehouse lacks as held, read
// without writing anything: a run pulls it first (bucketsync_hook.go).
func DryRun(ctx context.Context, cfg *config.Config, opts RunOptions, env Env) (*Plan, error) {
	env = env.WithDefaults()
	domains := config.NewWatchlist(cfg).Domains
	var wh *warehouse.Warehouse
	if _, err := os.Stat(cfg.Warehouse.DuckDB); err == nil {
		if wh, err = warehouse.Open(ctx, warehouse.Options{DuckDBPath: cfg.Warehouse.DuckDB, Logger: env.Logger, ReadOnly: true}); err != nil {
			return nil, err
		}
	}
	month, state, err := expectedState(ctx, wh, opts.Snapshot)
	if wh != nil {
		_ = wh.Close() // read-only; closed before the bucket's peek opens it again
	}
	if err != nil {
		return nil, err
	}
	if env.Sync != nil {
		return withBucket(ctx, env, opts, domains, month, state), nil
	}
	return planOf(month, state, domains, opts.Refresh), nil
}

// expectedPlan is the plan of the month a run expects (--snapshot, else the newest month wh
// holds) given what wh holds; a nil wh holds nothing.
func expectedPlan(ctx context.Context, wh *warehouse.Warehouse, opts RunOptions, domains []string) (*Plan, error) {
	month, state, err := expectedState(ctx, wh, opts.Snapshot)
	if err != nil {
		return nil, err
	}
	return planOf(month, state, domains, opts.Refresh), nil
}

// expectedState is the month a run expects (snapshot, else the newest month wh holds) and what
// wh holds of it; a nil wh holds nothing.
func expectedState(ctx context.Context, wh *warehouse.Warehouse, snapshot string) (string, *warehouse.SnapshotState, error) {
	month := snapshot
	if wh == nil {
		return month, emptyState(), nil
	}
	var err error
	if month == "" {
		if month, err = wh.LatestMonth(ctx); err != nil {
			return "", nil, err
		}
	}
	if month == "" {
		return "", emptyState(), nil
	}
	state, err := wh.State(ctx, month)
	if err != nil {
		return "", nil, fmt.Errorf("read snapshot %s state: %w", month, err)
	}
	return month, state, nil
}

// planOf is the plan of month given state, as a dry run shows it.
func planOf(month string, state *warehouse.SnapshotState, domains []string, refresh bool) *Plan {
	plan := BuildPlan(month, domains, state, refresh)
	if month != "" && !refresh && plan.Complete(state, domains) {
		plan.HeldComplete = true
	}
	plan.FullCredits = len(domains)*len(schema.DomainEndpoints) + 1
	return plan
}

func emptyState() *warehouse.SnapshotState { return warehouse.NewSnapshotState() }

func (e Env) WithDefaults() Env {
	if e.Now == nil {
		e.Now = time.Now
	}
	if e.Logger == nil {
		e.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if e.Stdin == nil {
		e.Stdin = strings.NewReader("")
	}
	if e.Stdout == nil {
		e.Stdout = io.Discard
	}
	if e.Stderr == nil {
		e.Stderr = io.Discard
	}
	if e.ProgressEvery == 0 {
		e.ProgressEvery = 5 * time.Second
	}
	return e
}

// ErrInterrupted is why a run a signal (SIGINT, SIGTERM) stopped ended: the calls in flight
// were stored and a rerun resumes. errors.Is(ErrInterrupted, context.Canceled) holds, so code
// that asks "was the context cancelled" keeps working, but the message is the user's words.
var ErrInterrupted error = interrupted{}

type interrupted struct{}

func (interrupted) Error() string {
	return "interrupted by a signal (SIGINT or SIGTERM): the answers already paid for are stored; the next run resumes"
}
func (interrupted) Is(target error) bool { return target == context.Canceled }

func newRunID(now time.Time) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b)
}

func (r *runState) execute(ctx context.Context) error {
	started := r.env.Now().UTC()
	// Bookkeeping and loads must commit even when ctx is cancelled (SIGINT lets the calls
	// in flight finish and keeps their results).
	keep := context.WithoutCancel(ctx)
	candidate, err := r.candidateMonth(keep)
	if err != nil {
		return err
	}
	if err := r.store.StartRun(keep, r.record(started, nil, StatusRunning, "")); err != nil {
		return fmt.Errorf("record run start: %w", err)
	}
	r.progress = newProgress(r.env, r.client, len(r.wl.Domains)*len(schema.DomainEndpoints)+1)
	r.progress.onReport = r.observeProgress
	r.startObserving(started, candidate)
	stopProgress := r.progress.start(ctx)
	// A signal (or the loss of the bucket lease) stops new calls; the calls in flight finish
	// and their results are stored, so no answered (charged) call is thrown away.
	stopOnSignal := context.AfterFunc(ctx, func() {
		r.client.Stop(stopReason(ctx)) // lease.go
		r.progress.stop()
	})
	stopErr := r.fetch(keep, candidate)
	stopOnSignal()
	stopProgress()
	if r.stopCause != nil {
		stopErr = r.stopCause // the cause of the stop, even if a signal or a 402 came too
	}
	runErr := r.finish(keep, stopErr)
	finished := r.env.Now().UTC()
	r.sum.Duration = finished.Sub(started)
	msg := ""
	if runErr != nil {
		msg = runErr.Error()
	}
	if err := r.store.FinishRun(keep, r.record(started, &finished, r.sum.Status, msg)); err != nil && runErr == nil {
		runErr = fmt.Errorf("record run end: %w", err)
	}
	if r.sum.Snapshot != "" && r.mismatch == nil {
		// The runs table's Parquet now shows this run finished, not running.
		if err := r.store.ExportRunHealth(keep, r.sum.Snapshot); err != nil {
			r.env.Logger.Warn("could not export the run-health tables to Parquet", "snapshot", r.sum.Snapshot, "err", err)
		}
	}
	r.finishObserving(finished, msg)
	return runErr
}

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
	handle := func(res atlas.Result) {
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
func (r *runState) fetchPlan(ctx context.Context, handle func(atlas.Result)) error {
	calls := r.plan.calls
	if r.countriesAlone() {
		if err := r.client.FetchAll(ctx, r.plan.requests(calls[:1]), handle); err != nil {
			return err
		}
		calls = calls[1:]
	}
	return r.fetchCalls(ctx, nil, calls, handle)
}

// candidateState is what the warehouse holds of candidate, nothing when there is none.
func (r *runState) candidateState(ctx context.Context, candidate string) (*warehouse.SnapshotState, error) {
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
func (r *runState) probe(ctx context.Context, candidate string, state *warehouse.SnapshotState) error {
	lacking, held := probeOrder(r.wl.Domains, state)
	if len(lacking) == 0 {
		if trusted, err := r.trustCandidate(ctx, candidate, state); err != nil || trusted {
			return err
		}
		lacking = held[:1] // all held: one answer tells whether the month is still served
	}
	var rejected []atlas.Result // 400s answered before the month was known: filed once it is
	fellBack := false
	for i := 0; i < len(lacking); i++ {
		answer, err := r.probeOne(ctx, lacking[i])
		switch {
		case answer == nil || answer.Err == nil:
		case isRejection(answer.Err) && r.monthOrExpected() == "":
			rejected = append(rejected, *answer)
		default:
			r.handleFailure(ctx, *answer) // a stop's own answer too: its credit is on the ledger
		}
		if err != nil {
			return err
		}
		if answer != nil && answer.Err == nil {
			err := r.decide(ctx, *answer)
			r.fileRejections(ctx, rejected)
			return err
		}
		if r.stopCause != nil {
			return r.stopCause
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
func (r *runState) probeOne(ctx context.Context, domain string) (*atlas.Result, error) {
	req := atlas.Request{Endpoint: schema.EndpointOverview, Domain: domain}
	r.probed = append(r.probed, req)
	var answer *atlas.Result
	err := r.client.FetchAll(ctx, []atlas.Request{req}, func(res atlas.Result) {
		r.progress.finished(res)
		answer = &res
	})
	return answer, err
}

// fileRejections records the probe's 400s now that an answer named the month (if none did,
// they are only logged: no month can hold them).
func (r *runState) fileRejections(ctx context.Context, rejected []atlas.Result) {
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
func (r *runState) trustCandidate(ctx context.Context, candidate string, state *warehouse.SnapshotState) (bool, error) {
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
	r.sum.Snapshot = candidate
	return newest, true, nil
}

// probeOrder splits the domains into those the candidate month lacks the overview of (probed
// first: their answer is wanted anyway) and those it holds. When lacking domains exist but all
// fail, no held domain is probed: its credit would buy data already held. Domains the API
// rejected come last among the held: their 400 names no month, so a complete month probed
// there first was never found up to date (every run failed, exit 1).
func probeOrder(domains []string, state *warehouse.SnapshotState) (lacking, held []string) {
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
func (r *runState) decide(ctx context.Context, res atlas.Result) error {
	month := r.months.Overview(res.Domain, overviewOf(res))
	if month == "" {
		r.recordCharge(ctx, res, r.monthOrExpected(), OutcomeMonthUnknown) // paid, not stored: on the ledger all the same
		r.recordFailure(ctx, res.Request, 200, CodeMalformedBody, errors.New("the answer names no data month (traffic.period and meta.snapshot_date missing or invalid)"))
		return fmt.Errorf("%w: the API's first answer (%s) names no data month", ErrIncomplete, res.Domain)
	}
	r.sum.Snapshot = month
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

// recordCharge puts a charged answer that is not stored on the run_calls ledger, so the
// run's spend is exact even if its process dies before the end.
func (r *runState) recordCharge(ctx context.Context, res atlas.Result, month, outcome string) {
	credits := res.Charged
	if credits == 0 { // month "" (no answer told it yet) is kept: the credit was spent all the same
		return
	}
	c := warehouse.Charge{RunID: r.sum.RunID, SnapshotMonth: month, Domain: res.Domain, Endpoint: res.Endpoint,
		Credits: credits, FetchedAt: res.FetchedAt, Outcome: outcome, Source: res.Source}
	if err := r.store.RecordCharge(ctx, c); err != nil {
		r.fail(fmt.Errorf("record the credit of %s %s: %w", res.Endpoint, warehouse.DisplayDomain(res.Domain), err))
	}
}

// decideMonth checks the API's month against --snapshot and the warehouse: another month
// than --snapshot is a mismatch, a month held complete is up to date; either stores nothing.
func (r *runState) decideMonth(ctx context.Context, month string) error {
	if r.opts.Snapshot != "" && month != r.opts.Snapshot {
		r.mismatch = &MonthMismatchError{Want: r.opts.Snapshot, Served: month}
		r.sum.Snapshot = r.opts.Snapshot
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
			r.sum.CompleteSince = since
		}
	}
	return nil
}

// overviewOf returns the decoded site-overview of a successful answer (the client decodes
// each body once).
func overviewOf(res atlas.Result) *schema.SiteOverview {
	if res.Overview == nil {
		return &schema.SiteOverview{}
	}
	return res.Overview
}

// monthOf returns the month an answer belongs to, and notes a turn of the API's month.
func (r *runState) monthOf(res atlas.Result) string {
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
	if r.sum.TurnedTo == "" {
		r.sum.TurnedTo = to
		r.env.Logger.Warn("the API turned to a new month during the run", "from", r.months.Month(), "to", to)
		r.fail(&MonthTurnedError{From: r.months.Month(), To: to})
	}
}

// handle lands one result: a body is stored (and its domain loaded when complete), a failure
// is recorded in fetch_errors. A storage failure stops the run.
func (r *runState) handle(ctx context.Context, res atlas.Result) {
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
	raw := warehouse.Raw{Endpoint: res.Endpoint, Domain: res.Domain, Body: res.Body, FetchedAt: res.FetchedAt,
		RunID: r.sum.RunID, Credits: res.Charged, Refresh: r.opts.Refresh, Source: res.Source,
		Overview: res.Overview, Similar: res.Similar, Countries: res.Countries}
	err := r.store.Store(ctx, month, raw)
	switch {
	case err == nil:
		r.failStreak = 0
	case isBodyError(err):
		// The body cannot be loaded (a malformed date, say): this domain's problem, not the
		// warehouse's. A pair that decodes is kept raw (*warehouse.UnloadableError), so no
		// rerun pays for the same body again.
		req := res.Request
		req.Endpoint = blamedEndpoint(err, req.Endpoint)
		r.recordFailure(ctx, req, 200, CodeMalformedBody, err)
	default:
		r.fail(fmt.Errorf("store %s %s: %w", res.Endpoint, warehouse.DisplayDomain(res.Domain), err))
	}
}

// handleFailure records a call that failed after its retries, unless the run's own stop
// ended it (its status says that).
func (r *runState) handleFailure(ctx context.Context, res atlas.Result) {
	if atlas.IsStop(res.Err) || errors.Is(res.Err, context.Canceled) {
		// The answer that stops the run (a v1 body, a junk balance) may have been charged.
		r.recordCharge(ctx, res, r.monthOrExpected(), warehouse.OutcomeRefused)
		return
	}
	status, code := 0, ""
	var ae *atlas.Error
	if errors.As(res.Err, &ae) {
		status, code = ae.Status, ae.Code
	}
	// A charged body the client refused (drift, legacy v1, secret in body) is on the ledger.
	r.recordCharge(ctx, res, r.monthOrExpected(), warehouse.OutcomeRefused)
	r.recordFailure(ctx, res.Request, status, code, res.Err)
}

// monthOrExpected is the run's month, or before the first answer the month expected.
func (r *runState) monthOrExpected() string {
	if r.months.Month() != "" {
		return r.months.Month()
	}
	return r.opts.Snapshot
}

// CodeMalformedBody is the fetch_errors code of a 200 body that could not be loaded.
const CodeMalformedBody = "MALFORMED_BODY"

// blamedEndpoint names the endpoint whose body a load error is about: a domain is flattened
// when its second body arrives, which need not be the faulty one.
func blamedEndpoint(err error, arrived schema.Endpoint) schema.Endpoint {
	var de *schema.DecodeError
	var fe *flatten.FlattenError
	switch {
	case errors.As(err, &de):
		return de.Endpoint
	case errors.As(err, &fe):
		return schema.EndpointOverview // every date the flattener parses is in the overview
	}
	return arrived
}

func isBodyError(err error) bool {
	var fe *flatten.FlattenError
	var de *schema.DecodeError
	return errors.As(err, &fe) || errors.As(err, &de)
}

// fail stops the run for err (the first such error wins): no new call starts.
func (r *runState) fail(err error) {
	if r.stopCause != nil {
		return
	}
	r.stopCause = err
	r.env.Logger.Error("stopping the run", "err", err)
	r.client.Stop(err)
}

// recordFailure records one failed call in fetch_errors and in the summary.
func (r *runState) recordFailure(ctx context.Context, req atlas.Request, status int, code string, cause error) {
	month := r.monthOrExpected()
	fe := warehouse.FetchError{
		RunID: r.sum.RunID, SnapshotMonth: month, Domain: req.Domain, Endpoint: req.Endpoint,
		HTTPStatus: status, Code: code, Message: cause.Error(), OccurredAt: r.env.Now().UTC(),
	}
	r.env.Logger.Warn("call failed", "domain", req.Domain, "endpoint", string(req.Endpoint), "status", status, "code", code, "err", cause)
	if month != "" {
		if err := r.store.RecordFetchError(ctx, fe); err != nil {
			r.fail(fmt.Errorf("record the failure of %s %s: %w", req.Endpoint, warehouse.DisplayDomain(req.Domain), err))
		}
	}
	if status == 400 {
		return
	}
	r.sum.Failures = append(r.sum.Failures, fe)
	// Each failed call already went through its retries; many in a row means the upstream is
	// down, and going on would only burn time (and, for broken 200s, credits).
	if r.failStreak++; r.failStreak >= maxFailStreak {
		r.fail(fmt.Errorf("%w: %d calls in a row failed after their retries (last: %v); try again later", ErrUpstreamFailing, r.failStreak, cause))
	}
}

// maxFailStreak is how many calls in a row may fail (after retries) before the run stops.
const maxFailStreak = 10

// ErrUpstreamFailing stops a run whose calls keep failing.
var ErrUpstreamFailing = errors.New("the API keeps failing")

// finish exports Parquet, fills the summary and decides the run's status and error.
func (r *runState) finish(ctx context.Context, stopErr error) error {
	stats := r.client.Stats()
	r.sum.Requests, r.sum.RateLimited = int(stats.Requests), int(stats.RateLimited)
	r.sum.CreditsSpent, r.sum.CreditsRemaining = int(stats.CreditsSpent), stats.CreditsRemaining
	r.sum.Sources = spendBySource(r.client)
	switch {
	case r.mismatch != nil:
		r.sum.Status = StatusMonthMismatch
		r.countOutcome(ctx, r.sum.Snapshot) // the month named stays as it was: say what it holds
		return r.mismatch
	case r.upToDate:
		r.sum.Status = StatusUpToDate
		r.countOutcome(ctx, r.sum.Snapshot)
		// No row is rewritten; only a Parquet tree left behind by a run killed before its
		// export is completed (0 credits).
		if r.store.ParquetMissing(r.sum.Snapshot) {
			if err := r.store.ExportParquet(ctx, r.sum.Snapshot); err != nil {
				r.sum.Status = StatusFailed
				return fmt.Errorf("export the missing Parquet of %s to %s: %w", r.sum.Snapshot, r.cfg.Warehouse.Parquet, err)
			}
		}
		return nil
	case r.months.Month() == "":
		r.sum.Status = statusOf(stopErr)
		if stopErr == nil {
			stopErr = fmt.Errorf("%w: no answer told the API's month", ErrIncomplete)
			r.sum.Status = StatusFailed
		}
		return stopErr
	}
	r.env.Logger.Debug("commit the last answers")
	if err := r.store.Flush(ctx); err != nil {
		r.sum.Status = StatusFailed
		r.countOutcome(ctx, r.months.Month()) // what earlier commits loaded stays loaded: the summary says so
		return fmt.Errorf("commit the run's last answers to %s: %w", r.cfg.Warehouse.DuckDB, err)
	}
	r.releaseLoading()
	out, err := r.store.Outcome(ctx, r.months.Month(), r.wl.Domains)
	if err != nil {
		r.sum.Status = StatusFailed
		r.countOutcome(ctx, r.months.Month()) // what earlier commits loaded stays loaded: the summary says so
		return fmt.Errorf("read snapshot %s state: %w", r.months.Month(), err)
	}
	r.countLoaded(out)
	r.env.Logger.Debug("run the quality checks", "snapshot", r.months.Month())
	// Quality checks are data about the data: a failure to run them never fails the load.
	if _, err := r.store.RunQualityChecks(ctx, r.months.Month()); err != nil {
		r.env.Logger.Warn("quality checks could not run", "snapshot", r.months.Month(), "err", err)
	}
	r.env.Logger.Debug("export Parquet")
	if err := r.export(ctx, out.AnyStored); err != nil {
		r.sum.Status = StatusFailed
		return err
	}
	r.sum.Status = statusOf(stopErr)
	if stopErr != nil {
		return stopErr
	}
	if n := out.Unloadable; n > 0 {
		r.sum.Status = StatusFailed
		return fmt.Errorf("%w: %d domains hold responses that cannot be loaded (fetch_errors code %s); a rerun will not pay for them again: "+
			"`sitewatch run --refresh` refetches them, `sitewatch rebuild` loads them after an upgrade", ErrIncomplete, n, CodeMalformedBody)
	}
	if missing := r.sum.DomainsTotal - r.sum.DomainsLoaded - r.sum.DomainsRejected; missing > 0 || !out.CountriesLoaded {
		r.sum.Status = StatusFailed
		return fmt.Errorf("%w: %d of %d domains not loaded (see fetch_errors); rerun `sitewatch run` to fetch only what is missing",
			ErrIncomplete, missing, r.sum.DomainsTotal)
	}
	return nil
}

// releaseLoading hands back to the kernel, before the month's checks and export (DuckDB's
// peak), what only the fetch and the load needed: the plan's calls and the warehouse's pair
// index, each an entry per domain. The run's outcome is then counted without a map per
// domain (Store.Outcome): at a million domains the snapshot state read here instead added
// ~280 MB to the run's peak.
func (r *runState) releaseLoading() {
	if r.plan != nil {
		r.plan.release()
	}
	r.store.ReleaseLoading()
	debug.FreeOSMemory()
}

// export writes the Parquet of every month this run stored answers under (the run's month
// when stored says it holds any answer).
func (r *runState) export(ctx context.Context, stored bool) error {
	months := []string{}
	if stored {
		months = append(months, r.months.Month())
	}
	for m := range r.touched {
		months = append(months, m)
	}
	for _, m := range months {
		if err := r.store.ExportParquet(ctx, m); err != nil {
			return fmt.Errorf("export Parquet of %s to %s: %w (`sitewatch rebuild --snapshot %s` re-exports)", m, r.cfg.Warehouse.Parquet, err, m)
		}
	}
	if r.sum.TurnedTo != "" {
		if st, err := r.store.State(ctx, r.sum.TurnedTo); err == nil {
			r.sum.TurnedLoaded, r.sum.TurnedAnswers = st.LoadedCount(), storedAnswers(st)
		}
	}
	return nil
}

// countOutcome fills the loaded and rejected counts of month from the store.
func (r *runState) countOutcome(ctx context.Context, month string) {
	if out, err := r.store.Outcome(ctx, month, r.wl.Domains); err == nil {
		r.countLoaded(out)
	}
}

func (r *runState) countLoaded(out *warehouse.Outcome) {
	r.sum.APIRejections = out.Rejected
	r.sum.DomainsLoaded, r.sum.DomainsRejected = out.Loaded, len(out.Rejected)
}

// statusOf maps the client's stop reason to a run status.
func statusOf(stopErr error) string {
	var turned *MonthTurnedError
	switch {
	case stopErr == nil:
		return StatusComplete
	case errors.As(stopErr, &turned):
		return StatusMonthTurned
	case IsCreditStop(stopErr):
		return StatusStoppedCredits
	case errors.Is(stopErr, atlas.ErrUnauthorized):
		return StatusUnauthorized
	case errors.Is(stopErr, context.Canceled):
		return StatusInterrupted
	default:
		return StatusFailed
	}
}

// IsCreditStop says whether err stops a run (or a check) for credits: exit 3.
func IsCreditStop(err error) bool {
	return errors.Is(err, atlas.ErrOutOfCredits) || errors.Is(err, atlas.ErrCreditReserve) || errors.Is(err, atlas.ErrRunBudget) ||
		errors.Is(err, ErrNotEnoughCredits)
}

func (r *runState) record(started time.Time, finished *time.Time, status, msg string) warehouse.RunRecord {
	rec := warehouse.RunRecord{
		RunID: r.sum.RunID, SnapshotMonth: r.sum.Snapshot, StartedAt: started, FinishedAt: finished, Status: status,
		DomainsTotal: r.sum.DomainsTotal, DomainsLoaded: r.sum.DomainsLoaded, DomainsRejected: r.sum.DomainsRejected,
		Requests: r.sum.Requests, CreditsSpent: r.sum.CreditsSpent, RateLimited: r.sum.RateLimited, Message: msg,
		CreditsBySource: r.sum.creditsBySource(),
	}
	if r.sum.CreditsRemaining >= 0 {
		left := r.sum.CreditsRemaining
		rec.CreditsRemaining = &left
	}
	return rec
}

func clientConfig(cfg *config.Config, creds config.Credentials, logger *slog.Logger) atlas.Config {
	return atlas.Config{
		BaseURL:           cfg.API.BaseURL,
		Mode:              atlas.Mode(cfg.API.Mode),
		APIKey:            creds.APIKey,
		MarketplaceHost:   cfg.API.MarketplaceHost,
		MarketplaceKey:    creds.MarketplaceKey,
		RateLimit:         cfg.API.RateLimit,
		MinCredits:        cfg.API.MinCredits,
		MaxCreditsPerRun:  cfg.API.MaxCreditsPerRun,
		Timeout:           cfg.API.Timeout.Duration,
		AllowInsecureHTTP: cfg.API.AllowInsecureHTTP,
		MaxWastedCredits:  cfg.API.MaxWastedCredits,
		MaxRateLimitWait:  cfg.API.MaxRateLimitWait.Duration,
		Concurrency:       runConcurrency(cfg.API.RateLimit),
		Logger:            logger,
	}
}

// maxRunConcurrency bounds the calls a run keeps in flight (one worker goroutine each, with a
// grown stack and a connection). The client's default, three seconds of calls at the rate
// limit, grew without bound with rate_limit: 10000 meant a worker per planned call, 20,000
// goroutines and 175 MB of stacks at 10,000 domains; 1,024 still left 1,100–1,400 goroutines
// and ~95 MB of Go memory there (docs/warehouse-internals.md, "Memory"). 256 calls in flight
// keep 300 calls/s going at an API latency of 850 ms (the reference limit is 3 calls/s:
// 10 in flight).
const maxRunConcurrency = 256

// runConcurrency is the client's default concurrency for rate calls/s, capped.
func runConcurrency(rate float64) int {
	return min(int(math.Ceil(rate*3))+1, maxRunConcurrency)
}
