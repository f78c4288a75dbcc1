package warehouse

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// CheckWritable reports whether both outputs can be written: the DuckDB file's directory and
// the Parquet root. Open runs it for writers, so a run fails before its first paid call
// rather than after its last.
func (w *Warehouse) CheckWritable() error {
	if w.opts.ReadOnly {
		return errors.New("the warehouse is open read-only")
	}
	return checkWritable(w.opts)
}

// checkWritable creates the output directories and writes and removes a probe file in each.
func checkWritable(opts Options) error {
	type output struct{ dir, key, file string }
	dirs := []output{{filepath.Dir(opts.DuckDBPath), "warehouse.duckdb", opts.DuckDBPath}}
	if opts.ParquetDir != "" {
		dirs = append(dirs, output{opts.ParquetDir, "warehouse.parquet", opts.ParquetDir})
	}
	for _, d := range dirs {
		if err := probeDir(d.dir); err != nil {
			return fmt.Errorf("%s (%s): the directory %s is not writable: %w; fix the permissions or point %s at a writable directory",
				d.key, d.file, d.dir, err, d.key)
		}
	}
	return nil
}

func probeDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return err
	}
	probe := filepath.Join(dir, ".sitewatch-probe-"+hex.EncodeToString(rnd[:]))
	f, err := os.OpenFile(probe, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, werr := f.Write([]byte("sitewatch write probe\n"))
	cerr := f.Close()
	rerr := os.Remove(probe)
	return errors.Join(werr, cerr, rerr)
}

// diskError adds what to do to a storage error of DuckDB (a full disk, a read-only file).
func diskError(path string, err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "No space left"), strings.Contains(msg, "File too large"), strings.Contains(msg, "Could not write"):
		return fmt.Errorf("%w: free disk space for %s (or raise the file size limit), then rerun; what was committed before is kept "+
			"(in the file or its .wal, which the next open replays)", err, path)
	case strings.Contains(msg, "Permission denied"), strings.Contains(msg, "Read-only file system"):
		return fmt.Errorf("%w: this user cannot write %s; fix the permissions, then rerun", err, path)
	}
	return err
}
