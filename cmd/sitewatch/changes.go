package main

import (
	"context"
	"fmt"
	"time"

	"sitewatch/pipeline"
	"sitewatch/pipeline/changes"
)

var changesHelp = help{
	summary: "what changed between the two latest complete months: movers, competitors, AI platforms, keywords, countries, quality",
	usage:   "[--config F] [--month YYYY-MM]",
	examples: []string{
		"sitewatch changes",
		"sitewatch changes --month 2026-10   # that month against the complete month before it",
	},
}

func cmdChanges(ctx context.Context, args []string, env pipeline.Env) error {
	f := newFlags("changes", env, true, false)
	month := f.fs.String("month", "", "the complete `month` to describe, YYYY-MM (default: the latest complete month)")
	f.check = func() error {
		if *month == "" {
			return nil
		}
		if _, err := time.Parse("2006-01", *month); err != nil || len(*month) != 7 {
			return &UsageError{Msg: fmt.Sprintf("--month %q is not a month; write YYYY-MM", *month)}
		}
		return nil
	}
	_, wh, err := f.parseAndOpen(ctx, args, env, 0, 0, true)
	if err != nil {
		return err
	}
	defer func() { _ = wh.Close() }() // read-only
	d, err := changes.Build(ctx, wh.DB(), *month)
	if err != nil {
		return err
	}
	return d.WriteText(env.Stdout)
}
