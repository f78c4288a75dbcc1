package pipeline

import (
	"context"
	"errors"
	"log/slog"
	"time"

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
