package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"sitewatch/pipeline"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/model"
	monthrule "sitewatch/pipeline/months"
	"sitewatch/pipeline/publish"
)

var publishHelp = help{
	summary: "upload the Parquet of complete months to the configured object storage (publish.url), and the restore copy (raw answers, ledger) of incomplete ones; spends no credits",
	usage:   "[--config F] [--snapshot YYYY-MM | --all] [--verify] [--read-data]",
	examples: []string{
		"sitewatch publish                    # the newest month held",
		"sitewatch publish --all              # every month with a complete run (the others: their restore copy); unchanged files are not uploaded again",
		"sitewatch publish --verify           # read the bucket back: every object against its manifest; uploads nothing (--all repairs what differs)",
		"sitewatch publish --verify --read-data   # download and hash every object (slow: reads the whole bucket)",
		"sitewatch publish --all --read-data      # upload again every object whose bytes differ, even under the same metadata",
		"sitewatch publish --snapshot 2026-10",
	},
}

// cmdPublish uploads months of the Parquet tree to publish.url; it calls no API.
func cmdPublish(ctx context.Context, args []string, env Env) error {
	f := newFlags("publish", env, true, true)
	all := f.fs.Bool("all", false, "publish every month with a complete run")
	verify := f.fs.Bool("verify", false, "read the bucket back: check every object against its manifest and report each that differs (exit 1 if any); uploads nothing")
	readData := f.fs.Bool("read-data", false, "with --verify or --all: download and hash every published object instead of trusting its size and checksum metadata")
	f.check = func() error {
		if *all && f.snapshot != "" {
			return &UsageError{Msg: "--all and --snapshot contradict each other: give one"}
		}
		if *verify && (*all || f.snapshot != "") {
			return &UsageError{Msg: "--verify checks every published month: give it alone"}
		}
		if *readData && !*verify && !*all {
			return &UsageError{Msg: "--read-data goes with --verify (check every object's bytes) or --all (upload again those that differ)"}
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
	if *verify {
		return verifyBucket(ctx, cfg, env, *readData)
	}
	// GuardRuns: never over a month another machine ran after this warehouse last synced.
	// FoldLogs: under the lease, the answer log's segments this warehouse holds are removed once
	// their month's manifest holds their rows.
	p, err := publish.New(ctx, cfg.Publish, publish.Options{Logger: env.Logger, GuardRuns: true, ReadData: *readData, FoldLogs: cfg.Publish.LeaseOn()})
	if err != nil {
		return err
	}
	// One publisher at a time per bucket: the lease a run holds through its own publish.
	if cfg.Publish.LeaseOn() {
		held, release, err := newLease(p, cfg, env, "publish").Take(ctx)
		if err != nil {
			return err
		}
		defer release()
		ctx = held
		if err := pullBeforePublish(ctx, cfg, env); err != nil {
			return err
		}
	}
	runs, ran, err := completeRuns(ctx, cfg, env)
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
		if months, err = monthsHeld(cfg.Warehouse.Parquet, ran); err != nil {
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
		if _, ok := runs[m]; !ok {
			// Its paid answers still go to the bucket, apart from the tables: the restore copy.
			if err := saveRestoreCopy(ctx, cfg, env, p, m); err != nil {
				return err
			}
			if f.snapshot == "" {
				fmt.Fprintf(env.Stdout, "skipped %s's tables: no complete run, and an incomplete month is never published (%s)\n", m, monthrule.FinishAdvice(m, slices.Max(months), time.Now()))
				continue
			}
			return fmt.Errorf("%s has no complete run in %s: an incomplete month is never published, only its restore copy (finish it with `sitewatch run` while the API serves it)", m, cfg.Warehouse.DuckDB)
		}
		if !cfg.Publish.WritesHive() { // iceberg alone: restore still reads only the bucket
			res, err := p.SaveRestoreCopy(ctx, cfg.Warehouse.Parquet, m, runs[m], false)
			if err != nil {
				return err
			}
			printRestoreCopy(env.Stdout, res)
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

// pullBeforePublish takes into the warehouse, under the lease, every version the bucket holds
// that names a run the warehouse lacks (0 credits), as a run does before it plans. Without it
// a publish that finds the bucket's month naming another machine's run (its up-to-date
// probe, or a month it ran) could only refuse (GuardRuns), and this warehouse's own new
// ledger rows (its probe) would never reach the bucket; with it the publish uploads the
// union of both ledgers over the version it read (If-Match).
func pullBeforePublish(ctx context.Context, cfg *config.Config, env Env) error {
	if _, err := os.Stat(cfg.Warehouse.DuckDB); err != nil {
		return nil // no warehouse: nothing to publish, completeRuns says so
	}
	sync, err := bucketSync(ctx, cfg, env)
	if err != nil || sync == nil {
		return err
	}
	wh, err := openWarehouse(ctx, cfg, env, false)
	if err != nil {
		// Another process reads the file (a BI tool): publish as before; GuardRuns still
		// refuses to write over a version naming a run this warehouse lacks.
		env.Logger.Warn("could not take in the bucket's newer versions before publishing: the warehouse is held; a month the bucket holds newer is refused, not overwritten",
			"file", cfg.Warehouse.DuckDB, "err", err)
		return nil
	}
	if err := sync.Pull(ctx, wh); err != nil {
		_ = wh.Close() // what was pulled is committed
		return err
	}
	if err := wh.Close(); err != nil {
		return fmt.Errorf("take in what %s holds before publishing over it: %w; nothing was published", cfg.Publish.URL, err)
	}
	return nil
}

// completeRuns maps each month with a complete run to its latest such run, read from the
// warehouse. Without the runs nothing can tell a complete month from one a run is still
// loading, so an unreadable warehouse is an error: nothing is published.
// ran lists every month a run learned, complete or not.
func completeRuns(ctx context.Context, cfg *config.Config, env Env) (complete map[string]string, ran []string, err error) {
	wh, err := openWarehouse(ctx, cfg, env, true)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read the runs, so cannot tell which months are complete; nothing was published (if a run holds the warehouse, it publishes its month itself; else retry after it): %w", err)
	}
	defer func() { _ = wh.Close() }() // read-only
	records, err := wh.Runs(ctx, 1_000_000)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read the runs of %s; nothing was published: %w", cfg.Warehouse.DuckDB, err)
	}
	// A run killed before its end recorded no month: the newest month of the raw answers is it.
	latest, err := wh.LatestMonth(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read the months of %s; nothing was published: %w", cfg.Warehouse.DuckDB, err)
	}
	for _, r := range append(records, model.RunRecord{SnapshotMonth: latest}) {
		if r.SnapshotMonth != "" && !slices.Contains(ran, r.SnapshotMonth) {
			ran = append(ran, r.SnapshotMonth)
		}
	}
	return latestComplete(records), ran, nil
}

func latestComplete(records []model.RunRecord) map[string]string {
	runs := map[string]string{}
	for _, r := range records { // newest first
		if _, seen := runs[r.SnapshotMonth]; !seen && r.Status == pipeline.StatusComplete {
			runs[r.SnapshotMonth] = r.RunID
		}
	}
	return runs
}

// verifyBucket serves `publish --verify`: every object of every manifest against the
// checksums the bucket holds.
func verifyBucket(ctx context.Context, cfg *config.Config, env Env, readData bool) error {
	p, err := publish.New(ctx, cfg.Publish, publish.Options{Logger: env.Logger, ReadData: readData})
	if err != nil {
		return err
	}
	checked, bad := 0, 0
	// The restore copies (months the Hive layout lacks) are checked like the months.
	for _, b := range []*publish.Publisher{p, p.RestoreCopies()} {
		n, mismatches, err := b.Verify(ctx)
		if err != nil {
			return err
		}
		for _, m := range mismatches {
			fmt.Fprintf(env.Stdout, "differs: %s (listed in %s): %s\n", b.URL(m.Key), b.URL(m.Manifest), m.Problem)
		}
		checked, bad = checked+n, bad+len(mismatches)
	}
	if bad > 0 {
		again := "`sitewatch publish --all`"
		if readData {
			again = "`sitewatch publish --all --read-data`"
		}
		return fmt.Errorf("%d of %d published objects differ from their manifests: run %s where the warehouse is to upload them again (it checks every object)", bad, checked, again)
	}
	how := "size and checksum metadata"
	if readData {
		how = "bytes downloaded and hashed"
	}
	fmt.Fprintf(env.Stdout, "verified %s: all %d objects match their manifests (%s)\n", cfg.Publish.URL, checked, how)
	return nil
}

func printPublished(w io.Writer, url string, r publish.Result) {
	if r.Uploaded == 0 && r.Deleted == 0 && !r.ManifestWritten {
		fmt.Fprintf(w, "%s already published to %s: %d files, %d rows unchanged; nothing uploaded\n", r.Month, url, r.Files, r.Rows)
		return
	}
	fmt.Fprintf(w, "published %s to %s: %d files, %d rows; %d uploaded (%.1f MB), %d unchanged, %d deleted; manifest %s (%s)\n",
		r.Month, url, r.Files, r.Rows, r.Uploaded, float64(r.UploadedBytes)/1e6, r.Unchanged, r.Deleted, r.ManifestURL, r.Duration.Round(1e6))
}

// publishJSON is sections.publish of `status`: months of the local Parquet tree not yet
// published as they are (null when publish.url is not set).
type publishJSON struct {
	URL         string   `json:"url"`
	Unpublished []string `json:"unpublished"`
	// BucketNewer are the months the bucket holds in a version this warehouse has not taken
	// in (another machine's run): `sitewatch run` pulls them; publishing them would overwrite.
	BucketNewer []string `json:"bucket_newer"`
	Error       string   `json:"error,omitempty"` // the bucket could not be compared
}

func collectPublish(ctx context.Context, db *sql.DB, cfg *config.Config) (any, error) {
	if cfg.Publish.URL == "" {
		return nil, nil
	}
	out := &publishJSON{URL: cfg.Publish.URL, Unpublished: []string{}, BucketNewer: []string{}}
	// status answers within statusSectionBound (status.go) even when the bucket hangs.
	p, err := publish.New(ctx, cfg.Publish, publish.Options{MaxAttempts: 2, Deadlines: publish.Deadlines{FirstByte: 10 * time.Second, Idle: 10 * time.Second}})
	if err == nil {
		var pending, newer []string
		if pending, newer, err = p.Compare(ctx, cfg.Warehouse.Parquet); err == nil {
			out.BucketNewer = append(out.BucketNewer, newer...)
			if cfg.Publish.WritesHive() {
				out.Unpublished = append(out.Unpublished, pending...)
			}
		}
	}
	if err == nil && cfg.Publish.WritesIceberg() {
		var pending []string
		if pending, err = icebergPending(ctx, db, cfg); err == nil {
			out.Unpublished = withoutMonths(unionMonths(out.Unpublished, pending), out.BucketNewer)
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
	if p.Error == "" && len(p.BucketNewer) > 0 {
		if _, err := fmt.Fprintf(w, "publish: %s holds newer versions of %s (runs of another machine): `sitewatch run` takes them in first (0 credits); publishing them from here would overwrite them\n",
			p.URL, strings.Join(p.BucketNewer, ", ")); err != nil {
			return err
		}
	}
	switch {
	case p.Error != "":
		_, err := fmt.Fprintf(w, "publish: %s: cannot compare with the bucket: %s\n", p.URL, p.Error)
		return err
	case len(p.Unpublished) == 0 && len(p.BucketNewer) > 0:
		return nil
	case len(p.Unpublished) == 0:
		_, err := fmt.Fprintf(w, "publish: %s: every month is published\n", p.URL)
		return err
	}
	_, err := fmt.Fprintf(w, "publish: %s: not yet published: %s (`sitewatch publish --all`)\n", p.URL, strings.Join(p.Unpublished, ", "))
	return err
}
