package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"sitewatch/pipeline/config"
)

// checkReportTarget refuses an --out that would destroy data: the warehouse file, its WAL or
// the progress file beside it, anything inside the Parquet tree, and (unless force) an
// existing file that is not an HTML page (a previous report is replaced).
func checkReportTarget(out string, cfg *config.Config, force bool) error {
	target := canonical(out)
	for _, own := range []string{cfg.Warehouse.DuckDB, cfg.Warehouse.DuckDB + ".wal", cfg.Warehouse.DuckDB + ".run.json"} {
		if target == canonical(own) {
			return &UsageError{Msg: fmt.Sprintf("--out %s is the warehouse's own file: choose another file name (e.g. report.html)", out)}
		}
	}
	if root := canonical(cfg.Warehouse.Parquet); target == root || strings.HasPrefix(target, root+string(filepath.Separator)) {
		return &UsageError{Msg: fmt.Sprintf("--out %s is inside the Parquet tree %s, which BI tools read: write the report elsewhere", out, cfg.Warehouse.Parquet)}
	}
	info, err := os.Stat(out)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("check --out %s: %w", out, err)
	case info.IsDir():
		return &UsageError{Msg: fmt.Sprintf("--out %s is a directory: give a file name", out)}
	case force:
		return nil
	}
	if !looksLikeHTML(out) {
		return &UsageError{Msg: fmt.Sprintf("--out %s exists and is not an HTML page: refusing to replace it (pass --force to overwrite it anyway)", out)}
	}
	return nil
}

// canonical is path made absolute with symlinks resolved as far as they exist.
func canonical(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(dir, filepath.Base(abs))
	}
	return abs
}

// looksLikeHTML says whether the file starts like an HTML document.
func looksLikeHTML(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }() // read-only
	head := make([]byte, 512)
	n, _ := io.ReadFull(f, head)
	head = bytes.ToLower(bytes.TrimSpace(bytes.TrimPrefix(head[:n], []byte("\xef\xbb\xbf"))))
	return bytes.HasPrefix(head, []byte("<!doctype html")) || bytes.HasPrefix(head, []byte("<html"))
}
