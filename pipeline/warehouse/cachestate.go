package warehouse

import (
	"context"
	"fmt"
	"strings"
)

// The stored lists (needs attention's and changes') are refreshed where data changed, not at
// every writer: cache_state (migration 0014) records whether the last refresh came after the
// last write. Each commit that changes data clears it in its own transaction, so a writer
// killed after writing leaves it cleared and the next writer's open refreshes; a refresh that
// completes with no data written meanwhile sets it. Reads never trust it: they check the
// stored rows against their sources' counts and checksums either way.

// cacheWriteKey marks the context of a transaction that changes none of the data the stored
// lists are computed from: a refresh's own (it changes only the stored lists) and an export's
// (it reads the tables and writes files). A flush of buffered answers inside either is data
// (asDataWrite).
type cacheWriteKey struct{}

func asCacheWrite(ctx context.Context) context.Context {
	return context.WithValue(ctx, cacheWriteKey{}, true)
}

func isCacheWrite(ctx context.Context) bool { return ctx.Value(cacheWriteKey{}) == true }

// asDataWrite unmarks ctx: a flush of buffered answers inside a refresh's transaction is data.
func asDataWrite(ctx context.Context) context.Context {
	return context.WithValue(ctx, cacheWriteKey{}, false)
}

// markDataWrite runs inside a data-changing transaction before its COMMIT: it clears
// cache_state the first time after a refresh (once per refresh, not per commit).
func (w *Warehouse) markDataWrite(ctx context.Context) error {
	if isCacheWrite(ctx) || !w.cachesFresh.Load() {
		return nil
	}
	if _, err := w.load.ExecContext(ctx, `UPDATE cache_state SET fresh = false`); err != nil {
		return fmt.Errorf("record that the stored lists are behind: %w", err)
	}
	return nil
}

// dataCommitted follows the COMMIT of a transaction markDataWrite ran in.
func (w *Warehouse) dataCommitted(ctx context.Context) {
	if isCacheWrite(ctx) {
		return
	}
	w.cachesFresh.Store(false)
	w.dataWrites.Add(1)
}

// readCacheState loads cache_state at a writer's open: the lists are fresh only if they were
// stored for this writer's settings too, and no other program wrote the file since the last
// writer left it (its lists mark, listsmark.go: such a write clears no cache_state).
func (w *Warehouse) readCacheState(ctx context.Context) error {
	var fresh bool
	var settings string
	if err := w.load.QueryRowContext(ctx, `SELECT fresh, settings FROM cache_state`).Scan(&fresh, &settings); err != nil {
		return fmt.Errorf("read cache_state: %w", err)
	}
	w.cachesFresh.Store(fresh && settings == w.listSettingsKey() && w.unchangedSinceMark)
	return nil
}

// listSettingsKey names the list settings this writer stores, in cache_state.settings.
func (w *Warehouse) listSettingsKey() string {
	var b strings.Builder
	for _, s := range w.attentionListSettings() {
		b.WriteString(s.key())
	}
	return b.String()
}

// refreshStoredLists refreshes needs attention's and changes' stored lists unless the last
// refresh came after the last write, and records them fresh when it completed with no data
// written meanwhile. The lists only save time, so a failure is a warning (the reads compute).
func (w *Warehouse) refreshStoredLists(ctx context.Context) {
	if w.cachesFresh.Load() {
		return
	}
	ctx = asCacheWrite(ctx)
	before := w.dataWrites.Load()
	// Both lists under one memory_limit window (each asks for the same limit, so neither sets
	// it again): each SET memory_limit purges all of DuckDB's freed memory (setMemoryLimit).
	var errA, errC error
	if err := w.withMemoryLimit(ctx, w.listsLimit(ctx, AttentionMemoryLimit), func() error {
		errA = w.RefreshAttention(ctx)
		errC = w.RefreshChanges(ctx)
		return nil
	}); err != nil {
		errA, errC = err, err
	}
	if errA != nil {
		w.log.Warn("needs attention will be computed at each read", "err", errA)
	}
	if errC != nil {
		w.log.Warn("the lists of changes will be computed at each read", "err", errC)
	}
	errW := w.storeCandidates(ctx)
	if errW != nil {
		w.log.Warn("the worth-tracking list will be computed at each read", "err", errW)
	}
	if errA != nil || errC != nil || errW != nil {
		return
	}
	// Under the writer's lock (inTx): no data commit can come between the check and the flag.
	err := w.inTx(ctx, func(ctx context.Context) error {
		if w.dataWrites.Load() != before {
			return nil
		}
		if _, err := w.load.ExecContext(ctx, `UPDATE cache_state SET fresh = true, settings = ?`, w.listSettingsKey()); err != nil {
			return err
		}
		// Set before the COMMIT: if it fails, the file still says behind, which only costs the
		// next writer's open a refresh.
		w.cachesFresh.Store(true)
		return nil
	})
	if err != nil {
		w.log.Warn("could not record the stored lists as fresh; the next writer refreshes them again", "err", err)
		return
	}
	w.noteFreshFile()
}

// noteFreshFile records the file and its WAL as the refresh (or an open that found the lists
// fresh) left them: Close writes the lists mark only if both are still the same, so a write that
// went through no commit of ours (the pool of DB(), a migration) cannot be covered by a mark
// (listsmark.go). It does not checkpoint: a failed checkpoint invalidates the whole database.
func (w *Warehouse) noteFreshFile() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.freshFile = fileState{}
	if w.cachesFresh.Load() {
		w.freshFile = currentFileState(w.opts.DuckDBPath)
	}
}
