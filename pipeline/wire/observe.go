package wire

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"

	"sitewatch/pipeline"
	"sitewatch/pipeline/changes"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/discover"
	"sitewatch/pipeline/livestatus"
	"sitewatch/pipeline/metrics"
	"sitewatch/pipeline/model"
	"sitewatch/pipeline/notify"
	"sitewatch/pipeline/textout"
	"sitewatch/pipeline/warehouse"
)

// Watch attaches to each run what watches it from outside and needs an adapter: the
// Prometheus recorder (schedule --listen, run --metrics-file), the live progress file beside
// the warehouse (for `sitewatch status` while the run holds the file), the webhook
// (notify.webhook_url) and, after a complete month, the watchlist's growth (discover:). Its
// Observer method is a pipeline.Env.Observe.
type Watch struct {
	Metrics *metrics.Recorder // nil: no metrics
	// Getenv reads the environment for discover's growth (its marketplace key).
	Getenv func(string) string
}

// Observer is the observer of one run of cfg, logging through logger.
func (w Watch) Observer(cfg *config.Config, logger *slog.Logger) pipeline.Observer {
	return &runWatch{cfg: cfg, logger: logger, metrics: w.Metrics, getenv: w.Getenv,
		notifier: notify.New(cfg.Notify.WebhookURL, logger).Only(cfg.Notify.On)}
}

// runWatch is one run's listeners.
type runWatch struct {
	cfg      *config.Config
	logger   *slog.Logger
	metrics  *metrics.Recorder
	notifier *notify.Notifier
	getenv   func(string) string

	mu     sync.Mutex
	keeper *livestatus.Keeper
}

// Event feeds ev to the listener it concerns.
func (w *runWatch) Event(ctx context.Context, ev pipeline.Event) {
	switch ev := ev.(type) {
	case pipeline.RunsAbandoned:
		notifyAbandoned(ctx, w.notifier, ev.Runs)
	case pipeline.RunStarted:
		w.started(ev)
	case pipeline.ProgressReport:
		w.metrics.Progress(metricsProgress(ev))
	case pipeline.PhaseChanged:
		w.metrics.Phase(ev.Name, ev.Bound)
	case pipeline.RunFinished:
		w.finished(ev)
	case pipeline.RunSettled:
		w.settled(ctx, ev)
	}
}

// started tells the recorder a run began and starts the progress file.
func (w *runWatch) started(ev pipeline.RunStarted) {
	w.metrics.RunStarted(ev.Month, ev.Domains, ev.At)
	k := livestatus.Start(livestatus.Path(w.cfg.Warehouse.DuckDB), 0, func() livestatus.Status {
		return liveStatus(ev, ev.Now())
	}, w.logger)
	w.mu.Lock()
	w.keeper = k
	w.mu.Unlock()
}

// liveStatus is the progress file's content for the run ev started, at rep.
func liveStatus(ev pipeline.RunStarted, rep pipeline.ProgressReport) livestatus.Status {
	st := livestatus.Status{RunID: ev.RunID, Month: rep.Month, Loaded: rep.Loaded, Total: ev.Domains,
		Requests: rep.Stats.Requests, RateLimited: rep.Stats.RateLimited, CreditsSpent: rep.Stats.CreditsSpent,
		Rate: rep.RatePerSecond, StartedAt: ev.At}
	if rep.Stats.CreditsRemaining >= 0 {
		left := rep.Stats.CreditsRemaining
		st.CreditsLeft = &left
	}
	if rep.ETA >= 0 {
		eta := rep.ETA.Seconds()
		st.ETASeconds = &eta
	}
	return st
}

