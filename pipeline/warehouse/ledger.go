package warehouse

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"sitewatch/pipeline/livestatus"
	"sitewatch/pipeline/model"
)

// StatusAbandoned is the runs.status of a run whose process died while it was running.
const StatusAbandoned = "abandoned"

// RecordCharge writes one run_calls row for a charged answer that was not passed to Store.
// Store records the answers it receives itself (stored, unloadable or refused); calling
// RecordCharge for one of those would count it twice. It returns an error when the row cannot
// be written (the run should then stop: its spend would be under-reported).
func (w *Warehouse) RecordCharge(ctx context.Context, c model.Charge) error {
	if c.RunID == "" {
		return errors.New("record charge: the run ID is empty")
	}
	if c.Outcome == "" {
		c.Outcome = model.OutcomeRefused
	}
	if c.HTTPStatus == 0 {
		c.HTTPStatus = 200
	}
	if c.FetchedAt.IsZero() {
		c.FetchedAt = time.Now()
	}
	err := w.write(ctx, func(b *batch) error { b.addCharge(c); return nil })
	if err != nil {
		return fmt.Errorf("record charge of %s %s: %w", model.DisplayDomain(c.Domain), c.Endpoint, err)
	}
	return nil
}

// liveRuns are the runs started by this process and not yet finished. A writer's Open closes
// every other run left 'running' as abandoned: the file lock proves no other process writes,
// and this set keeps a second Open in the same process from closing a run still going.
var liveRuns sync.Map // run_id -> struct{}

// closeAbandoned marks every run left 'running' by a dead process as abandoned, counting its
// requests and credits from the ledger and fetch_errors and its domains from the tables. It
// returns the runs it closed.
func (w *Warehouse) closeAbandoned(ctx context.Context) ([]model.RunRecord, error) {
	running, err := w.runsWhere(ctx, `status = 'running'`, 0)
	if err != nil {
		return nil, err
	}
	var closed []model.RunRecord
	for _, r := range running {
		if _, live := liveRuns.Load(r.RunID); live {
			continue
		}
		if r.SnapshotMonth == "" {
			if r.SnapshotMonth, err = w.monthOfRun(ctx, r.RunID); err != nil {
				return closed, fmt.Errorf("find the month of run %s: %w", r.RunID, err)
			}
		}
		final := w.finalOutcome(r.RunID)
		if final != nil && r.SnapshotMonth == "" {
			r.SnapshotMonth = final.Month
		}
		if err := w.countCommitted(ctx, &r); err != nil {
			return closed, fmt.Errorf("count what run %s committed: %w", r.RunID, err)
		}
		r.Status = StatusAbandoned
		r.Message = "the process died while running (killed, crashed or power lost); requests, credits and domains counted from what it had committed"
		if final != nil {
			r.Status = final.Outcome
			r.Message = final.Message + " (the run ended but could not record its end in the warehouse: outcome from its progress file, counts from what it had committed)"
		}
		if err := w.FinishRun(ctx, r); err != nil {
			return closed, err
		}
		if final != nil {
			w.log.Info("recorded the end of a run that could not write it itself", "run_id", r.RunID, "status", r.Status,
				"snapshot", r.SnapshotMonth, "domains_loaded", r.DomainsLoaded)
			continue // it reported its own outcome; it did not die
		}
		w.log.Warn("closed a run whose process died as abandoned", "run_id", r.RunID, "snapshot", r.SnapshotMonth,
			"credits_spent", r.CreditsSpent, "domains_loaded", r.DomainsLoaded)
		closed = append(closed, r)
	}
	return closed, nil
}

// monthOfRun is the month a run's charged answers were stored under ("" when none was): a
// run records its month only at its end, so a run that died has none in its row.
func (w *Warehouse) monthOfRun(ctx context.Context, runID string) (string, error) {
	var month sql.NullString
	err := w.db.QueryRowContext(ctx, `SELECT snapshot_month FROM (
			SELECT snapshot_month, count(*) AS n FROM run_calls WHERE run_id = ? AND snapshot_month <> '' GROUP BY 1
			UNION ALL
			SELECT snapshot_month, count(*) AS n FROM fetch_errors WHERE run_id = ? AND snapshot_month <> '' GROUP BY 1)
		GROUP BY snapshot_month ORDER BY sum(n) DESC, snapshot_month DESC LIMIT 1`, runID, runID).Scan(&month)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return month.String, err
}

// finalOutcome is the final progress file of runID, or nil: a run that could not write its
// end to the warehouse (a full disk) still wrote its outcome there, so it ended on its own
// and did not die.
func (w *Warehouse) finalOutcome(runID string) *livestatus.Status {
	st, err := livestatus.Read(livestatus.Path(w.opts.DuckDBPath))
	if err != nil || st == nil || st.RunID != runID || st.State != livestatus.StateFinal || st.Outcome == "" {
		return nil
	}
	return st
}

// countCommitted fills r's finished_at, requests, credits (by source too) and domains from
// committed rows.
func (w *Warehouse) countCommitted(ctx context.Context, r *model.RunRecord) error {
	var calls, failures, credits int64
	var lastCall, lastFailure sql.NullTime
	err := w.db.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(credits), 0), max(fetched_at) FROM run_calls WHERE run_id = ?`,
		r.RunID).Scan(&calls, &credits, &lastCall)
	if err == nil {
		err = w.db.QueryRowContext(ctx, `SELECT count(*), max(occurred_at) FROM fetch_errors WHERE run_id = ?`,
			r.RunID).Scan(&failures, &lastFailure)
	}
	var loaded, rejected int64
	if err == nil {
		err = w.db.QueryRowContext(ctx, `SELECT (SELECT count(DISTINCT domain) FROM sites WHERE snapshot_month = ?),
			(SELECT count(DISTINCT domain) FROM fetch_errors WHERE snapshot_month = ? AND http_status = 400)`,
			r.SnapshotMonth, r.SnapshotMonth).Scan(&loaded, &rejected)
	}
	if err != nil {
		return err
	}
	finished := r.StartedAt
	for _, t := range []sql.NullTime{lastCall, lastFailure} {
		if t.Valid && t.Time.After(finished) {
			finished = t.Time.UTC()
		}
	}
	r.FinishedAt = &finished
	r.Requests, r.CreditsSpent = int(calls+failures), int(credits)
	if r.CreditsBySource, err = w.ledgerCreditsBySource(ctx, r.RunID); err != nil {
		return err
	}
	r.DomainsLoaded, r.DomainsRejected = int(loaded), int(rejected)
	return nil
}

// Abandoned returns the runs this Open closed as abandoned (runs left 'running' by a process
// that died), so the caller can report or notify them. Empty for read-only warehouses.
func (w *Warehouse) Abandoned() []model.RunRecord {
	return append([]model.RunRecord(nil), w.abandoned...)
}

// MonthCompleteSince returns when the first run that left month complete finished, and false
// when no run has (a month completed only by `rebuild` or before runs were recorded has none).
func (w *Warehouse) MonthCompleteSince(ctx context.Context, month string) (time.Time, bool, error) {
	if err := checkSnapshot(month); err != nil {
		return time.Time{}, false, fmt.Errorf("month complete since: %w", err)
	}
	var since sql.NullTime
	err := w.db.QueryRowContext(ctx, `SELECT min(finished_at) FROM runs WHERE snapshot_month = ? AND status = 'complete'`,
		month).Scan(&since)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("month complete since: read runs of %s: %w", month, err)
	}
	if !since.Valid {
		return time.Time{}, false, nil
	}
	return since.Time.UTC(), true, nil
}
