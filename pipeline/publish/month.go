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
)

// Month publishes month of the Parquet tree at parquetRoot: it removes the objects a table no
// longer has, uploads every file whose SHA-256 differs from the published one (in parallel,
// multipart when large), and writes the month's manifest last, recording runID ("" keeps the
// published manifest's run ID). An unchanged month uploads nothing and rewrites nothing.
// Errors wrap ErrNoMonth, or are *Error with Kind ErrCredentials, ErrNoBucket or
// ErrUnreachable.
func (p *Publisher) Month(ctx context.Context, parquetRoot, month, runID string) (Result, error) {
	start := time.Now()
	res := Result{Month: month, ManifestURL: p.loc.URL(manifestRel(month))}
	if !monthRE.MatchString(month) {
		return res, fmt.Errorf("publish: month %q is not YYYY-MM", month)
	}
	files, err := p.localMonth(ctx, parquetRoot, month)
	if err != nil {
		return res, err
	}
	res.Files = len(files)
	for _, f := range files {
		res.Rows += f.Rows
	}
	old, err := p.readManifest(ctx, month)
	if err != nil {
		return res, err
	}
	remote, err := p.listDirs(ctx, files, old)
	if err != nil {
		return res, err
	}
	// Stale objects go first: a reader may miss rows of a shrinking partition for a moment,
	// but never sees old and new files of a table side by side.
	for _, rel := range staleKeys(files, old, remote) {
		if err := p.delete(ctx, rel); err != nil {
			return res, err
		}
		p.log.Info("deleted an object its table no longer has", "url", p.loc.URL(rel))
		res.Deleted++
	}
	entries, err := p.ensureAll(ctx, files, old, remote, &res)
	if err != nil {
		return res, err
	}
	next := &Manifest{Format: ManifestFormat, SnapshotMonth: month, RunID: runID, SitewatchVersion: p.opts.Version, Files: entries}
	if runID == "" && old != nil {
		next.RunID = old.RunID
	}
	if !next.sameContent(old) {
		next.PublishedAt = time.Now().UTC()
		if err := p.writeManifest(ctx, next); err != nil {
			return res, err
		}
		res.ManifestWritten = true
	}
	res.Duration = time.Since(start)
	p.log.Info("published", "month", month, "manifest", res.ManifestURL, "files", res.Files, "rows", res.Rows,
		"uploaded", res.Uploaded, "bytes", res.UploadedBytes, "unchanged", res.Unchanged, "deleted", res.Deleted, "took", res.Duration.Round(time.Millisecond))
	return res, nil
}

// localMonth lists and describes (hash, size, rows) the files of month, in parallel.
func (p *Publisher) localMonth(ctx context.Context, root, month string) ([]localFile, error) {
	t, err := scanTree(root)
	if err != nil {
		return nil, err
	}
	files, err := t.monthFiles(month)
	if err != nil {
		return nil, err
	}
	g, _ := errgroup.WithContext(ctx)
	g.SetLimit(p.opts.Concurrency)
	for i := range files {
		g.Go(files[i].describe)
	}
	return files, g.Wait()
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

// staleKeys returns the published objects of the month's directories that the local tree no
// longer has, and the objects of old's tables that are gone.
func staleKeys(files []localFile, old *Manifest, remote map[string]int64) []string {
	local := map[string]bool{}
	for _, f := range files {
		local[f.Rel] = true
	}
	var stale []string
	for k := range remote {
		if !local[k] && !hidden(path.Base(k)) {
			stale = append(stale, k)
		}
	}
	if old != nil {
		for _, f := range old.Files {
			if _, listed := remote[f.Key]; listed && !local[f.Key] && !slices.Contains(stale, f.Key) {
				stale = append(stale, f.Key)
			}
		}
	}
	slices.Sort(stale)
	return stale
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

// ensure uploads f unless the published object already has its SHA-256: according to the
// manifest (and still listed with its size), or, for objects written by a publish that did not
// reach its manifest, according to the object's metadata.
func (p *Publisher) ensure(ctx context.Context, f *localFile, old *Manifest, remote map[string]int64) (s3sum string, uploaded bool, err error) {
	size, listed := remote[f.Rel]
	if e := old.file(f.Rel); e != nil && listed && size == f.Size && e.SHA256 == hexSum(f.SHA256) {
		return e.S3ChecksumSHA256, false, nil
	}
	if listed && size == f.Size {
		sum, s3sum, ok, err := p.remoteSum(ctx, f.Rel)
		if err != nil {
			return "", false, err
		}
		if ok && sum == hexSum(f.SHA256) {
			return s3sum, false, nil
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

// Pending lists, oldest first, the months of the Parquet tree whose manifest is missing or does
// not list exactly the local files with their SHA-256: what `sitewatch publish --all` would
// upload.
func (p *Publisher) Pending(ctx context.Context, parquetRoot string) ([]string, error) {
	t, err := scanTree(parquetRoot)
	if err != nil {
		return nil, err
	}
	var pending []string
	for _, m := range t.months() {
		files, err := p.localMonth(ctx, parquetRoot, m)
		if err != nil {
			return nil, err
		}
		old, err := p.readManifest(ctx, m)
		if err != nil {
			return nil, err
		}
		if !publishedAsIs(files, old) {
			pending = append(pending, m)
		}
	}
	return pending, nil
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

// AfterRun publishes month after a run that loaded it, when cfg.URL is set. It returns a nil
// Result and error when publishing is not configured, and a *FailedError for any failure: the
// run's local load stands, and the caller reports the publish failure apart (exit 1).
func AfterRun(ctx context.Context, cfg config.PublishConfig, parquetRoot, month, runID string, opts Options) (*Result, error) {
	p, err := New(ctx, cfg, opts)
	if errors.Is(err, ErrDisabled) {
		return nil, nil
	}
	if err != nil {
		return nil, &FailedError{Month: month, Err: err}
	}
	res := Result{Month: month}
	if cfg.WritesHive() {
		if res, err = p.Month(ctx, parquetRoot, month, runID); err != nil {
			return &res, &FailedError{Month: month, Err: err}
		}
	}
	if err := runAfterRunHooks(ctx, cfg, parquetRoot, month, opts.Logger); err != nil {
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
