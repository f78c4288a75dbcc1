package publish

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"sitewatch/pipeline/config"
	"sitewatch/pipeline/warehouse"
)

// Month publishes month of the Parquet tree at parquetRoot: it removes the objects a table no
// longer has, uploads every file whose SHA-256 differs from the published one (in parallel,
// multipart when large), and writes the month's manifest last, recording runID ("" keeps the
// published manifest's run ID). The tables without partitions (countries) go first, under the
// shared manifest. An unchanged month uploads nothing and rewrites nothing. A restore copy of
// month (RestoreCopyDir) is removed once the month's manifest is written.
// Errors wrap ErrNoMonth, or are *Error with Kind ErrCredentials, ErrNoBucket or
// ErrUnreachable.
func (p *Publisher) Month(ctx context.Context, parquetRoot, month, runID string) (Result, error) {
	start := time.Now()
	res := Result{Month: month, ManifestURL: p.loc.URL(manifestRel(month))}
	if !monthRE.MatchString(month) {
		return res, fmt.Errorf("publish: month %q is not YYYY-MM", month)
	}
	files, shared, err := p.localMonth(ctx, parquetRoot, month)
	if err != nil {
		return res, err
	}
	keep := map[string]bool{}
	for _, f := range slices.Concat(files, shared) {
		keep[f.Rel] = true
	}
	monthSet := set{rel: manifestRel(month), root: parquetRoot, month: month, runID: runID, files: files, keep: keep}
	if err := p.guardRestoreCopy(ctx, monthSet); err != nil {
		return res, err
	}
	sharedSet := set{rel: sharedManifestRel, root: parquetRoot, files: shared, keep: keep}
	if err := p.publishSet(ctx, sharedSet, &res); err != nil {
		return res, err
	}
	if err := p.publishSet(ctx, monthSet, &res); err != nil {
		return res, err
	}
	// The complete month now stands in the bucket and restore prefers it: the restore copy an
	// incomplete run saved is no longer needed.
	if err := p.dropRestoreCopy(ctx, monthSet); err != nil {
		return res, err
	}
	res.Duration = time.Since(start)
	p.log.Info("published", "month", month, "manifest", res.ManifestURL, "files", res.Files, "rows", res.Rows,
		"uploaded", res.Uploaded, "bytes", res.UploadedBytes, "unchanged", res.Unchanged, "deleted", res.Deleted, "took", res.Duration.Round(time.Millisecond))
	return res, nil
}

// set is what one manifest describes: a month's partitions, or the shared tables.
type set struct {
	rel          string // the manifest's key under the prefix
	root         string // the local Parquet tree
	month, runID string // "" for the shared set
	files        []localFile
	keep         map[string]bool // keys of every local file being published: never stale
}

// publishSet deletes what s's tables no longer have, uploads what differs, and writes s's
// manifest when its content changed, adding to res. The manifest is written only over the
// version read here (writeManifestAt), and with Options.GuardRuns only when that version's
// run is one this warehouse holds (guard): a stale machine never overwrites another's month.
func (p *Publisher) publishSet(ctx context.Context, s set, res *Result) error {
	res.Files += len(s.files)
	for _, f := range s.files {
		res.Rows += f.Rows
	}
	old, etag, err := p.readManifestVersion(ctx, s.rel)
	if err != nil {
		return err
	}
	if err := p.guard(ctx, s, old); err != nil {
		return err
	}
	remote, err := p.listDirs(ctx, s.files, old)
	if err != nil {
		return err
	}
	stale, err := p.staleKeys(ctx, s.keep, old, remote)
	if err != nil {
		return err
	}
	// Stale objects go first: a reader may miss rows of a shrinking partition for a moment,
	// but never sees old and new files of a table side by side.
	for _, rel := range stale {
		if err := p.delete(ctx, rel); err != nil {
			return err
		}
		p.log.Info("deleted an object its table no longer has", "url", p.loc.URL(rel))
		res.Deleted++
	}
	entries, err := p.ensureAll(ctx, s.files, old, remote, res)
	if err != nil {
		return err
	}
	runs, err := sortedRuns(ctx, s.root, s.month)
	if err != nil {
		return err
	}
	next := &Manifest{Format: ManifestFormat, SnapshotMonth: s.month, RunID: s.runID, Runs: runs, SchemaVersion: warehouse.SchemaVersion(),
		SitewatchVersion: p.opts.Version, Files: entries}
	if s.runID == "" && old != nil {
		next.RunID = old.RunID
	}
	if next.sameContent(old) {
		p.recordVersion(s.root, s.rel, old)
		p.foldLogs(ctx, s.root, s.month)
		return nil
	}
	next.PublishedAt = time.Now().UTC()
	if err := p.writeManifestAt(ctx, s.rel, next, etag); err != nil {
		return err
	}
	res.ManifestWritten = true
	p.recordVersion(s.root, s.rel, next) // this warehouse holds what it just wrote
	p.foldLogs(ctx, s.root, s.month)
	return nil
}