// metricsProgress is a progress report as the recorder takes it.
func metricsProgress(rep pipeline.ProgressReport) metrics.Progress {
	var srcs []metrics.SourceCredits
	for _, s := range rep.Sources {
		srcs = append(srcs, metrics.SourceCredits{Name: s.Name, Spent: s.Credits, Left: s.Remaining})
	}
	st := rep.Stats
	return metrics.Progress{Month: rep.Month, Loaded: rep.Loaded, Requests: st.ByStatus, RateLimited: st.RateLimited,
		Retries: st.Retries, CreditsSpent: st.CreditsSpent, CreditsLeft: st.CreditsRemaining, Sources: srcs}
}

// finished marks the progress file final and tells the recorder the outcome.
func (w *runWatch) finished(ev pipeline.RunFinished) {
	w.mu.Lock()
	k := w.keeper
	w.mu.Unlock()
	sum := ev.Summary
	if err := k.Finish(sum.Status, ev.Message); err != nil {
		w.logger.Warn("could not finalize the progress file", "err", err)
	}
	if ev.MonthLoaded { // a mismatch loaded nothing of the month it names
		w.metrics.MonthLoaded(sum.Snapshot, sum.DomainsLoaded)
	}
	w.metrics.RunFinished(sum.Status, ev.At)
	if monthComplete(sum) {
		if err := w.metrics.MonthComplete(sum.Snapshot, ev.At); err != nil {
			w.logger.Warn("could not record the complete month in the metrics", "err", err)
		}
	}
}

func monthComplete(sum *pipeline.Summary) bool {
	return sum.Status == pipeline.StatusComplete || sum.Status == pipeline.StatusUpToDate
}

// settled runs the after-run effects that read the run's warehouse, in order: the
// needs-attention metrics, the watchlist's growth (after the month, before the digest, which
// names what was added), the webhook.
func (w *runWatch) settled(ctx context.Context, ev pipeline.RunSettled) {
	db := dbOf(ev.Store)
	w.recordAttention(ctx, db, ev.Summary)
	var growth *discover.Growth
	if ev.Grow {
		growth = w.growWatchlist(ctx, db, ev)
	}
	notifyOutcome(ctx, w.notifier, db, ev.Summary, AttentionSettings(w.cfg), growth, ev.Err)
}

// dbOf is the database of a warehouse pipeline/wire opened (nil for another Store: the effects
// that read it then do nothing).
func dbOf(store pipeline.Warehouse) *sql.DB {
	if wh, ok := store.(runWarehouse); ok {
		return wh.DB()
	}
	return nil
}

// AttentionSettings are the config's knobs of the needs-attention ranking (attention.*).
func AttentionSettings(cfg *config.Config) changes.AttentionSettings {
	return changes.AttentionSettings{MinVisits: cfg.Attention.MinVisits, Threshold: cfg.Attention.Threshold}
}

// ReaderAttentionSettings are AttentionSettings for a reader of wh: StoredCurrent set when
// the file's lists mark says the stored lists follow every row (warehouse.StoredListsCurrent).
func ReaderAttentionSettings(cfg *config.Config, wh *warehouse.Warehouse) changes.AttentionSettings {
	s := AttentionSettings(cfg)
	s.StoredCurrent = wh.StoredListsCurrent(s.MinVisits, s.Threshold)
	return s
}

// DiscoverFloors are the size floors whose worth-tracking list a writer of cfg's warehouse
// stores besides the default: the config's discover.min_visits.
func DiscoverFloors(cfg *config.Config) []int64 {
	return []int64{discover.Query{MinVisits: cfg.Discover.MinVisits}.Floor()}
}

// AttentionLists are the settings whose needs-attention lists a writer of cfg's warehouse
// stores besides the defaults: the config's, so every surface reads its list stored.
func AttentionLists(cfg *config.Config) []warehouse.AttentionListSettings {
	return []warehouse.AttentionListSettings{{MinVisits: cfg.Attention.MinVisits, Threshold: cfg.Attention.Threshold}}
}

