package warehouse

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"sitewatch/pipeline/model"
	"sitewatch/schema/flatten"
)

// parquetFile is the one file of each partition (and of countries/). Publishing a partition
// is a rename(2) of a finished, fsynced staging file over it, which is atomic: a reader sees
// the old file or the new one, never a partial file or a mix of both.
const parquetFile = "data_0.parquet"

// Staging files are hidden (".") and end in ".tmp", so neither the `*.parquet` glob of
// DuckDB nor Spark/pyarrow (which skip "." and "_" files) ever reads them.
const stagingSuffix = ".tmp"

// ExportParquet writes every snapshot table's partition <parquet>/<table>/snapshot_month=M/
// (zstd) and <parquet>/countries/, each staged and renamed into place (fsync before rename).
// Re-export replaces a partition whole and never touches other months; a reader never sees a
// partial file or a mix. The snapshot_month column lives in the path (Hive partitioning), not
// in the file. The tables are read in one transaction, so the files agree with each other.
func (w *Warehouse) ExportParquet(ctx context.Context, snapshot string) error {
	if err := checkSnapshot(snapshot); err != nil {
		return fmt.Errorf("export Parquet: %w", err)
	}
	if w.opts.ParquetDir == "" {
		return errors.New("export Parquet: warehouse.parquet is empty: set the Parquet directory in the config")
	}
	// Without insertion order the Parquet writer streams row groups instead of buffering them
	// to keep order, so the export's memory does not grow with the table.
	written := w.snapshotTableSources(ctx, snapshot)
	err := w.unorderedExport(ctx, func(ctx context.Context) error {
		if err := w.exportSnapshotTables(ctx, w.load, snapshot, written); err != nil {
			return err
		}
		return w.exportBesideSnapshotTables(ctx, snapshot)
	})
	if err != nil {
		return fmt.Errorf("export Parquet of snapshot %s to %s: %w", snapshot, w.opts.ParquetDir, err)
	}
	return nil
}

// exportSnapshotTables writes each snapshot table's partition of snapshot (checked YYYY-MM)
// with conn, in the caller's transaction on it, unless the partition's file already holds
// exactly those rows: written maps each table to the fingerprint its file carries
// (snapshotTableSources, read before the transaction). A rebuild re-derives the rows the
// files hold, and rewriting them cost a 10,000-domain rebuild ~0.4 s of its ~3.6 s of CPU.
func (w *Warehouse) exportSnapshotTables(ctx context.Context, conn *sql.Conn, snapshot string, written map[string]string) error {
	for _, t := range flatten.SnapshotTables {
		dir := snapshotPartition(w.opts.ParquetDir, t.Name, snapshot)
		// No ORDER BY: sorting a whole partition would make the export's memory grow with
		// the warehouse. snapshot was checked against ^[0-9]{4}-[0-9]{2}$.
		query := fmt.Sprintf(`SELECT * EXCLUDE (snapshot_month) FROM %s WHERE snapshot_month = '%s'`, t.Name, snapshot)
		source, err := w.rowsFingerprint(ctx, conn, query)
		if err != nil {
			return fmt.Errorf("%s: fingerprint the rows to export: %w", t.Name, err)
		}
		if written[t.Name] == source {
			// The file stays; an older layout's parts beside it go all the same.
			if err := w.removeOldParts(dir); err != nil {
				return fmt.Errorf("%s: %w", t.Name, err)
			}
			continue
		}
		if err := w.copyParquetOn(ctx, conn, query, dir, source); err != nil {
			return fmt.Errorf("%s: %w", t.Name, err)
		}
	}
	return nil
}

// snapshotTableSources returns, for each snapshot table, the fingerprint its partition file of
// snapshot carries (parquetSource; none for a missing or older file). It reads on the read
// connection, outside any transaction of it: a failed read would abort one.
func (w *Warehouse) snapshotTableSources(ctx context.Context, snapshot string) map[string]string {
	written := make(map[string]string, len(flatten.SnapshotTables))
	for _, t := range flatten.SnapshotTables {
		written[t.Name] = w.parquetSource(ctx, filepath.Join(snapshotPartition(w.opts.ParquetDir, t.Name, snapshot), parquetFile))
	}
	return written
}

// snapshotPartition is the directory of table's partition of snapshot under root.
func snapshotPartition(root, table, snapshot string) string {
	return filepath.Join(root, table, "snapshot_month="+snapshot)
}

// exportBesideSnapshotTables writes what ExportParquet writes beside the snapshot tables: the
// raw answers of snapshot, countries and the run-health tables, in the caller's transaction
// on the load connection.
func (w *Warehouse) exportBesideSnapshotTables(ctx context.Context, snapshot string) error {
	if err := w.exportRaw(ctx, snapshot); err != nil {
		return err
	}
	dir := filepath.Join(w.opts.ParquetDir, flatten.TableCountries)
	if err := w.copyParquet(ctx, `SELECT * FROM countries`, dir); err != nil {
		return fmt.Errorf("countries: %w", err)
	}
	return w.exportRunHealth(ctx, snapshot)
}

