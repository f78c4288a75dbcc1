package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"sitewatch/pipeline/answerlog"
	"sitewatch/pipeline/bucketsync"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/model"
	"sitewatch/pipeline/publish"
	"sitewatch/pipeline/restore"
	"sitewatch/pipeline/warehouse"
	"sitewatch/pipeline/wire"
)

var restoreHelp = help{
	summary: "build the warehouse and the local Parquet tree from the bucket (publish.url); every object verified; spends no credits",
	usage:   "[--config F] [--from s3://bucket/prefix] [--force]",
	examples: []string{
		"sitewatch restore                                  # from publish.url, on a machine without a warehouse",
		"sitewatch restore --from s3://team-bucket/sitewatch",
		"sitewatch restore --force                          # replace the warehouse; the old file is kept aside",
	},
}

func cmdRestore(ctx context.Context, args []string, env Env) error {
	f := newFlags("restore", env, true, false)
	from := f.fs.String("from", "", "the published `s3://bucket/prefix` to restore from (default: publish.url)")
	force := f.fs.Bool("force", false, "replace an existing warehouse, keeping the old file beside it")
	cfg, err := f.parse(args, env, 0, 0)
	if err != nil {
		return err
	}
	if *from != "" {
		if _, err := publish.ParseURL(*from); err != nil {
			return &UsageError{Msg: "--from: " + err.Error()}
		}
		cfg.Publish.URL = *from
	}
	return restoreHolding(ctx, cfg, env, *force)
}

// restoreHolding restores as a run writes: alone on the warehouse file (its writer lock, so a
// running run or another restore makes it exit 1 at once, naming it) and alone on the bucket
// (its lease, so no runner publishes while it reads).
func restoreHolding(ctx context.Context, cfg *config.Config, env Env, force bool) error {
	unlock, err := wire.LockForRestore(cfg.Warehouse.DuckDB)
	if err != nil {
		return err
	}
	defer unlock()
	if cfg.Publish.URL != "" {
		l, err := bucketLease(ctx, cfg, env, "restore")
		if err != nil {
			return err
		}
		if l != nil {
			held, err := l.Hold(ctx)
			if err != nil {
				return err
			}
			defer held.Release()
			ctx = held.Context()
		}
	}
	return restoreWarehouse(ctx, cfg, env, force)
}

// restoreWarehouse restores cfg's warehouse from cfg.Publish.URL and prints what it did.
func restoreWarehouse(ctx context.Context, cfg *config.Config, env Env, force bool) error {
	if cfg.Publish.URL == "" {
		return &config.Error{Path: cfg.Path, Msg: "publish.url is not set: restore reads the bucket it names (or give --from s3://bucket/prefix)"}
	}
	src, err := publish.New(ctx, cfg.Publish, publish.Options{Logger: env.Logger})
	if err != nil {
		return err
	}
	if _, serr := os.Stat(cfg.Warehouse.DuckDB); serr != nil || force { // else restore.Run refuses: nothing is restored
		fmt.Fprintf(env.Stdout, "restoring %s from %s …\n", cfg.Warehouse.DuckDB, cfg.Publish.URL)
	}
	opts := restore.Options{DuckDB: cfg.Warehouse.DuckDB, Parquet: cfg.Warehouse.Parquet, Copies: src.RestoreCopies(),
		Force: force, MemoryLimit: cfg.Warehouse.MemoryLimit, Logger: env.Logger, URL: cfg.Publish.URL}
	if force { // never discards a paid answer the bucket lacks
		opts.BeforeReplace = func(ctx context.Context, built string) error { return keepLacking(ctx, cfg, env, src, built) }
	}
	res, err := restore.Run(ctx, src, opts)
	if errors.Is(err, restore.ErrNothingPublished) {
		return restoreLogOnly(ctx, cfg, env, src, err)
	}
	if err != nil {
		return err
	}
	if err := takeAnswerLog(ctx, cfg, env, src); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "restored %s and %s from %s: %d %s (%s … %s), %d objects verified, %d downloaded (%.1f MB), %s; 0 credits\n",
		cfg.Warehouse.DuckDB, cfg.Warehouse.Parquet, cfg.Publish.URL, len(res.Months), monthsWord(len(res.Months)),
		res.Months[0], res.Months[len(res.Months)-1], res.Objects, res.Downloaded, float64(res.Bytes)/1e6, res.Duration.Round(1e6))
	if len(res.FromCopies) > 0 {
		fmt.Fprintf(env.Stdout, "from restore copies (raw answers and ledger; tables rebuilt from them): %s; `sitewatch run` pays only for what they lack\n",
			strings.Join(res.FromCopies, ", "))
	}
	if res.MovedAside != "" {
		fmt.Fprintf(env.Stdout, "the previous warehouse is kept as %s\n", res.MovedAside)
	}
	return nil
}

