package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"sitewatch/pipeline"
	"sitewatch/pipeline/bucketsync"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/publish"
	"sitewatch/pipeline/warehouse"
	"sitewatch/pipeline/wire"
)

// bucketSync is the sync a run makes with cfg's bucket before it plans (nil without
// publish.url): it prints each month it took in.
func bucketSync(ctx context.Context, cfg *config.Config, env Env) (*printingSync, error) {
	if cfg.Publish.URL == "" {
		return nil, nil
	}
	opts := publish.Options{Logger: env.Logger}
	if !cfg.Publish.LeaseOn() {
		// Without the lease the sync is advice, not the fence: a bucket that does not answer
		// delays the run by seconds (two tries, 5 s to the first byte), not by the minutes a
		// publish may wait.
		opts.MaxAttempts, opts.Deadlines = 2, publish.Deadlines{FirstByte: 5 * time.Second, Idle: 10 * time.Second}
	}
	p, err := publish.New(ctx, cfg.Publish, opts)
	if err != nil {
		return nil, err
	}
	return &printingSync{s: bucketsync.New(p, cfg.Publish.URL, cfg.Warehouse.DuckDB, cfg.Warehouse.Parquet, env.Logger), env: env, url: cfg.Publish.URL,
		required: cfg.Publish.LeaseOn()}, nil
}

// bindBucket wires the bucket into env: its read side for plans (Env.Sync) and, bound to the
// warehouse a run opens, its pull and the answer log (Env.Warehouses). A nil sync or log is
// no bucket, no log.
func bindBucket(env *Env, sync *printingSync, log wire.AnswerLog) {
	w := wire.Warehouses{AnswerLog: log}
	if sync != nil {
		env.Sync, w.Sync = sync, sync
	}
	env.Warehouses = w
}

type printingSync struct {
	s   *bucketsync.Syncer
	env Env
	url string
	// required: a bucket that cannot be read stops the run before its first credit. With
	// publish.lease: off the bucket is not the fence of who pays: the run goes on, warned.
	required bool
}

func (p *printingSync) Pull(ctx context.Context, wh *warehouse.Warehouse) error {
	res, err := p.s.Pull(ctx, wh)
	for _, m := range res.Pulled {
		what := m.Month
		if m.Copy {
			what += " (restore copy of an incomplete month)"
		}
		fmt.Fprintf(p.env.Stdout, "took %s from %s (run %s, paid on another machine): 0 credits\n", what, p.url, m.RunID)
	}
	printLogged(p.env, p.url, res.Logged)
	switch {
	case err != nil && p.required:
		return fmt.Errorf("%w; nothing was paid (`sitewatch check` tells whether the bucket is reachable)", err)
	case err != nil:
		p.env.Logger.Warn("publish.lease is off: the run goes on without knowing what the bucket holds, and may pay for what another machine paid", "err", err)
	}
	return nil
}

func (p *printingSync) Peek(ctx context.Context, month string) (pipeline.BucketPeek, error) {
	pk, err := p.s.Peek(ctx, month)
	return pipeline.BucketPeek{URL: p.url, Month: pk.Month, Complete: pk.Complete, State: pk.State, Answers: pk.Answers}, err
}

// printLogged prints what a pull took from the answer log.
func printLogged(env Env, url string, logged []bucketsync.Logged) {
	for _, l := range logged {
		if l.Answers > 0 {
			fmt.Fprintf(env.Stdout, "took %d answers of %s from the answer log of %s (runs %s, paid on another machine or before this warehouse was lost): 0 credits\n",
				l.Answers, l.Month, url, strings.Join(l.Runs, ", "))
		}
	}
}
