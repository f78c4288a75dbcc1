package warehouse

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// changesCacheTables are the tables of migration 0013: the latest complete month's lists of
// `sitewatch changes` and what they were computed from.
var changesCacheTables = []string{
	"changes_cached_movers", "changes_cached_competitors", "changes_cached_ai_platforms",
	"changes_cached_keywords", "changes_cached_top_countries", "changes_cached_sources",
}

// changesCacheFill is how each cached list is computed: from the very macros a read without
// the cache uses (sql/views/changes.sql), for the month ($1) against the complete month
// before it ($2, which those macros pick themselves: the filter only guards), so a stored row
// is a computed row.
var changesCacheFill = []string{
	`INSERT INTO changes_cached_movers SELECT * FROM changes_movers_top(for_month := $1) WHERE previous_month = $2`,
	`INSERT INTO changes_cached_competitors SELECT * FROM changes_competitors_in(for_month := $1) WHERE previous_month = $2`,
	`INSERT INTO changes_cached_ai_platforms SELECT * FROM changes_ai_platforms_in(for_month := $1) WHERE previous_month = $2`,
	`INSERT INTO changes_cached_keywords SELECT * FROM changes_keywords_in(for_month := $1) WHERE previous_month = $2`,
	`INSERT INTO changes_cached_top_countries SELECT * FROM changes_top_countries_in(for_month := $1) WHERE previous_month = $2`,
	`INSERT INTO changes_cached_sources
		SELECT $1, $2, source_table, source_month, row_count, CAST(checksum AS UBIGINT) FROM changes_cache_sources($1, $2)`,
}

// changesCachedSQL is true when the changes_cached_* rows of month $1 against $2 were computed
// from the tables exactly as they are now: the same row count and checksum for every table and
// month the lists read, none more, none less.
const changesCachedSQL = `WITH kept AS (
		SELECT source_table, source_month, row_count, checksum FROM changes_cached_sources
		WHERE snapshot_month = $1 AND previous_month = $2
	),
	now AS (
		SELECT source_table, source_month, row_count, CAST(checksum AS UBIGINT) AS checksum FROM changes_cache_sources($1, $2)
	)
	SELECT (SELECT count(*) FROM kept) > 0 AND NOT EXISTS (
		SELECT 1 FROM kept k FULL JOIN now n ON n.source_table = k.source_table AND n.source_month = k.source_month
		WHERE k.row_count IS DISTINCT FROM n.row_count OR k.checksum IS DISTINCT FROM n.checksum)`

// ChangesHeld is ChangesCached for a reader whose file's lists mark says the stored lists are
// current (StoredListsCurrent): whether changes_cached_* hold month against previous, without
// the checksums.
func ChangesHeld(ctx context.Context, db *sql.DB, month, previous string) (bool, error) {
	if month == "" || previous == "" {
		return false, nil
	}
	var held bool
	err := db.QueryRowContext(ctx, `SELECT count(*) > 0 FROM changes_cached_sources WHERE snapshot_month = ? AND previous_month = ?`, month, previous).Scan(&held)
	return held, err
}

// ChangesCached reports whether changes_cached_* hold month (YYYY-MM) against previous, the
// complete month before it, as computed from the tables now; false when they hold another
// month or any row they were computed from has changed since (then read the changes_* macros).
// A warehouse without the cache's tables or macros (an older sitewatch, the BI file) is false
// with no error: the lists are computed as before.
func ChangesCached(ctx context.Context, db *sql.DB, month, previous string) (bool, error) {
	if month == "" || previous == "" {
		return false, nil
	}
	var have int
	err := db.QueryRowContext(ctx, `SELECT count(*) FROM duckdb_tables() WHERE table_name = 'changes_cached_sources' AND NOT internal`).Scan(&have)
	if err != nil || have == 0 {
		return false, err
	}
	var cached bool
	if err := db.QueryRowContext(ctx, changesCachedSQL, month, previous).Scan(&cached); err != nil {
		return false, fmt.Errorf("check the stored changes of %s against %s: %w", month, previous, err)
	}
	return cached, nil
}

// RefreshChanges stores the lists of `sitewatch changes` for the latest complete month against
// the complete month before it, unless changes_cached_* hold them computed from the tables as
// they are now; it keeps no other month. A month it has not stored is still listed right, only
// slower: the read computes it from the views. The lists and what they were computed from are
// written in one transaction, under AttentionMemoryLimit. It returns an error naming the
// month that failed.
func (w *Warehouse) RefreshChanges(ctx context.Context) error {
	return w.withMemoryLimit(ctx, w.listsLimit(ctx, AttentionMemoryLimit), func() error {
		month, previous, err := latestComparedMonth(ctx, w.db)
		if err != nil {
			return fmt.Errorf("stored changes: read complete_months: %w", err)
		}
		cached, err := ChangesCached(ctx, w.db, month, previous)
		if err != nil || cached {
			return err
		}
		if previous == "" { // nothing to compare: only stale rows to drop, if any
			var held int
			if err := w.db.QueryRowContext(ctx, `SELECT count(*) FROM changes_cached_sources`).Scan(&held); err != nil || held == 0 {
				return err
			}
		}
		if err := w.inTx(ctx, storeChanges(w.load, month, previous)); err != nil {
			return fmt.Errorf("stored changes of %s against %s: %w (changes stays right, computed at each read; a rebuild retries)", month, previous, err)
		}
		return nil
	})
}

// latestComparedMonth is the latest complete month and the complete month before it ("" and
// "" when no month is complete, previous "" when the month is the first).
func latestComparedMonth(ctx context.Context, db *sql.DB) (month, previous string, err error) {
	var prev sql.NullString
	err = db.QueryRowContext(ctx, `SELECT snapshot_month, previous_month FROM complete_months ORDER BY snapshot_month DESC LIMIT 1`).Scan(&month, &prev)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", nil
	}
	return month, prev.String, err
}

// storeChanges replaces every stored row by month's lists against previous (none when previous
// is "": the first complete month has nothing to compare) and the sources they were read from,
// in the caller's transaction.
func storeChanges(db execer, month, previous string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		for _, t := range changesCacheTables {
			if _, err := db.ExecContext(ctx, `DELETE FROM `+t); err != nil {
				return err
			}
		}
		if previous == "" {
			return nil
		}
		for _, q := range changesCacheFill {
			if _, err := db.ExecContext(ctx, q, month, previous); err != nil {
				return err
			}
		}
		return nil
	}
}