// restoreLogOnly restores a bucket that holds no published month yet but holds the answer log
// of runs that paid before publishing anything (a first month's payer killed and its disk
// lost): a new warehouse takes those answers in, as a run's pull would, so they are not paid
// again. With no log either, or a warehouse already here, nothing is published to restore:
// nothingErr.
func restoreLogOnly(ctx context.Context, cfg *config.Config, env Env, src *publish.Publisher, nothingErr error) error {
	if _, err := os.Stat(cfg.Warehouse.DuckDB); !errors.Is(err, fs.ErrNotExist) {
		return nothingErr
	}
	_, logs, err := src.Listing(ctx)
	if err != nil {
		return err
	}
	if len(logs) == 0 {
		return nothingErr
	}
	fmt.Fprintf(env.Stdout, "nothing published at %s yet, but its answer log holds %d segments of runs that paid: taking them into a new warehouse\n",
		cfg.Publish.URL, len(logs))
	return takeAnswerLog(ctx, cfg, env, src)
}

// restoreIfMissing restores the warehouse first when its file is absent (runners without a
// disk of their own: `run --restore-if-missing`, `schedule --restore-if-missing`). A bucket
// with nothing published yet is a first run, not a failure. It restores under the bucket
// lease: a runner still writing the bucket would leave this one a copy older than what it
// paid for, and a warehouse file that keeps a later run from restoring again; so while
// another holds the lease it fails naming it, having restored (and spent) nothing.
func restoreIfMissing(ctx context.Context, cfg *config.Config, env Env) error {
	if _, err := os.Stat(cfg.Warehouse.DuckDB); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	err := restoreHolding(ctx, cfg, env, false) // the run takes the lease again before its first credit
	if errors.Is(err, restore.ErrNothingPublished) {
		return firstRun(ctx, cfg, env)
	}
	return err
}

// firstRun accepts a bucket without a manifest as a first run only when its prefix is empty:
// one that holds other objects (Iceberg tables published before restore copies existed) holds
// months a new warehouse would pay for again.
func firstRun(ctx context.Context, cfg *config.Config, env Env) error {
	p, err := publish.New(ctx, cfg.Publish, publish.Options{Logger: env.Logger})
	if err != nil {
		return err
	}
	held, err := p.HoldsObjectsRestoreCannotRead(ctx)
	if err != nil {
		return err
	}
	if held {
		return fmt.Errorf("%s holds objects but nothing `sitewatch restore` reads (no manifest under _manifests/ or %s/_manifests/: Iceberg tables published by an older sitewatch?); "+
			"a new warehouse here would pay again for the months it holds, so nothing was started: run `sitewatch publish --all` on the machine that holds the warehouse "+
			"(it writes the restore copies), or set publish.url to an empty prefix to start anew", cfg.Publish.URL, publish.RestoreCopyDir)
	}
	fmt.Fprintf(env.Stdout, "nothing published at %s yet: starting a new warehouse\n", cfg.Publish.URL)
	return nil
}

// monthsWord is "month" or "months" for n.
func monthsWord(n int) string {
	if n == 1 {
		return "month"
	}
	return "months"
}

// takeAnswerLog merges into the restored warehouse the answer log's segments of every run
// (answers paid since their month's last publish), as a run's pull would: a restore holds
// every answer the bucket holds.
func takeAnswerLog(ctx context.Context, cfg *config.Config, env Env, src *publish.Publisher) error {
	wh, err := warehouse.Open(ctx, warehouse.Options{DuckDBPath: cfg.Warehouse.DuckDB, ParquetDir: cfg.Warehouse.Parquet, Logger: env.Logger,
		LoadMemoryLimit: cfg.Warehouse.MemoryLimit})
	if err != nil {
		return err
	}
	res, err := bucketsync.New(src, cfg.Publish.URL, cfg.Warehouse.DuckDB, cfg.Warehouse.Parquet, env.Logger).Pull(ctx, wh)
	if cerr := wh.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("restore: take in the answer log of %s: %w", cfg.Publish.URL, err)
	}
	printLogged(env, cfg.Publish.URL, res.Logged)
	return nil
}

