package publish

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"sitewatch/pipeline/config"
	"sitewatch/pipeline/model"
)

// RestoreCopyDir is the folder under the prefix that holds the restore copy of the months the
// Hive layout does not hold: a month no run completed yet (a runner stopped for credits, or was
// killed), and every month when publish.format is iceberg alone. It holds what `sitewatch
// restore` needs to resume such a month without paying again (the raw answers, the ledger and
// the run-health tables) in the same layout, under a manifest of its own:
//
//	_restore/<table>/snapshot_month=M/data_0.parquet
//	_restore/_manifests/snapshot_month=M.json
//
// No reader of the published tables sees it: it is no table's directory, and engines skip
// "_"-prefixed paths.
const RestoreCopyDir = "_restore"

// restoreCopyTables are the tables a restore copy holds: the derived tables are rebuilt from
// the raw answers by the restore (0 credits).
var restoreCopyTables = slices.Concat(model.ArchiveTables, model.RunHealthTables)

// RestoreCopies returns a Publisher rooted at the restore copies (RestoreCopyDir under the
// prefix): its Manifests, Download and Verify read them. Never take a lease through it.
func (p *Publisher) RestoreCopies() *Publisher {
	c := *p
	c.loc.Prefix = path.Join(p.loc.Prefix, RestoreCopyDir)
	c.statePrefix = RestoreCopyDir
	return &c
}

// SaveRestoreCopy uploads the restore copy of month from the Parquet tree at parquetRoot: its
// raw answers, ledger and run-health partitions, then their manifest, recording runID. Only
// what differs from the published copy is uploaded. When the Hive layout already holds month
// (complete), and hiveToo says it is written, nothing is saved: the complete month is what a
// restore takes. Errors are those of Month.
func (p *Publisher) SaveRestoreCopy(ctx context.Context, parquetRoot, month, runID string, hiveToo bool) (Result, error) {
	start := time.Now()
	c := p.RestoreCopies()
	res := Result{Month: month, ManifestURL: c.loc.URL(manifestRel(month))}
	if !monthRE.MatchString(month) {
		return res, fmt.Errorf("save the restore copy: month %q is not YYYY-MM", month)
	}
	if hiveToo {
		if m, err := p.readManifest(ctx, month); err != nil || m != nil {
			if m != nil {
				p.log.Info("the bucket holds the complete month: no restore copy saved", "month", month, "manifest", p.loc.URL(manifestRel(month)))
			}
			return res, err
		}
	}
	t, err := scanTree(parquetRoot)
	if err != nil {
		return res, err
	}
	all, err := t.monthFiles(month)
	if err != nil {
		return res, err
	}
	var files []localFile
	sums := p.sums(parquetRoot)
	for _, f := range all {
		if slices.Contains(restoreCopyTables, f.Table) {
			if err := f.describe(sums); err != nil {
				return res, err
			}
			files = append(files, f)
		}
	}
	p.saveSums(sums)
	keep := map[string]bool{}
	for _, f := range files {
		keep[f.Rel] = true
	}
	if err := c.publishSet(ctx, set{rel: manifestRel(month), root: parquetRoot, month: month, runID: runID, files: files, keep: keep}, &res); err != nil {
		return res, err
	}
	res.Duration = time.Since(start)
	p.log.Info("saved the restore copy", "month", month, "manifest", res.ManifestURL, "files", res.Files, "uploaded", res.Uploaded,
		"bytes", res.UploadedBytes, "took", res.Duration.Round(time.Millisecond))
	return res, nil
}

// dropRestoreCopy deletes the restore copy of s's month, once the Hive layout holds the complete
// month: its objects, then its manifest (a drop cut short leaves the manifest, and the next
// publish of the month finishes it; a restore meanwhile takes the complete month, never the
// copy). It reads the copy's manifest again rather than trusting guardRestoreCopy's read: a
// machine that took the bucket while this one published may have saved a copy since, and with
// Options.GuardRuns a copy naming a run this warehouse lacks is left standing (a StaleError: the
// next run pulls it and publishes both). A month without a restore copy costs one GET.
func (p *Publisher) dropRestoreCopy(ctx context.Context, s set) error {
	c := p.RestoreCopies()
	m, err := c.readManifest(ctx, s.month)
	if err != nil || m == nil {
		return err
	}
	if err := c.guard(ctx, set{rel: manifestRel(s.month), root: s.root, month: s.month, runID: s.runID}, m); err != nil {
		return err
	}
	for _, f := range m.Files {
		if err := c.delete(ctx, f.Key); err != nil {
			return err
		}
	}
	if err := c.delete(ctx, manifestRel(s.month)); err != nil {
		return err
	}
	p.log.Info("removed the restore copy of a month the bucket now holds complete", "month", s.month, "objects", len(m.Files))
	return nil
}

