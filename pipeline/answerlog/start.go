package answerlog

import (
	"context"
	"log/slog"
	"time"

	"sitewatch/pipeline/publish"
	"sitewatch/pipeline/warehouse"
)

// LeaseFence is the held lease as the log sees it: Fence, and WatchLog, which makes the log
// the fence's second reason. *lease.Held implements it.
type LeaseFence interface {
	Fence
	WatchLog(interval time.Duration)
}

// Starter starts the answer log of each run on one bucket.
type Starter struct {
	Bucket      Bucket
	URL         string // publish.url: the sync state's identity of the bucket
	ParquetRoot string // where the sync state records the segments written
	Interval    time.Duration
	Attempt     time.Duration // the lease's margin
	// CloseBound bounds the last cut at the end of a run (default 3 × Attempt): a run cut
	// from the bucket keeps trying until it heals or the bound passes, and a signal ends it.
	CloseBound time.Duration
	Logger     *slog.Logger
}

// Start logs what wh commits for runID under fence until the returned stop, which makes a
// last cut within a few attempts and records the segments written in the sync state (the
// month's publish folds them). ctx is the signal's: a signal ends the writes at once.
func (s *Starter) Start(ctx context.Context, runID string, wh *warehouse.Warehouse, fence LeaseFence) func() {
	w := New(s.Bucket, Options{RunID: runID, Interval: s.Interval, Attempt: s.Attempt, Flush: wh.Flush, Fence: fence, Logger: s.Logger})
	fence.WatchLog(w.opts.Interval)
	wh.OnCommit(w.Take)
	lctx, cancel := context.WithCancel(ctx)
	go w.Run(lctx)
	return func() {
		defer cancel()
		bound := s.CloseBound
		if bound <= 0 {
			bound = 3 * w.opts.Attempt
		}
		acked := w.Close(ctx, bound)
		wh.OnCommit(nil)
		if err := publish.AddLogs(s.ParquetRoot, s.URL, acked); err != nil {
			s.Logger.Warn("could not record the answer log's segments: the month's publish leaves them for a later one", "err", err)
		}
	}
}
