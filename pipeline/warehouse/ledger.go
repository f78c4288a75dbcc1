package warehouse

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"sitewatch/schema"
)

// Outcomes of a charged answer in the run_calls ledger.
const (
	OutcomeStored     = "stored"     // body stored (its domain loaded once both bodies are in)
	OutcomeUnloadable = "unloadable" // body stored; the domain's rows cannot be derived from it
	OutcomeRefused    = "refused"    // body not stored: it did not decode (legacy v1, drift, not JSON)
)

// StatusAbandoned is the runs.status of a run whose process died while it was running.
const StatusAbandoned = "abandoned"

// Charge is one charged answer that Store did not receive (a body the caller refused itself,
// e.g. one that contained a secret), for the run_calls ledger.
type Charge struct {
	RunID, SnapshotMonth, Domain string
	Endpoint                     schema.Endpoint
	HTTPStatus                   int   // 0 = 200
	Credits                      int64 // credits the server charged
	FetchedAt                    time.Time
	Outcome                      string // "" = OutcomeRefused; a short reason word otherwise
	Source                       string // the credit source that paid ("" = not named: NULL)
}

// RecordCharge writes one run_calls row for a charged answer that was not passed to Store.
// Store records the answers it receives itself (stored, unloadable or refused); calling
// RecordCharge for one of those would count it twice. It returns an error when the row cannot
// be written (the run should then stop: its spend would be under-reported).
func (w *Warehouse) RecordCharge(ctx context.Context, c Charge) error {
	if c.RunID == "" {
		return errors.New("record charge: the run ID is empty")
	}
	if c.Outcome == "" {
		c.Outcome = OutcomeRefused
	}
	if c.HTTPStatus == 0 {
		c.HTTPStatus = 200
	}
	if c.FetchedAt.IsZero() {
		c.FetchedAt = time.Now()
	}
	err := w.write(ctx, func(b *batch) error { b.addCharge(c); return nil })
	if err != nil {
		return fmt.Errorf("record charge of %s %s: %w", DisplayDomain(c.Domain), c.Endpoint, err)
	}
	return nil
}

// DisplayDomain names a raw row's domain in messages: "(countries)" for country-metadata.
func DisplayDomain(d string) string {
	if d == "" {
		return "(countries)"
	}
	return d
}

// liveRuns are the runs started by this process and not yet finished. A writer's Open closes
// every other run left 'running' as abandoned: the file lock proves no other process writes,
// and this set keeps a second Open in the same process from closing a run still going.
var liveRuns sync.Map // run_id -> struct{}

// closeAbandoned marks every run left 'running' by a dead process as abandoned, counting its
// requests and credits from the ledger and fetch_errors and its domains from the tables. It
// returns the runs it closed.
func (w *Warehouse) closeAbandoned(ctx context.Context) ([]RunRecord, error) {
	running, err := w.runsWhere(ctx, `status = 'running'`, 0)
	if err != nil {
		return nil, err
	}
	var closed []RunRecord
	for _, r := range running {
		if _, live := liveRuns.Load(r.RunID); live {
			continue
		}
		if err := w.countCommitted(ctx, &r); err != nil {
			return closed, fmt.Errorf("count what run %s committed: %w", r.RunID, err)
		}
		r.Status = StatusAbandoned
		r.Message = "the process died while running (killed, crashed or power lost); requests, credits and domains counted from what it had committed"
		if err := w.FinishRun(ctx, r); err != nil {
			return closed, err
		}
		w.log.Warn("closed a run whose process died as abandoned", "run_id", r.RunID, "snapshot", r.SnapshotMonth,
			"credits_spent", r.CreditsSpent, "domains_loaded", r.DomainsLoaded)
		closed = append(closed, r)
	}
	return closed, nil
}

// countCommitted fills r's finished_at, requests, credits and domains from committed rows.
func (w *Warehouse) countCommitted(ctx context.Context, r *RunRecord) error {
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
	r.DomainsLoaded, r.DomainsRejected = int(loaded), int(rejected)
	return nil
}

// Abandoned returns the runs this Open closed as abandoned (runs left 'running' by a process
// that died), so the caller can report or notify them. Empty for read-only warehouses.
func (w *Warehouse) Abandoned() []RunRecord {
	return append([]RunRecord(nil), w.abandoned...)
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
