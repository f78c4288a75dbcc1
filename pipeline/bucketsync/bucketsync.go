// Package bucketsync makes a warehouse a cache of the bucket of publish.url, the system of
// record: before a run plans what to pay for, every month (or restore copy of an incomplete
// month) the bucket holds in a version the warehouse has not taken in is pulled into it, its
// answers and ledger merged and its tables rebuilt from the answers (0 credits). So a
// machine whose warehouse is older than the bucket pays only for what nobody has paid for.
//
// A month's version is the run its manifest names (run_id): the warehouse has taken a
// version in when its runs table holds that run for the month (its own run, or one it pulled
// or restored). The manifest's ETag, recorded in the Parquet tree's
// publish.SyncStateFile after each sync and each publish from this tree, saves reading it
// again: a bucket that holds nothing new costs one listing.
package bucketsync

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"golang.org/x/sync/errgroup"

	"sitewatch/pipeline/answerlog"
	"sitewatch/pipeline/model"
	"sitewatch/pipeline/publish"
	"sitewatch/pipeline/warehouse"
)

// Syncer pulls the bucket's months into a warehouse.
type Syncer struct {
	bucket  *publish.Publisher
	url     string // publish.url, for messages and the state
	parquet string // the local Parquet tree
	duckdb  string // the warehouse file
	log     *slog.Logger
}

// New returns the Syncer of the warehouse at duckdb (with its Parquet tree) and the bucket
// at url that p reads.
func New(p *publish.Publisher, url, duckdb, parquet string, log *slog.Logger) *Syncer {
	return &Syncer{bucket: p, url: url, parquet: parquet, duckdb: duckdb, log: log}
}

// Result is what a Pull did.
type Result struct {
	Pulled []Pulled // what was taken in, oldest month first
	Read   int      // manifests read (those whose listed version was not recorded)
	Logged []Logged // what was taken from the answer log, per month
}

// Logged is what a pull took from the answer log's segments of one month.
type Logged struct {
	Month    string
	Runs     []string // the runs whose segments were read
	Segments int
	Answers  int // answers the warehouse lacked
}

// Pulled is one manifest taken into the warehouse.
type Pulled struct {
	Month string
	Copy  bool   // a restore copy (an incomplete month), not the complete month
	RunID string // the run the bucket's version names
}

// Pull takes into wh every month the bucket holds in a version wh has not taken in. The
// complete month wins over a restore copy of it. A manifest that fails validation, or an
// object that differs from it, stops the pull with an error naming it (nothing of that month
// is merged: the merge is one transaction).
func (s *Syncer) Pull(ctx context.Context, wh *warehouse.Warehouse) (Result, error) {
	var res Result
	versions, logs, err := s.bucket.Listing(ctx)
	if err != nil {
		return res, fmt.Errorf("read what %s holds before paying for anything: %w", s.url, err)
	}
	st := publish.LoadSyncState(s.parquet, s.url, s.log)
	held, err := heldRuns(ctx, wh.DB())
	if err != nil {
		return res, err
	}
	changed := false
	for _, v := range newest(versions) {
		if seen, ok := st.Manifests[v.Key]; ok && seen.ETag == v.ETag && holdsAll(held, v.Month, seen.RunID, seen.Runs) {
			continue // one listing: this version is already in the warehouse
		}
		m, err := s.bucket.ReadManifest(ctx, v)
		res.Read++
		if err != nil {
			return res, err
		}
		if m == nil {
			continue // gone since the listing
		}
		if !holdsAll(held, v.Month, m.RunID, m.Runs) {
			if err := s.take(ctx, wh, v, m); err != nil {
				return res, err
			}
			res.Pulled = append(res.Pulled, Pulled{Month: v.Month, Copy: v.Copy, RunID: m.RunID})
		}
		st.Manifests[v.Key] = publish.SeenVersion{ETag: m.ETag, RunID: m.RunID, Runs: m.Runs}
		changed = true
	}
	// After the manifests: the answer log holds what runs paid since their month's last
	// publish, on top of it.
	logged, err := s.takeLog(ctx, wh, unseen(st, logs), &st)
	res.Logged = logged
	if err != nil {
		return res, err
	}
	if len(logged) > 0 {
		changed = true
	}
	if changed {
		if err := st.Save(s.parquet); err != nil {
			return res, fmt.Errorf("record what was taken from %s in %s: %w", s.url, s.parquet, err)
		}
	}
	return res, nil
}

