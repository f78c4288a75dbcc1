// Package restore builds a warehouse and its local Parquet tree from a published bucket, on a
// machine that has neither: every object listed in the manifests is downloaded and verified
// against its SHA-256, then a new DuckDB file is loaded from the Parquet files and renamed
// into place last. A restore killed at any point leaves no file at the warehouse path, so a
// later run never takes half a restore for a complete warehouse; rerunning it skips the
// objects already verified on disk.
package restore

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"sitewatch/pipeline/publish"
	"sitewatch/pipeline/warehouse"
)

// Source is what a restore reads: the published manifests and their objects.
// *publish.Publisher implements it.
type Source interface {
	Manifests(ctx context.Context) ([]*publish.Manifest, error)
	Download(ctx context.Context, f publish.ManifestFile, dst string) error
	URL(rel string) string
}

var _ Source = (*publish.Publisher)(nil)

// ErrExists: the warehouse file exists and Force was not given.
var ErrExists = errors.New("the warehouse exists")

// ErrNothingPublished: the bucket holds no manifest.
var ErrNothingPublished = errors.New("nothing published there")

// Options say where the warehouse goes.
type Options struct {
	DuckDB  string // the warehouse file to create
	Parquet string // the local Parquet tree to fill
	// Copies holds the restore copies of the months the Hive layout lacks (a month no run
	// completed yet, or every month of an Iceberg-only bucket): nil when there are none.
	// Their raw answers, ledger and run-health rows are restored and their derived tables
	// rebuilt from the raw answers, so the next run pays only for what is missing.
	Copies Source
	// Force replaces an existing warehouse, keeping the old file aside (MovedAside).
	Force bool
	// URL is publish.url as the config names it: the restore records the manifest versions
	// it took in the Parquet tree's sync state for it (publish.SyncStateFile), so the first
	// sync after it costs one listing. "" records nothing.
	URL string
	// MemoryLimit is DuckDB's memory_limit while the warehouse loads (config
	// warehouse.memory_limit; "" = warehouse.DefaultLoadMemoryLimit).
	MemoryLimit string
	Logger      *slog.Logger
	Now         func() time.Time
	// BeforeReplace, when set, is called with the path of the warehouse just built, before an
	// existing warehouse (Force) is moved aside: an error stops the restore with nothing
	// replaced. `restore --force` saves there the charged calls the bucket lacks.
	BeforeReplace func(ctx context.Context, built string) error
}

// Result is what a restore did.
type Result struct {
	Months     []string
	FromCopies []string // the months restored from restore copies (their tables rebuilt)
	Objects    int      // objects listed by the manifests
	Downloaded int      // objects fetched (the others were already on disk, verified)
	Bytes      int64    // bytes fetched
	MovedAside string
	Duration   time.Duration
}

// Run restores from src. It fails with ErrExists (the warehouse file exists and Force is
// false), ErrNothingPublished, an error wrapping publish.ErrDamaged naming an object that is
// missing or differs from its manifest, or a manifest that disagrees with its name or lists
// a key twice (refused before anything is downloaded), or one naming a schema newer than
// this build.
func Run(ctx context.Context, src Source, opts Options) (*Result, error) {
	start := time.Now()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if _, err := os.Stat(opts.DuckDB); err == nil && !opts.Force {
		return nil, fmt.Errorf("restore into %s: %w: move it away, or give --force (the old file is kept beside it)", opts.DuckDB, ErrExists)
	}
	ms, err := src.Manifests(ctx)
	if err != nil {
		return nil, err
	}
	cs, err := copiesToRestore(ctx, opts.Copies, ms)
	if err != nil {
		return nil, err
	}
	if err := checkManifests(src, slices.Concat(ms, cs)); err != nil {
		return nil, err
	}
	// Each source validated its own manifests; the copies taken land in the same local tree
	// as the months, so a key both list would be loaded twice.
	if err := publish.CheckDuplicates(slices.Concat(ms, cs), func(m *publish.Manifest) string {
		if slices.Contains(cs, m) {
			return opts.Copies.URL(m.Key)
		}
		return src.URL(m.Key)
	}); err != nil {
		return nil, err
	}
	res := &Result{}
	files, err := fetchAll(ctx, src, ms, opts, res)
	if err != nil {
		return nil, err
	}
	if len(cs) > 0 {
		more, err := fetchAll(ctx, opts.Copies, cs, opts, res)
		if err != nil {
			return nil, err
		}
		for table, ps := range more {
			files[table] = append(files[table], ps...)
		}
		for _, m := range cs {
			res.FromCopies = append(res.FromCopies, m.SnapshotMonth)
		}
		slices.Sort(res.Months)
	}
	if err := build(ctx, files, opts, res); err != nil {
		return nil, err
	}
	if opts.URL != "" {
		if err := publish.RecordRestored(opts.Parquet, opts.URL, ms, cs); err != nil {
			// Only costs the next sync a read of each manifest.
			opts.Logger.Warn("could not record the manifest versions restored: the next sync reads each once", "parquet", opts.Parquet, "err", err)
		}
	}
	res.Duration = time.Since(start)
	return res, nil
}