// exportRaw writes the raw answers of snapshot (checked YYYY-MM) to their partition, unless its
// file already holds exactly those rows (copyParquetIfChanged): a rebuild never changes them,
// and rewriting them cost a 10,000-domain rebuild 0.4–0.9 s of CPU for an equal file.
func (w *Warehouse) exportRaw(ctx context.Context, snapshot string) error {
	dir := filepath.Join(w.opts.ParquetDir, model.TableRawResponses, "snapshot_month="+snapshot)
	query := fmt.Sprintf(`SELECT * EXCLUDE (snapshot_month) FROM %s WHERE snapshot_month = '%s'`, model.TableRawResponses, snapshot)
	if err := w.copyParquetIfChanged(ctx, query, dir); err != nil {
		return fmt.Errorf("%s: %w", model.TableRawResponses, err)
	}
	return nil
}

// parquetSourceKey is the key, in a Parquet file's key-value metadata, of the fingerprint of
// the rows the file was written from (copyParquetIfChanged).
const parquetSourceKey = "sitewatch_source"

// copyParquetIfChanged writes query's rows to dir/data_0.parquet as copyParquet does, with
// their fingerprint (rowsFingerprint) in the file's key-value metadata, unless the file there
// already carries the fingerprint of query's rows now: then it is left as it is. A missing,
// truncated or older file (without the key) is rewritten.
func (w *Warehouse) copyParquetIfChanged(ctx context.Context, query, dir string) error {
	source, err := w.rowsFingerprint(ctx, w.load, query)
	if err != nil {
		return fmt.Errorf("fingerprint the rows to export: %w", err)
	}
	if w.parquetSource(ctx, filepath.Join(dir, parquetFile)) == source {
		return w.removeOldParts(dir) // the file stays; an older layout's parts beside it go all the same
	}
	return w.copyParquetWithSource(ctx, query, dir, source)
}

// rowsFingerprint names the rows query returns on conn, in any order: their number, the sum of
// their hashes and their column names and types, with copyParquetFormat; hex of their SHA-256.
// Each row's hash is DuckDB's hash of the whole row hashed again: the hash of several values
// is XOR-linear in the last one (its combine is mix(a) ⊕ b), so summing it directly lets two
// rows whose last column moved alike cancel about once in 2^32 pairs; hashed again, a changed
// value, an added or a duplicated row changes the sum but once in 2^64 (the same reasoning as
// sql/views/_checksum.sql's rows_checksum).
func (w *Warehouse) rowsFingerprint(ctx context.Context, conn *sql.Conn, query string) (string, error) {
	var rows, sum, types string
	err := conn.QueryRowContext(ctx, `SELECT CAST(count(*) AS VARCHAR), CAST(coalesce(sum(hash(hash(r))), 0) AS VARCHAR),
		coalesce(any_value(typeof(r)), '') FROM (`+query+`) r`).Scan(&rows, &sum, &types)
	if err != nil {
		return "", err
	}
	h := sha256.Sum256([]byte(strings.Join([]string{copyParquetFormat, rows, sum, types}, "\x00")))
	return hex.EncodeToString(h[:16]), nil
}

// parquetSource returns the fingerprint file carries under parquetSourceKey, or "" when it has
// none or cannot be read (missing, truncated): the caller then rewrites it. It reads on the read
// connection (the caller holds mu), in a statement of its own: a failed statement on the load
// connection would abort the caller's transaction.
func (w *Warehouse) parquetSource(ctx context.Context, file string) string {
	var source string
	err := w.read.QueryRowContext(ctx, `SELECT decode(value) FROM parquet_kv_metadata(`+sqlString(file)+`)
		WHERE decode(key) = '`+parquetSourceKey+`'`).Scan(&source)
	if err != nil {
		return ""
	}
	return source
}

// copyParquetFormat is copyParquet's COPY options: a fingerprint covers them, so a change of
// the writer's options rewrites files written with the old ones.
const copyParquetFormat = `FORMAT PARQUET, COMPRESSION zstd, ROW_GROUP_SIZE 16384`

// copyParquet writes query's rows to dir/data_0.parquet through a staging file in dir.
func (w *Warehouse) copyParquet(ctx context.Context, query, dir string) error {
	return w.copyParquetWithSource(ctx, query, dir, "")
}

// copyParquetWithSource is copyParquet writing source (hex, or "" for none) under
// parquetSourceKey in the file's key-value metadata.
func (w *Warehouse) copyParquetWithSource(ctx context.Context, query, dir, source string) error {
	return w.copyParquetOn(ctx, w.load, query, dir, source)
}

