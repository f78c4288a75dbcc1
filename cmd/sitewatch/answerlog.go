package main

import (
	"context"

	"sitewatch/pipeline"
	"sitewatch/pipeline/answerlog"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/lease"
	"sitewatch/pipeline/publish"
	"sitewatch/pipeline/warehouse"
)

// NoAnswerLogEnv turns the answer log off. Test-only (docs/internals.md): the soak shows its
// checker fails without the log.
const NoAnswerLogEnv = "SITEWATCH_TEST_NO_ANSWER_LOG"

// bucketAnswerLog is the answer log of runs on cfg's bucket (nil without the lease: then
// nothing fences paid calls either).
func bucketAnswerLog(ctx context.Context, cfg *config.Config, env pipeline.Env) (pipeline.AnswerLog, error) {
	if cfg.Publish.URL == "" || !cfg.Publish.LeaseOn() || env.Getenv(NoAnswerLogEnv) == "1" {
		return nil, nil
	}
	p, err := publish.New(ctx, cfg.Publish, publish.Options{Logger: env.Logger, Small: true})
	if err != nil {
		return nil, err
	}
	margin := lease.TimingFor(cfg.Publish.LeaseDuration(), cfg.API.Timeout.Duration).Margin
	return runAnswerLog{&answerlog.Starter{Bucket: p, URL: cfg.Publish.URL, ParquetRoot: cfg.Warehouse.Parquet,
		Interval: cfg.Publish.LogEvery(), Attempt: margin, CloseBound: pipeline.AutoPublishBound, Logger: env.Logger}}, nil
}

// runAnswerLog adapts *answerlog.Starter to the core's interface.
type runAnswerLog struct{ s *answerlog.Starter }

func (l runAnswerLog) Start(ctx context.Context, runID string, wh *warehouse.Warehouse, fence pipeline.LogFence) func() {
	return l.s.Start(ctx, runID, wh, fence)
}
