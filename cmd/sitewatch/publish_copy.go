package main

import (
	"context"
	"fmt"
	"io"
	"slices"

	"sitewatch/pipeline/config"
	"sitewatch/pipeline/publish"
)

// monthsHeld lists, oldest first, the months of the Parquet tree and the months a run learned
// (ran): a run killed before its first export left a month only the warehouse knows.
func monthsHeld(parquetRoot string, ran []string) ([]string, error) {
	months, err := publish.Months(parquetRoot)
	if err != nil && len(ran) == 0 {
		return nil, err
	}
	for _, m := range ran {
		if !slices.Contains(months, m) {
			months = append(months, m)
		}
	}
	slices.Sort(months)
	return months, nil
}

// saveRestoreCopy saves the restore copy of month, a month no run completed: its raw answers,
// ledger and run health, exported from the warehouse first (a run killed mid-month left the
// Parquet tree behind it), so the next runner resumes it without paying again.
func saveRestoreCopy(ctx context.Context, cfg *config.Config, env Env, p *publish.Publisher, month string) error {
	wh, err := openWarehouse(ctx, cfg, env, false)
	if err != nil {
		return fmt.Errorf("save the restore copy of %s: %w", month, err)
	}
	err = wh.ExportRestoreCopy(ctx, month)
	if cerr := wh.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("save the restore copy of %s: %w", month, err)
	}
	res, err := p.SaveRestoreCopy(ctx, cfg.Warehouse.Parquet, month, "", cfg.Publish.WritesHive())
	if err != nil {
		return err
	}
	printRestoreCopy(env.Stdout, res)
	return nil
}

// printRestoreCopy says what saving a restore copy did.
func printRestoreCopy(w io.Writer, r publish.Result) {
	if r.Files == 0 {
		return // the bucket holds the complete month: no copy needed
	}
	if r.Uploaded == 0 && r.Deleted == 0 && !r.ManifestWritten {
		fmt.Fprintf(w, "the restore copy of %s at %s is up to date: %d files, %d rows unchanged; nothing uploaded\n", r.Month, r.ManifestURL, r.Files, r.Rows)
		return
	}
	fmt.Fprintf(w, "saved the restore copy of %s to %s (raw answers, ledger, run health: %d files, %d rows; %d uploaded, %d unchanged): `sitewatch restore` resumes from it\n",
		r.Month, r.ManifestURL, r.Files, r.Rows, r.Uploaded, r.Unchanged)
}
