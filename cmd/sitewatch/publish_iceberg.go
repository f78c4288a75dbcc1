package main

import (
	"context"
	"fmt"
	"io"

	"sitewatch/pipeline/config"
	"sitewatch/pipeline/publish"
	"sitewatch/pipeline/publish/iceberg"
)

// openIceberg connects to publish.catalog when publish.format writes Iceberg; nil otherwise.
// publishFormats are the formats a run's own publish writes after the Hive layout: the Iceberg
// tables (each skips itself unless publish.format names it). The run learns them here, from the
// wiring, not from a registry an import would fill.
func publishFormats() []publish.MonthHook { return []publish.MonthHook{iceberg.AfterRun} }

func openIceberg(ctx context.Context, cfg *config.Config, env Env) (*iceberg.Publisher, error) {
	if !cfg.Publish.WritesIceberg() {
		return nil, nil
	}
	return iceberg.New(ctx, cfg.Publish, iceberg.Options{Logger: env.Logger, Getenv: env.Getenv})
}

func closeIceberg(p *iceberg.Publisher) {
	if p != nil {
		_ = p.Close() // only releases catalog connections
	}
}

// publishIceberg commits month to the Iceberg tables (nothing when p is nil) and prints what
// it did.
func publishIceberg(ctx context.Context, p *iceberg.Publisher, cfg *config.Config, month string, w io.Writer) error {
	if p == nil {
		return nil
	}
	res, err := p.Month(ctx, cfg.Warehouse.Parquet, month)
	if err != nil {
		return err
	}
	if res.Commits() == 0 {
		fmt.Fprintf(w, "%s already published as Iceberg (namespace %s): %d tables, %d rows unchanged; no commit\n",
			month, cfg.Publish.Namespace, len(res.Tables), res.Rows())
		return nil
	}
	fmt.Fprintf(w, "published %s as Iceberg (namespace %s): %d tables, %d rows; %d commits (runs last) in %s\n",
		month, cfg.Publish.Namespace, len(res.Tables), res.Rows(), res.Commits(), res.Duration.Round(1e6))
	return nil
}