// copyParquetOn is copyParquetWithSource with conn.
func (w *Warehouse) copyParquetOn(ctx context.Context, conn *sql.Conn, query, dir, source string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return err
	}
	stage := filepath.Join(dir, "."+parquetFile+"."+hex.EncodeToString(rnd[:])+stagingSuffix)
	final := filepath.Join(dir, parquetFile)
	// COPY takes no parameters for its target; the path is quoted as an SQL literal.
	options := copyParquetFormat
	if source != "" {
		options += `, KV_METADATA {` + parquetSourceKey + `: ` + sqlString(source) + `}`
	}
	copySQL := fmt.Sprintf(`COPY (%s) TO %s (%s)`, query, sqlString(stage), options)
	if _, err := conn.ExecContext(ctx, copySQL); err != nil {
		_ = os.Remove(stage) // best effort: Open cleans leftovers too
		return err
	}
	if err := syncFile(stage); err != nil {
		_ = os.Remove(stage) // best effort: Open cleans leftovers too
		return err
	}
	if err := os.Rename(stage, final); err != nil {
		_ = os.Remove(stage) // best effort: Open cleans leftovers too
		return err
	}
	if err := syncFile(dir); err != nil {
		return err
	}
	return w.removeOldParts(dir)
}

// ownPart matches the names sitewatch's exports ever wrote in a partition: DuckDB's
// data_N.parquet. data_0.parquet is the one file now; a data_N left by an older layout would be
// read twice by every `*.parquet` reader, so it goes.
var ownPart = regexp.MustCompile(`^data_[0-9]+\.parquet$`)

// removeOldParts removes the data_N.parquet (N > 0) files of dir, and only those: a file of
// another name (a user's backup.parquet) is not sitewatch's to delete. Such a file is read
// with the partition by every `*.parquet` reader, so it is named in a warning.
func (w *Warehouse) removeOldParts(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", dir, err)
	}
	for _, e := range entries {
		name := e.Name()
		switch {
		case name == parquetFile || !strings.HasSuffix(name, ".parquet") || !e.Type().IsRegular():
		case ownPart.MatchString(name):
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return fmt.Errorf("remove the old part %s: %w", filepath.Join(dir, name), err)
			}
		default:
			w.log.Warn("a Parquet file sitewatch did not write is in a partition it exports; it is kept, and readers of *.parquet read it with the partition: move it out",
				"file", filepath.Join(dir, name))
		}
	}
	return nil
}

// sqlString quotes s as an SQL string literal.
func sqlString(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // read-only: Sync reported what matters
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	return nil
}

// stagingName matches exactly the staging files copyParquet creates, and nothing else: a
// hidden *.tmp file of another program under the Parquet root is not ours to delete.
var stagingName = regexp.MustCompile(`^\.` + regexp.QuoteMeta(parquetFile) + `\.[0-9a-f]{16}` + regexp.QuoteMeta(stagingSuffix) + `$`)

// cleanStaging removes the staging files a crashed export left in the partition directories
// under root (resolving a symlinked root): only names copyParquet generates, only where it
// writes them (<table>/snapshot_month=*/ and countries/).
func cleanStaging(root string, log *slog.Logger) error {
	resolved, err := filepath.EvalSymlinks(root)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("clean Parquet staging files under %s: %w", root, err)
	}
	var dirs []string
	tables := slices.Concat(model.RunHealthTables, model.ArchiveTables) // appended to below
	for _, t := range flatten.SnapshotTables {
		tables = append(tables, t.Name)
	}
	for _, name := range tables {
		parts, err := filepath.Glob(filepath.Join(resolved, name, "snapshot_month=*"))
		if err != nil {
			return err
		}
		dirs = append(dirs, parts...)
	}
	dirs = append(dirs, filepath.Join(resolved, flatten.TableCountries))
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				continue
			}
			return fmt.Errorf("clean Parquet staging files in %s: %w", dir, err)
		}
		for _, e := range entries {
			if e.Type().IsRegular() && stagingName.MatchString(e.Name()) {
				path := filepath.Join(dir, e.Name())
				log.Info("removing Parquet staging leftover of an interrupted export", "file", path)
				if err := os.Remove(path); err != nil {
					return fmt.Errorf("clean Parquet staging file %s: %w", path, err)
				}
			}
		}
	}
	return nil
}

// unordered sets preserve_insertion_order=false (a global DuckDB setting) for a bulk
// operation; ordered restores the default. Queries without ORDER BY have no guaranteed order
// anyway.
func (w *Warehouse) unordered(ctx context.Context) error {
	if _, err := w.load.ExecContext(ctx, `SET preserve_insertion_order = false`); err != nil {
		return fmt.Errorf("set preserve_insertion_order: %w", err)
	}
	return nil
}

func (w *Warehouse) ordered() {
	if _, err := w.load.ExecContext(context.Background(), `RESET preserve_insertion_order`); err != nil {
		w.log.Warn("reset preserve_insertion_order", "err", err)
	}
}
