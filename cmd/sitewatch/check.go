package main

import (
	"context"
	"errors"
	"fmt"

	"sitewatch/pipeline"
	"sitewatch/pipeline/atlas"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/textout"
)

var checkHelp = help{
	summary: "preflight for 0 credits: config, reachability, key, balance, rate limit, and whether the balance covers the next run",
	usage:   "[--config F]",
	examples: []string{
		"sitewatch check && sitewatch run",
		"sitewatch check; echo $?   # 0 ready, 1 unreachable, 2 config, 3 not enough credits, 4 key rejected",
	},
}

func cmdCheck(ctx context.Context, args []string, env pipeline.Env) error {
	f := newFlags("check", env, true, false)
	cfg, err := f.parse(args, env, 0, 0)
	if err != nil {
		return err
	}
	wl := config.NewWatchlist(cfg)
	fmt.Fprintf(env.Stdout, "config      ok: %s (%s, mode %s)\n", cfg.Path, textout.Plural(len(wl.Domains), "domain", "domains"), cfg.API.Mode)
	if line := wl.SkippedLine(); line != "" {
		fmt.Fprintf(env.Stdout, "watchlist   %s\n", line)
	}
	r, err := pipeline.Check(ctx, cfg, env)
	var unreachable *atlas.UnreachableError
	switch {
	case errors.As(err, &unreachable):
		fmt.Fprintf(env.Stdout, "reachable   NO: %s failed\n", unreachable.Stage)
		return err
	case errors.Is(err, atlas.ErrUnauthorized):
		fmt.Fprintln(env.Stdout, "reachable   ok\nkey         REJECTED: check ATLAS_API_KEY (and, in marketplace mode, ATLAS_MARKETPLACE_KEY)")
		return err
	case r == nil && err != nil:
		return err
	}
	fmt.Fprintf(env.Stdout, "reachable   ok (%s)\nkey         accepted\n", r.Probe.Latency.Round(1e6))
	if r.Plan.Snapshot != "" {
		fmt.Fprintf(env.Stdout, "warehouse   newest month %s: %d of %d domains loaded\n", r.Plan.Snapshot, r.Plan.Loaded, r.Plan.Domains)
	}
	printReadiness(env.Stdout, r)
	if err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout, "ready: 0 credits spent by this check")
	return nil
}