// newest keeps, per month, the complete month's manifest over a restore copy's.
func newest(vs []publish.ManifestVersion) []publish.ManifestVersion {
	var out []publish.ManifestVersion
	for _, v := range vs {
		complete := slices.ContainsFunc(vs, func(o publish.ManifestVersion) bool { return !o.Copy && o.Month == v.Month })
		if !v.Copy || !complete {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(a, b publish.ManifestVersion) int {
		if a.Month < b.Month {
			return -1
		}
		if a.Month > b.Month {
			return 1
		}
		return 0
	})
	return out
}

// holds says whether the warehouse has taken in the version of month that names runID (a
// manifest that names no run: whenever it holds a run of the month).
func holds(held map[string]map[string]bool, month, runID string) bool {
	if runID == "" {
		return len(held[month]) > 0
	}
	return held[month][runID]
}

// holdsAll says whether the warehouse has taken in every run a version of month names: the
// run that completed it and every run of its ledger (an up-to-date run's probe, paid on
// another machine, is in the bucket's ledger only).
func holdsAll(held map[string]map[string]bool, month, runID string, runs []string) bool {
	if !holds(held, month, runID) {
		return false
	}
	for _, r := range runs {
		if !held[month][r] {
			return false
		}
	}
	return true
}

// heldRuns maps each month of the warehouse to the runs it holds.
func heldRuns(ctx context.Context, db *sql.DB) (map[string]map[string]bool, error) {
	held := map[string]map[string]bool{}
	err := warehouse.QueryEach(ctx, db, `SELECT snapshot_month, run_id FROM runs UNION SELECT snapshot_month, run_id FROM run_calls`, nil, func(rows *sql.Rows) error {
		var month, run string
		if err := rows.Scan(&month, &run); err != nil {
			return err
		}
		if held[month] == nil {
			held[month] = map[string]bool{}
		}
		held[month][run] = true
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the runs of the warehouse: %w", err)
	}
	return held, nil
}

// pulledTables are the tables a pull downloads: the answers, the ledger and the run health.
// The derived tables are rebuilt from the merged answers, so a month's answers paid on this
// machine and never published stay in them.
var pulledTables = slices.Concat(model.ArchiveTables, model.RunHealthTables)

// take downloads the answers, ledger and run health of m (verified against their SHA-256)
// into a hidden folder of the Parquet tree, merges them into wh and rebuilds the month's
// tables and Parquet from the merged answers.
func (s *Syncer) take(ctx context.Context, wh *warehouse.Warehouse, v publish.ManifestVersion, m *publish.Manifest) error {
	if err := os.MkdirAll(s.parquet, 0o755); err != nil {
		return fmt.Errorf("pull %s from %s: %w", v.Month, s.url, err)
	}
	dir, err := os.MkdirTemp(s.parquet, ".bucket-pull-")
	if err != nil {
		return fmt.Errorf("pull %s from %s: %w", v.Month, s.url, err)
	}
	defer func() { _ = os.RemoveAll(dir) }() // the merged rows are in the warehouse
	files, err := s.download(ctx, s.bucket.Source(v), m, dir, pulledTables...)
	if err != nil {
		return err
	}
	if err := wh.MergeMonth(ctx, v.Month, files); err != nil {
		return err
	}
	if _, err := wh.RebuildRestored(ctx, v.Month); err != nil {
		return fmt.Errorf("rebuild %s from the answers pulled from %s: %w", v.Month, s.url, err)
	}
	what := "the complete month"
	if v.Copy {
		what = "the restore copy of the incomplete month"
	}
	s.log.Info("took in from the bucket (0 credits): its run is not in this warehouse", "month", v.Month, "what", what, "run", m.RunID, "bucket", s.url)
	return nil
}

// download fetches the objects of m's tables under dir (keys as paths), four at a time, and
// returns the local files per table.
func (s *Syncer) download(ctx context.Context, src *publish.Publisher, m *publish.Manifest, dir string, tables ...string) (map[string][]string, error) {
	files := map[string][]string{}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for _, f := range m.Files {
		if !slices.Contains(tables, f.Table) {
			continue
		}
		dst := filepath.Join(dir, filepath.FromSlash(f.Key)) // validated: <table>/snapshot_month=M/<file>.parquet
		g.Go(func() error {
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			if err := src.Download(gctx, f, dst); err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			files[f.Table] = append(files[f.Table], dst)
			return nil
		})
	}
	return files, g.Wait()
}

// Peek is what a run's pull would take in of one month, read without writing anything.
type Peek struct {
	Month string // "" when the bucket holds no version the warehouse lacks
	// Complete says the bucket holds Month complete (only its manifest is read); else the
	// version is a restore copy of the incomplete month, and State says what it holds.
	Complete bool
	State    *model.SnapshotState // a restore copy's answers and API rejections (nil when Complete)
	Answers  int64                // the answers of the bucket's version (its raw_responses rows)
	RunID    string
}

// Peek reads, without writing anything (no lease, no pull into the warehouse, nothing in the
// Parquet tree, 0 credits), the version of month the bucket holds that the warehouse has not
// taken in; month "" is the newest month the bucket holds in such a version. A complete month
// costs its manifest; a restore copy's answers and rejections are downloaded (verified) to a
// temporary folder, read and removed. Nothing to take in: a zero Peek. `run --dry-run` and
// `check` count what it holds as held: a run pulls it first.
func (s *Syncer) Peek(ctx context.Context, month string) (Peek, error) {
	versions, logs, err := s.bucket.Listing(ctx)
	if err != nil {
		return Peek{}, fmt.Errorf("read what %s holds: %w", s.url, err)
	}
	p, err := s.peekManifests(ctx, month, versions)
	if err != nil {
		return p, err
	}
	return s.peekLog(ctx, p, month, unseen(publish.LoadSyncState(s.parquet, s.url, s.log), logs))
}

// peekLog adds to p what the answer log's segments logs hold of its month (the month asked
// for, else the newest month of p and the segments): a pull takes them in too. A month held
// complete needs none.
func (s *Syncer) peekLog(ctx context.Context, p Peek, month string, logs []publish.LogObject) (Peek, error) {
	target := p.Month
	if month == "" {
		for _, l := range logs {
			target = max(target, l.Month)
		}
	} else if target == "" {
		target = month
	}
	var segs []publish.LogObject
	for _, l := range logs {
		if l.Month == target {
			segs = append(segs, l)
		}
	}
	if target == "" || len(segs) == 0 {
		return p, nil
	}
	if target != p.Month {
		p = Peek{Month: target} // the log is of a newer month than any manifest the warehouse lacks
	}
	if p.Complete {
		return p, nil
	}
	rows, _, err := answerlog.Read(ctx, s.bucket, segs)
	if err != nil {
		return p, err
	}
	if p.State == nil {
		p.State = model.NewSnapshotState()
	}
	rows.AddToState(p.State, target)
	p.Answers += int64(len(rows.Month(target).Raws))
	if p.RunID == "" && len(segs) > 0 {
		p.RunID = segs[len(segs)-1].RunID
	}
	return p, nil
}

// peekManifests is Peek's reading of the manifests: the version of month ("" = the newest
// month) the bucket holds that the warehouse lacks.
func (s *Syncer) peekManifests(ctx context.Context, month string, versions []publish.ManifestVersion) (Peek, error) {
	held := map[string]map[string]bool{}
	if _, err := os.Stat(s.duckdb); err == nil {
		wh, err := warehouse.Open(ctx, warehouse.Options{DuckDBPath: s.duckdb, Logger: s.log, ReadOnly: true})
		if err != nil {
			return Peek{}, err
		}
		held, err = heldRuns(ctx, wh.DB())
		_ = wh.Close() // read-only
		if err != nil {
			return Peek{}, err
		}
	}
	st := publish.LoadSyncState(s.parquet, s.url, s.log)
	vs := newest(versions)
	for i := len(vs) - 1; i >= 0; i-- { // the newest month first
		v := vs[i]
		if month != "" && v.Month != month {
			continue
		}
		if seen, ok := st.Manifests[v.Key]; ok && seen.ETag == v.ETag && holdsAll(held, v.Month, seen.RunID, seen.Runs) {
			continue
		}
		m, err := s.bucket.ReadManifest(ctx, v)
		if err != nil {
			return Peek{}, err
		}
		if m == nil || holdsAll(held, v.Month, m.RunID, m.Runs) {
			continue
		}
		p := Peek{Month: v.Month, Complete: !v.Copy, RunID: m.RunID}
		for _, f := range m.Files {
			if f.Table == model.TableRawResponses {
				p.Answers += f.Rows
			}
		}
		if v.Copy {
			p.State, err = s.peekState(ctx, v, m)
		}
		return p, err
	}
	return Peek{}, nil
}

// peekState reads the answers and rejections of a restore copy from its objects, downloaded
// to a temporary folder outside the Parquet tree and removed after.
func (s *Syncer) peekState(ctx context.Context, v publish.ManifestVersion, m *publish.Manifest) (*model.SnapshotState, error) {
	dir, err := os.MkdirTemp("", "sitewatch-peek-")
	if err != nil {
		return nil, fmt.Errorf("read the restore copy of %s from %s: %w", v.Month, s.url, err)
	}
	defer func() { _ = os.RemoveAll(dir) }() // read and forgotten
	files, err := s.download(ctx, s.bucket.Source(v), m, dir, model.TableRawResponses, "fetch_errors")
	if err != nil {
		return nil, err
	}
	return warehouse.StateFromParquet(ctx, v.Month, files)
}

// unseen are the segments of logs the state does not record as held.
func unseen(st publish.SyncState, logs []publish.LogObject) []publish.LogObject {
	var out []publish.LogObject
	for _, l := range logs {
		if _, ok := st.Logs[l.Key]; !ok {
			out = append(out, l)
		}
	}
	return out
}

// takeLog merges the segments logs (every run's: another machine's, or this one's from
// before its warehouse was lost) into wh, rebuilds the months that gained answers, and
// records the segments read in st (a publish of their month folds them).
func (s *Syncer) takeLog(ctx context.Context, wh *warehouse.Warehouse, logs []publish.LogObject, st *publish.SyncState) ([]Logged, error) {
	if len(logs) == 0 {
		return nil, nil
	}
	rows, read, err := answerlog.Read(ctx, s.bucket, logs)
	if err != nil {
		return nil, err
	}
	added, err := wh.MergeLog(ctx, rows)
	if err != nil {
		return nil, err
	}
	var out []Logged
	byMonth := map[string]*Logged{}
	if st.Logs == nil {
		st.Logs = map[string]publish.SeenLog{}
	}
	for _, o := range read {
		st.Logs[o.Key] = publish.SeenLog{Month: o.Month, ETag: o.ETag}
		l := byMonth[o.Month]
		if l == nil {
			l = &Logged{Month: o.Month, Answers: added[o.Month]}
			byMonth[o.Month] = l
		}
		l.Segments++
		if !slices.Contains(l.Runs, o.RunID) {
			l.Runs = append(l.Runs, o.RunID)
		}
	}
	for _, m := range slices.Sorted(maps.Keys(byMonth)) {
		if added[m] > 0 {
			if _, err := wh.RebuildRestored(ctx, m); err != nil {
				return out, fmt.Errorf("rebuild %s from the answers of the answer log of %s: %w", m, s.url, err)
			}
			s.log.Info("took in the answer log (0 credits): answers paid by runs whose month was not published since", "month", m,
				"answers", added[m], "segments", byMonth[m].Segments, "runs", byMonth[m].Runs, "bucket", s.url)
		}
		out = append(out, *byMonth[m])
	}
	return out, nil
}