// keepLacking runs before `restore --force` replaces the warehouse: the charged calls of the
// warehouse being replaced that the bucket lacks (its months, copies and answer log, all in
// the warehouse just built) are named and saved to the answer log, then taken into the
// built warehouse. If they cannot be saved, nothing is replaced.
func keepLacking(ctx context.Context, cfg *config.Config, env Env, src *publish.Publisher, built string) error {
	wh, err := warehouse.Open(ctx, warehouse.Options{DuckDBPath: built, ParquetDir: cfg.Warehouse.Parquet, Logger: env.Logger,
		LoadMemoryLimit: cfg.Warehouse.MemoryLimit})
	if err != nil {
		return err
	}
	err = keepLackingIn(ctx, cfg, env, src, wh)
	if cerr := wh.Close(); err == nil {
		err = cerr
	}
	return err
}

func keepLackingIn(ctx context.Context, cfg *config.Config, env Env, src *publish.Publisher, wh *warehouse.Warehouse) error {
	_, logs, err := src.Listing(ctx)
	if err != nil {
		return err
	}
	held, _, err := answerlog.Read(ctx, src, logs)
	if err == nil {
		err = mergeRebuilt(ctx, wh, held)
	}
	if err != nil {
		return err
	}
	lacking, err := wh.LackingFrom(ctx, cfg.Warehouse.DuckDB)
	if err != nil || len(lacking.Charges) == 0 {
		return err
	}
	what := describeCalls(lacking.Charges)
	id := "restore-force-" + time.Now().UTC().Format("20060102T150405.000Z")
	keys, err := answerlog.Save(ctx, src, id, lacking)
	if err != nil {
		return fmt.Errorf("%s holds %d charged calls the bucket lacks (%s), and they could not be saved to it: %w; nothing was replaced: "+
			"run `sitewatch publish` to save them first, or move %s away to discard them, then restore again",
			cfg.Warehouse.DuckDB, len(lacking.Charges), what, err, cfg.Warehouse.DuckDB)
	}
	if err := mergeRebuilt(ctx, wh, lacking); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "the warehouse being replaced held %d charged calls the bucket lacked (%s): saved to the answer log (%s) and kept in the restored warehouse\n",
		len(lacking.Charges), what, src.URL(keys[0]))
	return nil
}

// mergeRebuilt merges rows into wh and rebuilds the months that gained answers.
func mergeRebuilt(ctx context.Context, wh *warehouse.Warehouse, rows warehouse.LogRows) error {
	if rows.Len() == 0 {
		return nil
	}
	added, err := wh.MergeLog(ctx, rows)
	if err != nil {
		return err
	}
	for _, m := range rows.Months() {
		if added[m] > 0 {
			if _, err := wh.RebuildRestored(ctx, m); err != nil {
				return err
			}
		}
	}
	return nil
}

// describeCalls names charged calls, by run, the first few of each.
func describeCalls(cs []model.Charge) string {
	byRun, month := map[string][]string{}, map[string]string{}
	var runs []string
	for _, c := range cs {
		if byRun[c.RunID] == nil {
			runs = append(runs, c.RunID)
			month[c.RunID] = c.SnapshotMonth
		}
		byRun[c.RunID] = append(byRun[c.RunID], fmt.Sprintf("%s %s", c.Endpoint, model.DisplayDomain(c.Domain)))
	}
	var parts []string
	for _, r := range runs {
		calls := byRun[r]
		more := ""
		if len(calls) > 5 {
			calls, more = calls[:5], fmt.Sprintf(" and %d more", len(byRun[r])-5)
		}
		parts = append(parts, fmt.Sprintf("run %s of %s: %s%s", r, month[r], strings.Join(calls, ", "), more))
	}
	return strings.Join(parts, "; ")
}