// recordAttention shows the needs-attention list of a month the run left complete in the
// metrics (the same list `changes`, the report and the webhook lead with). A failure to read it
// is logged: metrics never change a run's outcome.
func (w *runWatch) recordAttention(ctx context.Context, db *sql.DB, sum *pipeline.Summary) {
	if w.metrics == nil || db == nil || !monthComplete(sum) {
		return
	}
	a, err := changes.ReadAttention(ctx, db, sum.Snapshot, AttentionSettings(w.cfg))
	if err != nil {
		w.logger.Warn("could not read the needs-attention list for the metrics", "err", err)
		return
	}
	w.metrics.NeedsAttention(MetricsAttention(a))
}

// MetricsAttention is a as /metrics shows it.
func MetricsAttention(a *changes.Attention) metrics.Attention {
	m := metrics.Attention{Month: a.Month, Domains: len(a.Domains), ByKind: a.ByKind(), BySeverity: a.BySeverity()}
	for _, d := range a.Domains {
		m.Lead = append(m.Lead, metrics.AttentionLead{Domain: d.Domain, Kind: d.Reasons[0].Kind, Severity: d.Severity(), Rank: d.Rank})
	}
	return m
}

// growWatchlist grows the watchlist after a complete month when the caller asked for it
// (`schedule`, RunOptions.GrowWatchlist) and the config's discover: block is on: the month's
// best candidates (pipeline/discover), within the budget, appended to the config file. It runs
// once the run has loaded everything and before its digest is posted, so the run's own plan
// never changes and the digest names what was added; the next month's run fetches them. A
// failure is logged, never the run's failure.
func (w *runWatch) growWatchlist(ctx context.Context, db *sql.DB, ev pipeline.RunSettled) *discover.Growth {
	d, sum := w.cfg.Discover, ev.Summary
	if !d.On() || ev.Err != nil || sum.Snapshot == "" || !monthComplete(sum) || db == nil {
		return nil
	}
	g, err := discover.Grow(ctx, db, discover.GrowOptions{
		ConfigPath: w.cfg.Path, Watchlist: sum.Watchlist.Domains, Month: sum.Snapshot,
		AddPerMonth: int(d.AddPerMonth), MonthlyBudget: d.MonthlyBudget, MinVisits: d.MinVisits, Now: ev.At, Getenv: w.getenv,
	})
	if err != nil {
		w.logger.Error("discover: could not grow the watchlist; the next complete month tries again", "err", err)
		return nil
	}
	if len(g.Added) == 0 {
		w.logger.Info("discover: watchlist not grown", "snapshot", g.Month, "why", g.Why)
		return nil
	}
	w.logger.Info("discover: watchlist grown; the next month's run fetches them", "snapshot", g.Month,
		"added", g.Added, "credits_a_month", g.Monthly, "config", w.cfg.Path)
	return g
}

// notifyOutcome posts the run's outcome to the webhook (bounded by the notifier's timeout;
// a failing webhook is logged, never the run's failure). A complete month leads with what
// changed since the previous one.
func notifyOutcome(ctx context.Context, n *notify.Notifier, db *sql.DB, sum *pipeline.Summary, attention changes.AttentionSettings, growth *discover.Growth, runErr error) {
	if n == nil {
		return
	}
	ev := notify.Event{RunID: sum.RunID, Month: sum.Snapshot, Outcome: sum.Status, Loaded: sum.DomainsLoaded,
		Total: sum.DomainsTotal, CreditsSpent: int64(sum.CreditsSpent), CreditsLeft: sum.CreditsRemaining, Duration: sum.Duration, PaidBy: PaidBy(sum.Sources)}
	ev.Host, _ = os.Hostname()
	if runErr != nil {
		ev.FirstError = runErr.Error()
	}
	describeMonth(ctx, db, &ev)
	ev.Skipped = sum.Watchlist.SkippedLine()
	if growth != nil {
		ev.Added, ev.AddedMonthly = growth.Added, growth.Monthly
	}
	if sum.Status == pipeline.StatusComplete && db != nil {
		if d, err := changes.BuildWith(ctx, db, sum.Snapshot, attention); err == nil {
			if d.Attention != nil {
				ev.Attention = d.Attention.Text(changes.AttentionLeadLines)
				ev.AttentionRows, ev.AttentionTotal = attentionRows(d.Attention)
			}
			ev.Changes = d.Headline()
		}
	}
	_ = n.Send(context.WithoutCancel(ctx), ev) // Send logs a failure; it never changes the run's outcome
}