// copiesToRestore returns the restore copies of copies whose month ms (the Hive layout's
// manifests) does not hold: a complete month always wins over a copy.
func copiesToRestore(ctx context.Context, copies Source, ms []*publish.Manifest) ([]*publish.Manifest, error) {
	if copies == nil {
		return nil, nil
	}
	all, err := copies.Manifests(ctx)
	if err != nil {
		return nil, err
	}
	var out []*publish.Manifest
	for _, c := range all {
		held := slices.ContainsFunc(ms, func(m *publish.Manifest) bool { return m.SnapshotMonth == c.SnapshotMonth })
		if c.SnapshotMonth != "" && !held {
			out = append(out, c)
		}
	}
	return out, nil
}

// checkManifests refuses an empty bucket and a schema this build does not know.
func checkManifests(src Source, ms []*publish.Manifest) error {
	months := 0
	mine := warehouse.SchemaVersion()
	for _, m := range ms {
		if m.SnapshotMonth != "" {
			months++
		}
		if m.SchemaVersion > mine {
			return fmt.Errorf("restore from %s: month %q was published with warehouse schema %s, newer than this build's %s: upgrade sitewatch",
				src.URL(""), m.SnapshotMonth, m.SchemaVersion, mine)
		}
	}
	if months == 0 {
		return fmt.Errorf("restore from %s: %w (no month manifest under _manifests/): check --from or publish.url", src.URL(""), ErrNothingPublished)
	}
	return nil
}

