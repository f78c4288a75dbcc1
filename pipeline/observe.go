package pipeline

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"time"

	"sitewatch/pipeline/atlas"
	"sitewatch/pipeline/changes"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/livestatus"
	"sitewatch/pipeline/metrics"
	"sitewatch/pipeline/model"
	"sitewatch/pipeline/notify"
	"sitewatch/pipeline/textout"
	"sitewatch/schema"
)

// observers are what watches a run from outside: the live progress file beside the
// warehouse (for `sitewatch status` while the run holds the file), the Prometheus recorder
// (schedule --listen, run --metrics-file) and the webhook.
type observers struct {
	keeper  *livestatus.Keeper
	metrics *metrics.Recorder
}

// startObserving starts the progress file and tells the recorder a run began.
func (r *runState) startObserving(started time.Time, month string) {
	r.obs.metrics = r.env.Metrics
	r.obs.metrics.RunStarted(month, len(r.wl.Domains), started)
	r.obs.keeper = livestatus.Start(livestatus.Path(r.cfg.Warehouse.DuckDB), 0, func() livestatus.Status {
		return r.liveStatus(started)
	}, r.env.Logger)
}

// liveStatus is the progress file's content now.
func (r *runState) liveStatus(started time.Time) livestatus.Status {
	pr := r.progress.snapshot()
	stats := r.client.Stats()
	st := livestatus.Status{RunID: r.sum.RunID, Month: pr.Month, Loaded: pr.Loaded, Total: len(r.wl.Domains),
		Requests: stats.Requests, RateLimited: stats.RateLimited, CreditsSpent: stats.CreditsSpent,
		Rate: pr.RatePerSecond, StartedAt: started}
	if stats.CreditsRemaining >= 0 {
		left := stats.CreditsRemaining
		st.CreditsLeft = &left
	}
	if pr.ETA >= 0 {
		eta := pr.ETA.Seconds()
		st.ETASeconds = &eta
	}
	return st
}

// observeProgress feeds the recorder and Env.OnProgress.
func (r *runState) observeProgress(pr Progress, stats atlas.Stats) {
	r.env.Metrics.Progress(metrics.Progress{Month: pr.Month, Loaded: pr.Loaded, Requests: stats.ByStatus, RateLimited: stats.RateLimited,
		Retries: stats.Retries, CreditsSpent: stats.CreditsSpent, CreditsLeft: stats.CreditsRemaining, Sources: sourceCredits(r.client)})
	if r.env.OnProgress != nil {
		r.env.OnProgress(pr, stats)
	}
}

// finishObserving marks the progress file final and tells the recorder the outcome.
func (r *runState) finishObserving(finished time.Time, msg string) {
	if err := r.obs.keeper.Finish(r.sum.Status, msg); err != nil {
		r.env.Logger.Warn("could not finalize the progress file", "err", err)
	}
	if r.mismatch == nil { // a mismatch loaded nothing of the month it names
		r.obs.metrics.MonthLoaded(r.sum.Snapshot, r.sum.DomainsLoaded)
	}
	r.obs.metrics.RunFinished(r.sum.Status, finished)
	if r.sum.Status == StatusComplete || r.sum.Status == StatusUpToDate {
		if err := r.obs.metrics.MonthComplete(r.sum.Snapshot, finished); err != nil {
			r.env.Logger.Warn("could not record the complete month in the metrics", "err", err)
		}
	}
}

// notifyOutcome posts the run's outcome to the webhook (bounded by the notifier's timeout;
// a failing webhook is logged, never the run's failure). A complete month leads with what
// changed since the previous one.
func notifyOutcome(ctx context.Context, n *notify.Notifier, db *sql.DB, sum *Summary, attention changes.AttentionSettings, runErr error) {
	if n == nil {
		return
	}
	ev := notify.Event{RunID: sum.RunID, Month: sum.Snapshot, Outcome: sum.Status, Loaded: sum.DomainsLoaded,
		Total: sum.DomainsTotal, CreditsSpent: int64(sum.CreditsSpent), CreditsLeft: sum.CreditsRemaining, Duration: sum.Duration, PaidBy: sum.SourcesText()}
	ev.Host, _ = os.Hostname()
	if runErr != nil {
		ev.FirstError = runErr.Error()
	}
	describeMonth(ctx, db, &ev)
	ev.Skipped = sum.Watchlist.SkippedLine()
	growthEvent(&ev, sum) // grow.go
	if sum.Status == StatusComplete {
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

// notifyAbandoned reports runs the warehouse found dead at open.
func notifyAbandoned(ctx context.Context, n *notify.Notifier, runs []model.RunRecord, logger *slog.Logger) {
	for _, a := range runs {
		logger.Warn("a run whose process died was recorded as abandoned", "run_id", a.RunID, "snapshot", a.SnapshotMonth,
			"domains_loaded", a.DomainsLoaded, "credits_spent", a.CreditsSpent)
		if n == nil {
			continue
		}
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

// AttentionSettings are the config's knobs of the needs-attention ranking (attention.*).
func AttentionSettings(cfg *config.Config) changes.AttentionSettings {
	return changes.AttentionSettings{MinVisits: cfg.Attention.MinVisits, Threshold: cfg.Attention.Threshold}
}

// recordAttention shows the needs-attention list of a month the run left complete in the
// metrics (the same list `changes`, the report and the webhook lead with). A failure to read it
// is logged: metrics never change a run's outcome.
func (r *runState) recordAttention(ctx context.Context, db *sql.DB) {
	if r.obs.metrics == nil || (r.sum.Status != StatusComplete && r.sum.Status != StatusUpToDate) {
		return
	}
	a, err := changes.ReadAttention(ctx, db, r.sum.Snapshot, AttentionSettings(r.cfg))
	if err != nil {
		r.env.Logger.Warn("could not read the needs-attention list for the metrics", "err", err)
		return
	}
	r.obs.metrics.NeedsAttention(MetricsAttention(a))
}

// MetricsAttention is a as /metrics shows it.
func MetricsAttention(a *changes.Attention) metrics.Attention {
	m := metrics.Attention{Month: a.Month, Domains: len(a.Domains), ByKind: a.ByKind(), BySeverity: a.BySeverity()}
	for _, d := range a.Domains {
		m.Lead = append(m.Lead, metrics.AttentionLead{Domain: d.Domain, Kind: d.Reasons[0].Kind, Severity: d.Severity(), Rank: d.Rank})
	}
	return m
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
