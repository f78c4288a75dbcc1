package wire

import (
	"context"
	"time"

	"sitewatch/pipeline"
	"sitewatch/pipeline/warehouse"
)

// AnswerLog writes what a run commits (answers, ledger rows, rejections) to the bucket while
// it holds the lease, so no paid answer lives only on this machine for longer than
// publish.log_interval plus the fence's margin. pipeline/answerlog implements it; cmd/sitewatch
// sets Env.AnswerLog when publish.url is set and the lease is on.
type AnswerLog interface {
	// Start logs what wh commits for run runID under fence; stop makes a last cut (the
	// answers committed since the last segment) and ends the log. ctx ends the log's writes
	// (a signal), not the lease's loss: a holder that lost its lease still writes its last
	// answers (its keys are its own).
	Start(ctx context.Context, runID string, wh *warehouse.Warehouse, fence LogFence) (stop func())
}

// LogFence is the side of the held lease the answer log moves: the fence admits a paid call
// only while the log's last acknowledged cut is recent (lease.Held implements it).
type LogFence interface {
	WatchLog(interval time.Duration)
	Logged(cut time.Time)
	Renewals() <-chan struct{}
}

// startAnswerLog starts the run's answer log when there is one and the lease can carry it.
func startAnswerLog(ctx context.Context, l AnswerLog, runID string, wh *warehouse.Warehouse, held pipeline.HeldLease) func() {
	fence, ok := held.(LogFence)
	if l == nil || !ok {
		return func() {}
	}
	return l.Start(ctx, runID, wh, fence)
}