// notifyAbandoned posts the runs the warehouse found dead at open.
func notifyAbandoned(ctx context.Context, n *notify.Notifier, runs []model.RunRecord) {
	if n == nil {
		return
	}
	for _, a := range runs {
		ev := notify.Event{RunID: a.RunID, Month: a.SnapshotMonth, Outcome: notify.OutcomeAbandoned, Loaded: a.DomainsLoaded,
			Total: a.DomainsTotal, CreditsSpent: int64(a.CreditsSpent), CreditsLeft: -1, FirstError: "the run's process died (killed or power loss)"}
		if a.FinishedAt != nil {
			ev.Duration = a.FinishedAt.Sub(a.StartedAt)
		}
		_ = n.Send(context.WithoutCancel(ctx), ev) // Send logs a failure
	}
}

// attentionRows is a's rows as the webhook sends them (all of them: the payload bounds them)
// and their number.
func attentionRows(a *changes.Attention) ([]notify.AttentionRow, int) {
	rows := []notify.AttentionRow{} // a quiet month: [], not null
	for _, d := range a.Domains {
		for _, r := range d.Reasons {
			rows = append(rows, notify.AttentionRow{Domain: d.Domain, Kind: r.Kind, Metric: r.Metric, Channel: r.Channel,
				Value: r.Value, Previous: r.Previous, Z: r.Z, Severity: r.Severity, Reason: r.Text})
		}
	}
	return rows, len(rows)
}

// describeMonth gives ev, an outcome that did not complete a month, the month and what it holds
// now. A run that failed before any answer named the month (a refused connection, a 404 from
// a wrong base URL) reports the newest month held, with its own loaded count: "failed … 0/6
// domains" without a month would read as data lost although that month may be complete.
func describeMonth(ctx context.Context, db *sql.DB, ev *notify.Event) {
	if db == nil || ev.Outcome == notify.OutcomeComplete || ev.Outcome == notify.OutcomeUpToDate {
		return
	}
	if ev.Month == "" {
		var newest sql.NullString
		if err := db.QueryRowContext(ctx, `SELECT max(snapshot_month) FROM sites`).Scan(&newest); err != nil || !newest.Valid {
			ev.MonthState = "no month loaded yet"
			return
		}
		ev.Month = newest.String
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sites WHERE snapshot_month = ?`, ev.Month).Scan(&ev.Loaded); err != nil {
			return
		}
	}
	var complete bool
	if err := db.QueryRowContext(ctx, `SELECT count(*) > 0 FROM complete_months WHERE snapshot_month = ?`, ev.Month).Scan(&complete); err != nil {
		return
	}
	if complete {
		ev.MonthState = ev.Month + " stays complete"
		return
	}
	ev.MonthState = fmt.Sprintf("%s incomplete: %d of %s loaded", ev.Month, ev.Loaded, textout.Plural(ev.Total, "domain", "domains"))
}

// PaidBy is a run's spend by source in words, e.g. "marketplace 100, direct 201" ("" for fewer
// than two sources): the webhook's paid_by and the run summary's credits line.
func PaidBy(spend []model.SourceSpend) string {
	if len(spend) < 2 {
		return ""
	}
	parts := make([]string, len(spend))
	for i, src := range spend {
		parts[i] = fmt.Sprintf("%s %s", src.Name, textout.Thousands(src.Credits))
	}
	return strings.Join(parts, ", ")
}