// fetchAll makes every object of ms present and verified under opts.Parquet (four at a
// time), and returns the local files per table.
func fetchAll(ctx context.Context, src Source, ms []*publish.Manifest, opts Options, res *Result) (map[string][]string, error) {
	start := time.Now()
	files := map[string][]string{}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for _, m := range ms {
		if m.SnapshotMonth != "" {
			res.Months = append(res.Months, m.SnapshotMonth)
		}
		for _, f := range m.Files {
			dst, err := localPath(opts.Parquet, f.Key)
			if err != nil {
				return nil, fmt.Errorf("restore: manifest of %q: %w", m.SnapshotMonth, err)
			}
			res.Objects++
			files[f.Table] = append(files[f.Table], dst)
			g.Go(func() error {
				if verified(dst, f) {
					return nil
				}
				if err := src.Download(gctx, f, dst); err != nil {
					return err
				}
				mu.Lock()
				defer mu.Unlock()
				res.Downloaded++
				res.Bytes += f.Size
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	opts.Logger.Info("restore: objects verified", "objects", res.Objects, "downloaded", res.Downloaded, "bytes", res.Bytes, "took", time.Since(start).Round(time.Millisecond))
	return files, nil
}

// localPath is where key lands under root; a key that would leave root is refused.
func localPath(root, key string) (string, error) {
	if !filepath.IsLocal(filepath.FromSlash(key)) || strings.Contains(key, "\\") {
		return "", fmt.Errorf("object key %q is not a path under the Parquet tree", key)
	}
	return filepath.Join(root, filepath.FromSlash(key)), nil
}

// verified says whether p already holds exactly the object of f.
func verified(p string, f publish.ManifestFile) bool {
	fh, err := os.Open(p)
	if err != nil {
		return false
	}
	defer func() { _ = fh.Close() }() // read-only
	h := sha256.New()
	n, err := io.Copy(h, fh)
	return err == nil && n == f.Size && hex.EncodeToString(h.Sum(nil)) == f.SHA256
}

// build loads a new DuckDB file beside opts.DuckDB under a hidden name and renames it into
// place: the warehouse path holds nothing until the file is complete.
func build(ctx context.Context, files map[string][]string, opts Options, res *Result) error {
	dir, base := filepath.Split(opts.DuckDB)
	if dir == "" {
		dir = "."
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("restore: create %s: %w", dir, err)
	}
	if err := removeLeftovers(dir, base); err != nil {
		return err
	}
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return err
	}
	tmp := filepath.Join(dir, leftoverPrefix(base)+hex.EncodeToString(rnd[:])+".tmp")
	for _, ps := range files {
		slices.Sort(ps)
	}
	start := time.Now()
	err := warehouse.BuildFromParquet(ctx, tmp, files, opts.MemoryLimit)
	if err == nil {
		err = rebuildCopies(ctx, tmp, opts, res.FromCopies)
	}
	if err == nil && opts.BeforeReplace != nil && exists(opts.DuckDB) {
		err = opts.BeforeReplace(ctx, tmp)
	}
	if err != nil {
		_ = os.Remove(tmp) // best effort: the next restore removes leftovers too
		_ = os.Remove(tmp + ".wal")
		return fmt.Errorf("restore: %w", err)
	}
	opts.Logger.Info("restore: warehouse built", "file", tmp, "took", time.Since(start).Round(time.Millisecond))
	if err := moveAside(opts, res); err != nil {
		return err
	}
	if err := os.Rename(tmp, opts.DuckDB); err != nil {
		return fmt.Errorf("restore: put the warehouse in place: %w", err)
	}
	return syncDir(dir)
}

// rebuildCopies derives the tables of the months restored from restore copies from their raw
// answers (0 credits), in the file being built, and exports their Parquet to opts.Parquet.
func rebuildCopies(ctx context.Context, path string, opts Options, months []string) error {
	if len(months) == 0 {
		return nil
	}
	wh, err := warehouse.Open(ctx, warehouse.Options{DuckDBPath: path, ParquetDir: opts.Parquet, Logger: opts.Logger})
	if err != nil {
		return err
	}
	for _, m := range months {
		if _, err := wh.RebuildRestored(ctx, m); err != nil {
			_ = wh.Close() // the file is removed by the caller
			return fmt.Errorf("rebuild the tables of %s from its raw answers: %w", m, err)
		}
	}
	return wh.Close()
}

func leftoverPrefix(base string) string { return "." + base + ".restore-" }

// removeLeftovers deletes what a killed restore left: its hidden DuckDB file, its WAL and
// DuckDB's spill directory beside them.
func removeLeftovers(dir, base string) error {
	matches, err := filepath.Glob(filepath.Join(dir, leftoverPrefix(base)+"*"))
	if err != nil {
		return err
	}
	for _, m := range matches {
		if err := os.RemoveAll(m); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("restore: remove the leftover %s of an interrupted restore: %w", m, err)
		}
	}
	return nil
}

// moveAside renames an existing warehouse (and its WAL) to <file>.before-restore-<time>.
func moveAside(opts Options, res *Result) error {
	if _, err := os.Stat(opts.DuckDB); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	aside := opts.DuckDB + ".before-restore-" + opts.Now().UTC().Format("20060102T150405Z")
	for n := 2; exists(aside) || exists(aside+".wal"); n++ { // two restores in one second: keep both old files
		aside = fmt.Sprintf("%s.before-restore-%s-%d", opts.DuckDB, opts.Now().UTC().Format("20060102T150405Z"), n)
	}
	if err := os.Rename(opts.DuckDB, aside); err != nil {
		return fmt.Errorf("restore: keep the old warehouse aside as %s: %w", aside, err)
	}
	if err := os.Rename(opts.DuckDB+".wal", aside+".wal"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("restore: keep the old warehouse's WAL aside as %s.wal: %w", aside, err)
	}
	res.MovedAside = aside
	return nil
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }() // read-only: Sync reported what matters
	return d.Sync()
}
