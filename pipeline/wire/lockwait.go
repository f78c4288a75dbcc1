package wire

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"sitewatch/pipeline/filelock"
	"sitewatch/pipeline/livestatus"
	"sitewatch/pipeline/warehouse"
)

// LockWait is how long a run waits for the warehouse while another sitewatch command (a
// publish reading the runs, a status) holds it: those hold it for seconds (status at most its
// 10 s network bound), so the monthly run never fails "locked" because of them. A BI tool's
// hold is not waited for: it may last hours, and the run says at once what to do.
const LockWait = time.Minute

// runInProgress says whether the progress file shows a run of duckdbPath going on: a second
// writer fails at once (a run holds the file for hours), only short commands are waited for.
func runInProgress(duckdbPath string) bool {
	st, err := livestatus.Read(livestatus.Path(duckdbPath))
	if err != nil || st == nil || st.State != livestatus.StateRunning {
		return false
	}
	return !st.OnThisHost() || st.Alive()
}

// lockRetry is the pause between two tries to open a held warehouse.
const lockRetry = 250 * time.Millisecond

// openWaiting opens the warehouse for writing, waiting up to wait while a sitewatch process
// holds it. A signal (ctx) ends the wait with the lock error.
func openWaiting(ctx context.Context, opts warehouse.Options, wait time.Duration, logger *slog.Logger) (*warehouse.Warehouse, error) {
	deadline := time.Now().Add(wait)
	logged := false
	for {
		wh, err := warehouse.Open(ctx, opts)
		if err == nil || !errors.Is(err, warehouse.ErrHeldBySitewatch) || runInProgress(opts.DuckDBPath) || time.Now().After(deadline) {
			return wh, err
		}
		if !logged {
			logger.Info("waiting for the warehouse: another sitewatch command holds it", "file", opts.DuckDBPath,
				"max_wait", wait.String(), "holder", err.Error())
			logged = true
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(lockRetry):
		}
	}
}

// writerLockPath is the file that keeps one writer per warehouse file: every run holds a
// shared lock on it while it works, a restore an exclusive one while it replaces the file,
// so neither can start under the other. The kernel drops the lock of a killed process.
func writerLockPath(duckdbPath string) string { return duckdbPath + ".lock" }

// ErrWarehouseBusy: another sitewatch command writes the warehouse file (a run, a restore).
var ErrWarehouseBusy = errors.New("the warehouse is being written by another sitewatch command")

// lockForRun takes the run's shared writer lock, failing at once while a restore holds the
// file.
func lockForRun(duckdbPath string) (*filelock.Lock, error) {
	l, err := takeWriterLock(duckdbPath, filelock.TryShared)
	if errors.Is(err, filelock.ErrHeld) {
		return nil, fmt.Errorf("%w: a `sitewatch restore` is replacing %s; nothing was spent: wait for it to finish, then rerun", ErrWarehouseBusy, duckdbPath)
	}
	return l, err
}

// LockForRestore takes the exclusive writer lock of the warehouse at duckdbPath for a restore,
// failing at once (naming the run from its progress file) while a run, or another restore,
// writes it. release gives it back.
func LockForRestore(duckdbPath string) (release func(), err error) {
	l, err := takeWriterLock(duckdbPath, filelock.TryExclusive)
	if errors.Is(err, filelock.ErrHeld) {
		return nil, fmt.Errorf("%w: %s; a restore now would move its work aside, so nothing was changed: wait for it to end (or stop it), then rerun",
			ErrWarehouseBusy, holderOf(duckdbPath))
	}
	if err != nil {
		return nil, err
	}
	return l.Release, nil
}

func takeWriterLock(duckdbPath string, try func(string) (*filelock.Lock, error)) (*filelock.Lock, error) {
	if err := os.MkdirAll(filepath.Dir(duckdbPath), 0o755); err != nil {
		return nil, fmt.Errorf("warehouse.duckdb (%s): create its directory: %w", duckdbPath, err)
	}
	l, err := try(writerLockPath(duckdbPath))
	if err != nil && !errors.Is(err, filelock.ErrHeld) {
		return nil, fmt.Errorf("warehouse.duckdb (%s): %w: this user cannot create its lock file beside it; fix the permissions, or point warehouse.duckdb at a writable path", duckdbPath, err)
	}
	return l, err
}

// holderOf names what holds the warehouse: the run its progress file shows, or some other
// sitewatch command.
func holderOf(duckdbPath string) string {
	if st, err := livestatus.Read(livestatus.Path(duckdbPath)); err == nil && st != nil && st.State == livestatus.StateRunning {
		return fmt.Sprintf("`sitewatch run` %s (pid %d on %s, month %s, started %s) is writing %s",
			st.RunID, st.PID, st.Host, st.Month, st.StartedAt.UTC().Format(time.RFC3339), duckdbPath)
	}
	return fmt.Sprintf("another sitewatch command (a run, or another restore) is writing %s", duckdbPath)
}
