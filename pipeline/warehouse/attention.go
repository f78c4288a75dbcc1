package warehouse

import (
	"context"
	"database/sql"
	"fmt"
)

// RefreshAttention stores in attention_visit_steps every complete month it lacks or holds from
// a history that has changed since (sql/views/needs_attention.sql): the per-domain half of the
// needs-attention list, which every read would otherwise compute from every traffic_history row
// (at 100,000 domains most of the list's 13 s). It drops the months no longer complete. A month
// it has not stored is still listed right, only slower: the read computes it from the history.
// Each month is computed and recorded with the history it read in one transaction, under the
// analysis memory limit. It returns an error naming the month that failed; a warehouse without
// the macros (views not created yet) is an error too.
func (w *Warehouse) RefreshAttention(ctx context.Context) error {
	return w.withAnalysisMemory(ctx, func() error {
		var stale []string
		err := QueryEach(ctx, w.db, `SELECT snapshot_month FROM attention_visit_months() WHERE NOT cached ORDER BY 1`, nil,
			func(rows *sql.Rows) error {
				var m string
				stale = append(stale, m)
				return rows.Scan(&stale[len(stale)-1])
			})
		if err != nil {
			return fmt.Errorf("needs-attention cache: list the months to compute: %w", err)
		}
		if err := w.inTx(ctx, dropIncompleteAttention(w.load)); err != nil {
			return fmt.Errorf("needs-attention cache: drop months no longer complete: %w", err)
		}
		for _, m := range stale {
			if err := w.inTx(ctx, storeAttentionMonth(w.load, m)); err != nil {
				return fmt.Errorf("needs-attention cache of %s: %w (the list stays right, computed at each read; a rebuild retries)", m, err)
			}
		}
		return nil
	})
}

// refreshAttentionQuietly is RefreshAttention for the paths that must not fail on it (open,
// the end of a run, rebuild): the cache only saves time, so a failure is a warning.
func (w *Warehouse) refreshAttentionQuietly(ctx context.Context) {
	if err := w.RefreshAttention(ctx); err != nil {
		w.log.Warn("needs attention will be computed at each read", "err", err)
	}
	w.refreshChangesQuietly(ctx) // the same moments: the lists of changes read the same months
}

// execer is the load connection's Exec.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func dropIncompleteAttention(db execer) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		for _, t := range []string{"attention_visit_steps", "attention_visit_sources"} {
			if _, err := db.ExecContext(ctx, `DELETE FROM `+t+` WHERE snapshot_month NOT IN (SELECT snapshot_month FROM complete_months)`); err != nil {
				return err
			}
		}
		return nil
	}
}

// storeAttentionMonth replaces month's rows: the steps computed from the history and the
// history's sources they were computed from, read in the same transaction.
func storeAttentionMonth(db execer, month string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		for _, t := range []string{"attention_visit_steps", "attention_visit_sources"} {
			if _, err := db.ExecContext(ctx, `DELETE FROM `+t+` WHERE snapshot_month = ?`, month); err != nil {
				return err
			}
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO attention_visit_steps
			SELECT snapshot_month, domain, visits, prev_visits, center, n, mad FROM attention_visit_steps_of(only_month := ?)`, month); err != nil {
			return err
		}
		_, err := db.ExecContext(ctx, `INSERT INTO attention_visit_sources
			SELECT snapshot_month, source_month, row_count, checksum FROM attention_history_sources(only_month := ?)`, month)
		return err
	}
}
