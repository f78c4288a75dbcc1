package main

import (
	"context"
	"time"

	"sitewatch/pipeline/answerlog"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/lease"
	"sitewatch/pipeline/publish"
	"sitewatch/pipeline/warehouse"
	"sitewatch/pipeline/wire"
)

// NoAnswerLogEnv turns the answer log off. Test-only (docs/internals.md): the soak shows its
// checker fails without the log.
const NoAnswerLogEnv = "SITEWATCH_TEST_NO_ANSWER_LOG"

// bucketAnswerLog is the answer log of runs on cfg's bucket (nil without the lease: then
// nothing fences paid calls either).
func bucketAnswerLog(ctx context.Context, cfg *config.Config, env Env) (wire.AnswerLog, error) {
	if cfg.Publish.URL == "" || !cfg.Publish.LeaseOn() || env.Getenv(NoAnswerLogEnv) == "1" {
		return nil, nil
	}
	p, err := publish.New(ctx, cfg.Publish, publish.Options{Logger: env.Logger, Small: true})
	if err != nil {
		return nil, err
	}
	margin := lease.TimingFor(cfg.Publish.LeaseDuration(), cfg.API.Timeout.Duration).Margin
	return runAnswerLog{&answerlog.Starter{Bucket: p, URL: cfg.Publish.URL, ParquetRoot: cfg.Warehouse.Parquet,
		Interval: cfg.Publish.LogEvery(), Attempt: margin, CloseBound: answerLogCloseBound, Logger: env.Logger}}, nil
}

// answerLogCloseBound is how long a run's end keeps trying its last answer-log segment on a
// bucket that does not answer: a cut that heals within it loses nothing, and after it the
// restore copy's upload (bounded by the publish's deadlines) and the next `sitewatch publish`
// on this machine save those answers. A run cut off for good then exits within about a
// minute plus that upload, not after the run's whole upload bound (30 min).
const answerLogCloseBound = time.Minute

// runAnswerLog adapts *answerlog.Starter to the core's interface.
type runAnswerLog struct{ s *answerlog.Starter }

func (l runAnswerLog) Start(ctx context.Context, runID string, wh *warehouse.Warehouse, fence wire.LogFence) func() {
	return l.s.Start(ctx, runID, wh, fence)
}