// localMonth lists and describes (hash, size, rows) the files of month and the shared
// files, in parallel.
func (p *Publisher) localMonth(ctx context.Context, root, month string) (files, shared []localFile, err error) {
	t, err := scanTree(root)
	if err != nil {
		return nil, nil, err
	}
	if files, err = t.monthFiles(month); err != nil {
		return nil, nil, err
	}
	if shared, err = t.sharedFiles(); err != nil {
		return nil, nil, err
	}
	sums := p.sums(root)
	g, _ := errgroup.WithContext(ctx)
	g.SetLimit(p.opts.Concurrency)
	for _, fs := range [][]localFile{files, shared} {
		for i := range fs {
			g.Go(func() error { return fs[i].describe(sums) })
		}
	}
	err = g.Wait()
	p.saveSums(sums)
	return files, shared, err
}

// listDirs lists the published objects of every directory the month has now or had when old
// was written: rel -> size.
func (p *Publisher) listDirs(ctx context.Context, files []localFile, old *Manifest) (map[string]int64, error) {
	var dirs []string
	add := func(rel string) {
		if d := path.Dir(rel); !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	for _, f := range files {
		add(f.Rel)
	}
	if old != nil {
		for _, f := range old.Files {
			add(f.Key)
		}
	}
	var mu sync.Mutex
	remote := map[string]int64{}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(p.opts.Concurrency)
	for _, d := range dirs {
		g.Go(func() error {
			objs, err := p.list(gctx, d)
			mu.Lock()
			defer mu.Unlock()
			for k, size := range objs {
				remote[k] = size
			}
			return err
		})
	}
	return remote, g.Wait()
}

// staleKeys returns the objects of the set's directories to delete: those old lists that the
// local tree no longer has, and those sitewatch wrote (they carry its sitewatch-sha256
// metadata: a publish killed before its manifest) that no local file is. An object of
// another writer (a user's file in a partition folder) is not ours: it is left alone, named
// in the log, and no manifest lists it. local holds the keys being published.
func (p *Publisher) staleKeys(ctx context.Context, local map[string]bool, old *Manifest, remote map[string]int64) ([]string, error) {
	var stale []string
	for k := range remote {
		switch {
		case local[k] || hidden(path.Base(k)):
		case old.file(k) != nil:
			stale = append(stale, k)
		default:
			h, err := p.head(ctx, k)
			if err != nil {
				return nil, err
			}
			if h.sum != "" {
				stale = append(stale, k)
				continue
			}
			p.log.Warn("left alone: an object sitewatch did not write (no manifest lists it; a restore ignores it)", "url", p.loc.URL(k))
		}
	}
	slices.Sort(stale)
	return stale, nil
}

// ensureAll makes every file published, uploading only those whose published copy differs,
// and returns their manifest entries in files' order.
func (p *Publisher) ensureAll(ctx context.Context, files []localFile, old *Manifest, remote map[string]int64, res *Result) ([]ManifestFile, error) {
	entries := make([]ManifestFile, len(files))
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(p.opts.Concurrency)
	for i := range files {
		g.Go(func() error {
			f := &files[i]
			s3sum, uploaded, err := p.ensure(gctx, f, old, remote)
			if err != nil {
				return err
			}
			entries[i] = ManifestFile{Key: f.Rel, Table: f.Table, Rows: f.Rows, Size: f.Size, SHA256: hexSum(f.SHA256), S3ChecksumSHA256: s3sum}
			mu.Lock()
			defer mu.Unlock()
			if uploaded {
				res.Uploaded++
				res.UploadedBytes += f.Size
			} else {
				res.Unchanged++
			}
			return nil
		})
	}
	return entries, g.Wait()
}

// ensure uploads f unless the published object provably holds its bytes: it is listed with
// f's size and its own checksums (HEAD: the sitewatch-sha256 metadata, and the service's
// SHA-256 when the manifest recorded one) match f, and with Options.ReadData its bytes hash
// to f's. A manifest alone is not trusted: an object replaced by same-size other bytes, or
// deleted, is uploaded again; with ReadData, one whose bytes changed under the same metadata.
func (p *Publisher) ensure(ctx context.Context, f *localFile, old *Manifest, remote map[string]int64) (s3sum string, uploaded bool, err error) {
	if size, listed := remote[f.Rel]; listed && size == f.Size {
		h, err := p.head(ctx, f.Rel)
		if err != nil {
			return "", false, err
		}
		want := ManifestFile{Size: f.Size, SHA256: hexSum(f.SHA256)}
		if e := old.file(f.Rel); e != nil && e.SHA256 == want.SHA256 {
			want.S3ChecksumSHA256 = e.S3ChecksumSHA256
		}
		if h.found && h.sum != "" && h.differs(want) == "" {
			same, err := p.sameData(ctx, f.Rel, want)
			if err != nil {
				return "", false, err
			}
			if same && h.s3sum == "" { // a service that returns no checksum: keep the recorded one
				return want.S3ChecksumSHA256, false, nil
			}
			if same {
				return h.s3sum, false, nil
			}
		}
	}
	s3sum, err = p.upload(ctx, f)
	return s3sum, err == nil, err
}

// All publishes every month of the Parquet tree, oldest first; runIDs maps a month to the run
// that produced it (nil: keep the published run IDs). It stops at the first failure and
// returns the results of the months published before it.
func (p *Publisher) All(ctx context.Context, parquetRoot string, runIDs map[string]string) ([]Result, error) {
	t, err := scanTree(parquetRoot)
	if err != nil {
		return nil, err
	}
	var results []Result
	for _, m := range t.months() {
		res, err := p.Month(ctx, parquetRoot, m, runIDs[m])
		if err != nil {
			return results, err
		}
		results = append(results, res)
	}
	return results, nil
}

// Pending lists, oldest first, the months of the Parquet tree whose manifest is missing, does
// not list exactly the local files with their SHA-256, or lists an object the bucket no longer
// holds with its size (one listing of the prefix): what `sitewatch publish --all` would
// upload. When only the shared tables differ, the newest month is listed: publishing it
// publishes them. A month the bucket holds in a version this warehouse has not taken in is
// not pending (Compare): publishing it would overwrite another machine's month.
func (p *Publisher) Pending(ctx context.Context, parquetRoot string) ([]string, error) {
	pending, _, err := p.Compare(ctx, parquetRoot)
	return pending, err
}

// Compare compares the Parquet tree with the bucket: pending are the months a publish would
// upload (Pending); newer are the months the bucket holds in a version this warehouse has
// not taken in — a manifest naming a run the local runs partition of the month does not
// hold, or a month the tree does not have at all — which `sitewatch run` pulls (0 credits)
// and a publish from here must not overwrite.
func (p *Publisher) Compare(ctx context.Context, parquetRoot string) (pending, newer []string, err error) {
	t, err := scanTree(parquetRoot)
	if err != nil {
		return nil, nil, err
	}
	held, err := p.listAll(ctx)
	if err != nil {
		return nil, nil, err
	}
	months := t.months()
	for k := range held {
		if m, ok := ManifestMonth(k); ok && m != "" && !slices.Contains(months, m) {
			newer = append(newer, m)
		}
	}
	sharedAsIs := true
	for i, m := range months {
		files, shared, err := p.localMonth(ctx, parquetRoot, m)
		if err != nil {
			return nil, nil, err
		}
		old, err := p.readManifest(ctx, m)
		if err != nil {
			return nil, nil, err
		}
		if i == 0 {
			oldShared, err := p.readManifestAt(ctx, sharedManifestRel)
			if err != nil {
				return nil, nil, err
			}
			sharedAsIs = publishedAsIs(shared, oldShared) && present(oldShared, held)
		}
		isNewer, err := p.bucketIsNewer(ctx, parquetRoot, m, old)
		switch {
		case err != nil:
			return nil, nil, err
		case isNewer:
			newer = append(newer, m)
		case !publishedAsIs(files, old) || !present(old, held) || (i == len(months)-1 && !sharedAsIs):
			pending = append(pending, m)
		}
	}
	slices.Sort(newer)
	return pending, newer, nil
}

// bucketIsNewer says whether old, the bucket's manifest of month, names a run (of its ledger)
// the local runs and run_calls partitions of month do not hold.
func (p *Publisher) bucketIsNewer(ctx context.Context, root, month string, old *Manifest) (bool, error) {
	if old == nil || len(old.AllRuns()) == 0 {
		return false, nil
	}
	runs, err := LocalRuns(ctx, root, month)
	if err != nil {
		return false, err
	}
	for _, r := range old.AllRuns() {
		if !runs[r] {
			return true, nil
		}
	}
	return false, nil
}

// present says whether every object m lists is held (key -> size) with its size.
func present(m *Manifest, held map[string]int64) bool {
	if m == nil {
		return false
	}
	for _, f := range m.Files {
		if size, ok := held[f.Key]; !ok || size != f.Size {
			return false
		}
	}
	return true
}

func publishedAsIs(files []localFile, m *Manifest) bool {
	if m == nil || len(m.Files) != len(files) {
		return false
	}
	for _, f := range files {
		if e := m.file(f.Rel); e == nil || e.SHA256 != hexSum(f.SHA256) {
			return false
		}
	}
	return true
}

// AfterRun publishes month after a run that loaded it, when cfg.URL is set: the Hive layout,
// or without it (publish.format iceberg) the month's restore copy, then the formats of
// opts.After (Iceberg). It returns a nil
// Result and error when publishing is not configured, and a *FailedError for any failure: the
// run's local load stands, and the caller reports the publish failure apart (exit 1).
func AfterRun(ctx context.Context, cfg config.PublishConfig, parquetRoot, month, runID string, opts Options) (*Result, error) {
	opts.GuardRuns = true // never over a month another machine ran after this one synced
	p, err := New(ctx, cfg, opts)
	if errors.Is(err, ErrDisabled) {
		return nil, nil
	}
	if err != nil {
		return nil, &FailedError{Month: month, Err: err}
	}
	res := Result{Month: month}
	if cfg.WritesHive() {
		res, err = p.Month(ctx, parquetRoot, month, runID)
	} else { // the restore copy is format-independent: restore reads no catalog
		res, err = p.SaveRestoreCopy(ctx, parquetRoot, month, runID, false)
	}
	if err != nil {
		return &res, &FailedError{Month: month, Err: err}
	}
	if err := runAfterRunHooks(ctx, opts.After, cfg, parquetRoot, month, opts.Logger); err != nil {
		return &res, &FailedError{Month: month, Err: err}
	}
	return &res, nil
}

// Months lists the months of the Parquet tree at parquetRoot, oldest first.
func Months(parquetRoot string) ([]string, error) {
	t, err := scanTree(parquetRoot)
	if err != nil {
		return nil, err
	}
	return t.months(), nil
}
