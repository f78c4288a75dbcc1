package warehouse

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
)

// RefreshAttention stores in attention_visit_steps (and the watchlist-wide figures in
// attention_month_stats) every complete month it lacks or holds from
// a history that has changed since (sql/views/needs_attention.sql): the per-domain half of the
// needs-attention list, which every read would otherwise compute from every traffic_history row
// (at 100,000 domains most of the list's 13 s). Then it stores each complete month's whole list
// (attention_lists) for the view's default settings and Options.AttentionLists, where the
// stored one is missing or stale: the view, `changes`, `show` and the report then read rows
// instead of computing them. It drops the months no longer complete. A month it has not stored
// is still listed right, only slower: the read computes it. Each month is computed and recorded
// with the sources it read in one transaction, under AttentionMemoryLimit. It returns an error
// naming the month that failed; a warehouse without the macros (views not created yet) is an
// error too.
func (w *Warehouse) RefreshAttention(ctx context.Context) error {
	return w.withMemoryLimit(ctx, w.listsLimit(ctx, AttentionMemoryLimit), func() error {
		staleSteps, err := w.staleAttentionMonths(ctx, `attention_visit_months()`)
		if err != nil {
			return err
		}
		staleStats, err := w.staleAttentionMonths(ctx, `attention_stat_months()`)
		if err != nil {
			return err
		}
		if err := w.inTx(ctx, dropIncompleteAttention(w.load)); err != nil {
			return fmt.Errorf("needs-attention cache: drop months no longer complete: %w", err)
		}
		for _, m := range staleSteps {
			if err := w.inTx(ctx, storeAttentionMonth(w.load, m)); err != nil {
				return fmt.Errorf("needs-attention cache of %s: %w (the list stays right, computed at each read; a rebuild retries)", m, err)
			}
		}
		for _, m := range staleStats {
			if err := w.inTx(ctx, storeAttentionStats(w.load, m)); err != nil {
				return fmt.Errorf("needs-attention watchlist figures of %s: %w (the list stays right, computed at each read; a rebuild retries)", m, err)
			}
		}
		return w.refreshAttentionLists(ctx)
	})
}

// AttentionMemoryLimit is DuckDB's memory_limit while RefreshAttention and RefreshChanges
// compute what they store: at 100,000 domains the month's watchlist figures (1 million
// channel-share moves and their medians per channel, a holistic aggregate DuckDB 1.1 does not
// spill), the movers (1.19 M moves, four hash joins at once) and the countries' ranking of 563,000
// rows each ran out of the load's 128 MB; the movers needed 200 MB.
const AttentionMemoryLimit = "256MB"

// refreshAttentionLists stores the whole list of every complete month whose stored list is
// missing or stale, for each setting the writer keeps (the defaults first).
func (w *Warehouse) refreshAttentionLists(ctx context.Context) error {
	for _, s := range w.attentionListSettings() {
		stale, err := w.staleAttentionMonths(ctx, fmt.Sprintf(`(SELECT snapshot_month, stored AS cached FROM attention_list_months(%d, %s))`,
			s.MinVisits, strconv.FormatFloat(s.Threshold, 'g', -1, 64)))
		if err != nil {
			return err
		}
		for _, m := range stale {
			if err := w.inTx(ctx, storeAttentionList(w.load, m, s)); err != nil {
				return fmt.Errorf("needs-attention list of %s (min_visits %d, threshold %g): %w (the list stays right, computed at each read; a rebuild retries)",
					m, s.MinVisits, s.Threshold, err)
			}
		}
	}
	return nil
}

// attentionListSettings are the defaults and Options.AttentionLists, zero fields filled, each once.
func (w *Warehouse) attentionListSettings() []AttentionListSettings {
	out := []AttentionListSettings{AttentionListSettings{}.withDefaults()}
	for _, s := range w.opts.AttentionLists {
		if s = s.withDefaults(); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// withDefaults fills the zero fields (10,000 visits, |z| 3).
func (s AttentionListSettings) withDefaults() AttentionListSettings {
	if s.MinVisits <= 0 {
		s.MinVisits = 10000
	}
	if s.Threshold <= 0 {
		s.Threshold = 3
	}
	return s
}

// key names s in cache_state.settings and the lists mark: "min_visits/threshold;".
func (s AttentionListSettings) key() string {
	return strconv.FormatInt(s.MinVisits, 10) + "/" + strconv.FormatFloat(s.Threshold, 'g', -1, 64) + ";"
}

// staleAttentionMonths lists the months that macro (attention_visit_months() or
// attention_stat_months()) says the cache does not hold as of the data now.
func (w *Warehouse) staleAttentionMonths(ctx context.Context, macro string) ([]string, error) {
	var stale []string
	err := QueryEach(ctx, w.db, `SELECT snapshot_month FROM `+macro+` WHERE NOT cached ORDER BY 1`, nil,
		func(rows *sql.Rows) error {
			var m string
			stale = append(stale, m)
			return rows.Scan(&stale[len(stale)-1])
		})
	if err != nil {
		return nil, fmt.Errorf("needs-attention cache: list the months to compute from %s: %w", macro, err)
	}
	return stale, nil
}

// execer is the load connection's Exec.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// attentionCacheTables are the derived tables of needs_attention (migrations 0011 and 0012).
var attentionCacheTables = []string{"attention_visit_steps", "attention_visit_sources", "attention_month_stats", "attention_month_stat_sources",
	"attention_lists", "attention_list_sources"}

func dropIncompleteAttention(db execer) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		for _, t := range attentionCacheTables {
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

// storeAttentionStats replaces month's watchlist-wide medians and MADs and the sources they were
// computed from, read in the same transaction.
func storeAttentionStats(db execer, month string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		for _, t := range []string{"attention_month_stats", "attention_month_stat_sources"} {
			if _, err := db.ExecContext(ctx, `DELETE FROM `+t+` WHERE snapshot_month = ?`, month); err != nil {
				return err
			}
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO attention_month_stats
			SELECT snapshot_month, metric, channel, med, mad FROM attention_month_stats_of(only_month := ?)`, month); err != nil {
			return err
		}
		_, err := db.ExecContext(ctx, `INSERT INTO attention_month_stat_sources
			SELECT snapshot_month, source_table, source_month, row_count, checksum FROM attention_stat_sources(only_month := ?)`, month)
		return err
	}
}

// storeAttentionList replaces month's stored list for settings s: its rows, computed (the
// delete makes needs_attention_all compute the month), and the sources they were computed
// from, read in the same transaction.
func storeAttentionList(db execer, month string, s AttentionListSettings) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		for _, t := range []string{"attention_lists", "attention_list_sources"} {
			if _, err := db.ExecContext(ctx, `DELETE FROM `+t+` WHERE snapshot_month = ? AND floor_visits = ? AND z_min = ?`,
				month, float64(s.MinVisits), s.Threshold); err != nil {
				return err
			}
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO attention_lists
			SELECT snapshot_month, min_visits, threshold, previous_month, domain, kind, metric, channel, value, previous_value,
			       change_pct, change_points, z, severity, reason, score, rank, domain_rank
			FROM needs_attention_all(?, ?, only_month := ?)`, s.MinVisits, s.Threshold, month); err != nil {
			return err
		}
		_, err := db.ExecContext(ctx, `INSERT INTO attention_list_sources
			SELECT snapshot_month, ?, ?, source_table, source_month, row_count, checksum FROM attention_list_sources_now(only_month := ?)`,
			float64(s.MinVisits), s.Threshold, month)
		return err
	}
}
