package main

import (
	"context"

	"sitewatch/pipeline"
	"sitewatch/pipeline/changes"
)

var changesHelp = help{
	summary: "the domains that need attention, then what changed between the two latest complete months: movers, competitors, AI platforms, keywords, countries, quality",
	usage:   "[--config F] [--snapshot YYYY-MM]",
	examples: []string{
		"sitewatch changes",
		"sitewatch changes --snapshot 2026-10   # that month against the complete month before it",
	},
}

func cmdChanges(ctx context.Context, args []string, env pipeline.Env) error {
	f := newFlags("changes", env, true, true)
	// --month was this command's flag before --snapshot named the month everywhere.
	f.fs.StringVar(&f.snapshot, "month", "", "alias of --snapshot: the complete `month` to describe")
	f.fs.Lookup("snapshot").Usage = "the complete `month` to describe, YYYY-MM (default: the latest complete month)"
	f.check = func() error {
		if f.set("month") && f.set("snapshot") {
			return &UsageError{Msg: "--month is an alias of --snapshot: pass one"}
		}
		return nil
	}
	cfg, wh, err := f.parseAndOpen(ctx, args, env, 0, 0, true)
	if err != nil {
		return err
	}
	defer func() { _ = wh.Close() }() // read-only
	d, err := changes.BuildWith(ctx, wh.DB(), f.snapshot, pipeline.AttentionSettings(cfg))
	if err != nil {
		return err
	}
	return d.WriteText(env.Stdout)
}