// guardRestoreCopy refuses (with Options.GuardRuns) to publish s's month complete over a
// restore copy of it that names a run this warehouse does not hold (another machine's probe
// or run, saved while this one could not reach the bucket): the publish drops the copy once
// the month stands and a restore prefers the complete month, so that run's ledger rows and
// answers would leave the bucket. The refusal is a *StaleError: `sitewatch run` pulls the
// copy first, and its publish then holds both. Seen in the fault soak: a payer cut off after
// its last call published when the cut healed, over a copy holding two other machines'
// probes, and the bucket's ledger lost them.
func (p *Publisher) guardRestoreCopy(ctx context.Context, s set) error {
	if !p.opts.GuardRuns {
		return nil
	}
	c := p.RestoreCopies()
	m, err := c.readManifest(ctx, s.month)
	if err != nil || m == nil {
		return err
	}
	return c.guard(ctx, set{rel: manifestRel(s.month), root: s.root, month: s.month, runID: s.runID}, m)
}

// SaveAfterStop saves the restore copy of month after a run that stopped before completing
// it, when cfg.URL is set (nil Result and error otherwise). Errors are those of New and
// SaveRestoreCopy.
func SaveAfterStop(ctx context.Context, cfg config.PublishConfig, parquetRoot, month, runID string, opts Options) (*Result, error) {
	opts.GuardRuns = true // never over a copy another machine saved after this one synced
	p, err := New(ctx, cfg, opts)
	if errors.Is(err, ErrDisabled) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	res, err := p.SaveRestoreCopy(ctx, parquetRoot, month, runID, cfg.WritesHive())
	return &res, err
}

// HoldsObjectsRestoreCannotRead reports whether the prefix holds an object a first run must not
// ignore: a prefix without a manifest is a first run only when it holds nothing but the bucket
// lease (under _sitewatch/), the answer log of runs that published nothing yet (a run's pull
// takes it in), and the files of a publish killed or cut before it wrote its first manifest
// (its commit point): the Hive layout's Parquet files (<table>/snapshot_month=M/<file>.parquet,
// <table>/<file>.parquet) and a restore copy's files (under _restore/), which nothing reads
// without a manifest and the next publish writes again. Any other object — a bucket of Iceberg
// tables published before restore copies existed (<table>/metadata/…, <table>/data/…) — holds
// months a new warehouse would pay for again. Before it ignored the orphans of an interrupted
// first publish, a bucket holding them refused every machine's --restore-if-missing for good
// (two of 100 fault-soak schedules: 900 refused runs in five minutes).
func (p *Publisher) HoldsObjectsRestoreCannotRead(ctx context.Context) (bool, error) {
	var prefix *string
	if p.loc.Prefix != "" {
		prefix = aws.String(p.loc.Prefix + "/")
	}
	pages := s3.NewListObjectsV2Paginator(p.s3, &s3.ListObjectsV2Input{Bucket: &p.loc.Bucket, Prefix: prefix})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return false, p.fail("list", "", err)
		}
		for _, o := range page.Contents {
			if !firstRunMayIgnore(p.loc.relOf(aws.ToString(o.Key))) {
				return true, nil
			}
		}
	}
	return false, nil
}

// firstRunMayIgnore says whether rel (a key relative to the prefix) is an object a prefix
// without a manifest may hold and still be a first run (see HoldsObjectsRestoreCannotRead).
func firstRunMayIgnore(rel string) bool {
	if strings.HasPrefix(rel, "_sitewatch/") || strings.HasPrefix(rel, RestoreCopyDir+"/") {
		return true
	}
	parts := strings.Split(rel, "/")
	switch len(parts) {
	case 2: // <table>/<file>.parquet: a shared table's file
		return !hidden(parts[0]) && isParquet(parts[1])
	case 3: // <table>/snapshot_month=M/<file>.parquet
		return !hidden(parts[0]) && strings.HasPrefix(parts[1], partitionPrefix) && isParquet(parts[2])
	}
	return false
}
