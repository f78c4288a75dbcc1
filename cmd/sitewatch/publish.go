package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strings"

	"sitewatch/pipeline"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/publish"
	"sitewatch/pipeline/warehouse"
)

var publishHelp = help{
	summary: "upload the Parquet of complete months to the configured object storage (publish.url); spends no credits",
	usage:   "[--config F] [--snapshot YYYY-MM | --all]",
	examples: []string{
		"sitewatch publish                    # the newest month held",
		"sitewatch publish --all              # every month with a complete run; unchanged files are not uploaded again",
		"sitewatch publish --snapshot 2026-10",
	},
}

// cmdPublish uploads months of the Parquet tree to publish.url; it calls no API.
func cmdPublish(ctx context.Context, args []string, env pipeline.Env) error {
	f := newFlags("publish", env, true, true)
	all := f.fs.Bool("all", false, "publish every month with a complete run")
	f.check = func() error {
		if *all && f.snapshot != "" {
			return &UsageError{Msg: "--all and --snapshot contradict each other: give one"}
		}
		return nil
	}
	cfg, err := f.parse(args, env, 0, 0)
	if err != nil {
		return err
	}
	if cfg.Publish.URL == "" {
		return &config.Error{Path: cfg.Path, Msg: "publish.url is not set: add a publish: section with url: s3://bucket/prefix (and endpoint, region, path_style for S3-compatible services)"}
	}
	runs := completeRuns(ctx, cfg, env)
	p, err := publish.New(ctx, cfg.Publish, publish.Options{Logger: env.Logger, Version: buildVersion()})
	if err != nil {
		return err
	}
	lake, err := openIceberg(ctx, cfg, env) // nil unless publish.format is iceberg or both
	if err != nil {
		return err
	}
	defer closeIceberg(lake)
	months := []string{f.snapshot}
	if *all || f.snapshot == "" {
		if months, err = publish.Months(cfg.Warehouse.Parquet); err != nil {
			return err
		}
	}
	if !*all && f.snapshot == "" {
		if len(months) == 0 {
			return fmt.Errorf("no month in the Parquet tree %s yet: run `sitewatch run` first", cfg.Warehouse.Parquet)
		}
		slices.Sort(months)
		months = months[len(months)-1:] // the newest month held
	}
	for _, m := range months {
		if _, ok := runs[m]; runs != nil && !ok {
			if *all {
				fmt.Fprintf(env.Stdout, "skipped %s: no complete run (finish it with `sitewatch run --snapshot %s`, or publish it as it is with --snapshot %s)\n", m, m, m)
				continue
			}
			fmt.Fprintf(env.Stdout, "note: %s has no complete run; publishing the month's Parquet as it is\n", m)
		}
		if cfg.Publish.WritesHive() {
			res, err := p.Month(ctx, cfg.Warehouse.Parquet, m, runs[m])
			if err != nil {
				return err
			}
			printPublished(env.Stdout, cfg.Publish.URL, res)
		}
		if err := publishIceberg(ctx, lake, cfg, m, env.Stdout); err != nil {
			return err
		}
	}
	return nil
}

// completeRuns maps each month with a complete run to its latest such run, read from the
// warehouse; nil when the warehouse cannot be read (a run holds it): every month is published.
func completeRuns(ctx context.Context, cfg *config.Config, env pipeline.Env) map[string]string {
	wh, err := openWarehouse(ctx, cfg, env, true)
	if err != nil {
		fmt.Fprintf(env.Stdout, "note: cannot read the runs (%v); publishing without run IDs\n", err)
		return nil
	}
	defer func() { _ = wh.Close() }() // read-only
	records, err := wh.Runs(ctx, 1_000_000)
	if err != nil {
		fmt.Fprintf(env.Stdout, "note: cannot read the runs (%v); publishing without run IDs\n", err)
		return nil
	}
	return latestComplete(records)
}

func latestComplete(records []warehouse.RunRecord) map[string]string {
	runs := map[string]string{}
	for _, r := range records { // newest first
		if _, seen := runs[r.SnapshotMonth]; !seen && r.Status == pipeline.StatusComplete {
			runs[r.SnapshotMonth] = r.RunID
		}
	}
	return runs
}

func printPublished(w io.Writer, url string, r publish.Result) {
	if r.Uploaded == 0 && r.Deleted == 0 && !r.ManifestWritten {
		fmt.Fprintf(w, "%s already published to %s: %d files, %d rows unchanged; nothing uploaded\n", r.Month, url, r.Files, r.Rows)
		return
	}
	fmt.Fprintf(w, "published %s to %s: %d files, %d rows; %d uploaded (%.1f MB), %d unchanged, %d deleted; manifest %s (%s)\n",
		r.Month, url, r.Files, r.Rows, r.Uploaded, float64(r.UploadedBytes)/1e6, r.Unchanged, r.Deleted, r.ManifestURL, r.Duration.Round(1e6))
}

// buildVersion is the module version the binary was built from ("(devel)" in a work tree).
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "unknown"
}

// publishJSON is sections.publish of `status`: months of the local Parquet tree not yet
// published as they are (null when publish.url is not set).
type publishJSON struct {
	URL         string   `json:"url"`
	Unpublished []string `json:"unpublished"`
	Error       string   `json:"error,omitempty"` // the bucket could not be compared
}

func collectPublish(ctx context.Context, _ *sql.DB, cfg *config.Config) (any, error) {
	if cfg.Publish.URL == "" {
		return nil, nil
	}
	out := &publishJSON{URL: cfg.Publish.URL, Unpublished: []string{}}
	p, err := publish.New(ctx, cfg.Publish, publish.Options{})
	if err == nil {
		var pending []string
		if pending, err = p.Pending(ctx, cfg.Warehouse.Parquet); err == nil {
			out.Unpublished = append(out.Unpublished, pending...)
		}
	}
	if err != nil {
		out.Error = err.Error()
	}
	return out, nil
}

func printPublishStatus(w io.Writer, v any) error {
	p, ok := v.(*publishJSON)
	if !ok || p == nil {
		return nil
	}
	switch {
	case p.Error != "":
		_, err := fmt.Fprintf(w, "publish: %s: cannot compare with the bucket: %s\n", p.URL, p.Error)
		return err
	case len(p.Unpublished) == 0:
		_, err := fmt.Fprintf(w, "publish: %s: every month is published\n", p.URL)
		return err
	}
	_, err := fmt.Fprintf(w, "publish: %s: not yet published: %s (`sitewatch publish --all`)\n", p.URL, strings.Join(p.Unpublished, ", "))
	return err
}
