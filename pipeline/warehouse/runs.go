package warehouse

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"sitewatch/pipeline/model"
)

func utcPtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UTC()
}

func int64Ptr(v *int64) any {
	if v == nil {
		return nil
	}
	return *v
}

// StartRun inserts r into runs.
func (w *Warehouse) StartRun(ctx context.Context, r model.RunRecord) error {
	err := w.inTx(ctx, func(ctx context.Context) error {
		_, err := w.load.ExecContext(ctx, `INSERT INTO runs (run_id, snapshot_month, started_at, finished_at, status,
			domains_total, domains_loaded, domains_rejected, requests, credits_spent, credits_remaining, rate_limited, message, credits_by_source)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.RunID, r.SnapshotMonth, r.StartedAt.UTC(), utcPtr(r.FinishedAt), r.Status,
			r.DomainsTotal, r.DomainsLoaded, r.DomainsRejected, r.Requests, r.CreditsSpent, int64Ptr(r.CreditsRemaining), r.RateLimited, r.Message, nullString(r.CreditsBySource))
		return err
	})
	if err != nil {
		return fmt.Errorf("record start of run %s: %w", r.RunID, err)
	}
	if r.Status == "running" {
		liveRuns.Store(r.RunID, struct{}{})
	}
	return nil
}

// FinishRun updates the runs row of r.RunID with every field of r but StartedAt. It fails
// when no such run was started.
func (w *Warehouse) FinishRun(ctx context.Context, r model.RunRecord) error {
	if r.Status != "running" {
		defer liveRuns.Delete(r.RunID)
	}
	err := w.inTx(ctx, func(ctx context.Context) error {
		res, err := w.load.ExecContext(ctx, `UPDATE runs SET snapshot_month = ?, finished_at = ?, status = ?,
			domains_total = ?, domains_loaded = ?, domains_rejected = ?, requests = ?, credits_spent = ?,
			credits_remaining = ?, rate_limited = ?, message = ?, credits_by_source = ? WHERE run_id = ?`,
			r.SnapshotMonth, utcPtr(r.FinishedAt), r.Status, r.DomainsTotal, r.DomainsLoaded, r.DomainsRejected,
			r.Requests, r.CreditsSpent, int64Ptr(r.CreditsRemaining), r.RateLimited, r.Message, nullString(r.CreditsBySource), r.RunID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err == nil && n == 0 {
			return fmt.Errorf("no run %q was started", r.RunID)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record end of run %s: %w", r.RunID, err)
	}
	if r.Status != "running" {
		w.refreshStoredLists(ctx) // when the run wrote: it may have completed its month, or changed one
	}
	return nil
}

// Runs returns up to limit runs (limit <= 0: all), newest first.
func (w *Warehouse) Runs(ctx context.Context, limit int) ([]model.RunRecord, error) {
	return w.runsWhere(ctx, "", limit)
}

// runsWhere returns the runs matching the SQL condition cond ("" = all), newest first.
func (w *Warehouse) runsWhere(ctx context.Context, cond string, limit int) ([]model.RunRecord, error) {
	w.flushQuietly()
	q := `SELECT run_id, snapshot_month, started_at, finished_at, status, domains_total, domains_loaded,
		domains_rejected, requests, credits_spent, credits_remaining, rate_limited, message, credits_by_source
		FROM runs`
	if cond != "" {
		q += ` WHERE ` + cond
	}
	q += ` ORDER BY started_at DESC, run_id DESC`
	var args []any
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	var out []model.RunRecord
	err := QueryEach(ctx, w.db, q, args, func(rows *sql.Rows) error {
		var r model.RunRecord
		var finished sql.NullTime
		var total, loaded, rejected, requests, spent, limited sql.NullInt64
		var remaining sql.NullInt64
		var msg, bySource sql.NullString
		if err := rows.Scan(&r.RunID, &r.SnapshotMonth, &r.StartedAt, &finished, &r.Status, &total, &loaded,
			&rejected, &requests, &spent, &remaining, &limited, &msg, &bySource); err != nil {
			return err
		}
		r.StartedAt = r.StartedAt.UTC()
		if finished.Valid {
			t := finished.Time.UTC()
			r.FinishedAt = &t
		}
		r.DomainsTotal, r.DomainsLoaded, r.DomainsRejected = int(total.Int64), int(loaded.Int64), int(rejected.Int64)
		r.Requests, r.CreditsSpent, r.RateLimited = int(requests.Int64), int(spent.Int64), int(limited.Int64)
		if remaining.Valid {
			v := remaining.Int64
			r.CreditsRemaining = &v
		}
		r.Message, r.CreditsBySource = msg.String, bySource.String
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read runs: %w", err)
	}
	return out, nil
}

// RecordFetchError records e in fetch_errors (OccurredAt zero: now). It is buffered like Store:
// committed with the pending batch; a storage error surfaces at the next Store or Flush.
func (w *Warehouse) RecordFetchError(ctx context.Context, e model.FetchError) error {
	if e.OccurredAt.IsZero() {
		e.OccurredAt = time.Now()
	}
	if w.opts.ReadOnly {
		return fmt.Errorf("record fetch error of %s %s: the warehouse is open read-only", model.DisplayDomain(e.Domain), e.Endpoint)
	}
	err := w.write(ctx, func(b *batch) error { b.addFailure(e); return nil })
	if err != nil {
		return fmt.Errorf("record fetch error of %s %s: %w", model.DisplayDomain(e.Domain), e.Endpoint, err)
	}
	return nil
}
