package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"sitewatch/pipeline/atomicfile"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/report"
	"sitewatch/pipeline/warehouse"
	"sitewatch/pipeline/wire"
)

// reportCSVPath is the CSV written beside the page out: every domain's All domains row,
// "report-2026-10.html" → "report-2026-10-domains.csv".
func reportCSVPath(out string) string {
	base := out
	for _, ext := range []string{".html", ".htm", ".HTML", ".HTM"} {
		base = strings.TrimSuffix(base, ext)
	}
	return base + "-domains.csv"
}

// checkReportTargets checks the page out and the CSV beside it (checkReportTarget) and
// returns the CSV's path.
func checkReportTargets(out string, cfg *config.Config, force bool) (string, error) {
	if err := checkReportTarget(out, cfg, force); err != nil {
		return "", err
	}
	csvPath := reportCSVPath(out)
	if err := checkTarget(csvPath, "the report's CSV", cfg, force, looksLikeDomainsCSV); err != nil {
		return "", err
	}
	return csvPath, nil
}

// writeReport writes the CSV of every domain, then the page that names it, each atomically:
// on an error neither is half written.
func writeReport(ctx context.Context, wh *warehouse.Warehouse, snapshot string, cfg *config.Config, out, csvPath string) error {
	db, s := wh.DB(), wire.ReaderAttentionSettings(cfg, wh)
	return atomicfile.Write(csvPath, 0o644, func(csv io.Writer) error {
		return atomicfile.Write(out, 0o644, func(page io.Writer) error {
			return report.WriteFiles(ctx, db, snapshot, s, report.Files{Page: page, CSV: csv, CSVName: filepath.Base(csvPath),
				DiscoverMinVisits: cfg.Discover.MinVisits})
		})
	})
}

// checkReportTarget refuses an --out that would destroy data: the warehouse file, its WAL or
// the progress file beside it, anything inside the Parquet tree, and (unless force) an
// existing file that is not an HTML page (a previous report is replaced).
func checkReportTarget(out string, cfg *config.Config, force bool) error {
	return checkTarget(out, "--out", cfg, force, looksLikeHTML)
}

// checkTarget refuses a path (named what in messages) that would destroy data: the
// warehouse's own files, the Parquet tree, a directory, or (unless force) an existing file
// that ours does not fit (a previous report or CSV is replaced).
func checkTarget(out, what string, cfg *config.Config, force bool, ours func(string) bool) error {
	target := canonical(out)
	for _, own := range []string{cfg.Warehouse.DuckDB, cfg.Warehouse.DuckDB + ".wal", cfg.Warehouse.DuckDB + ".run.json"} {
		if target == canonical(own) {
			return &UsageError{Msg: fmt.Sprintf("%s %s is the warehouse's own file: choose another --out file name (e.g. report.html)", what, out)}
		}
	}
	if root := canonical(cfg.Warehouse.Parquet); target == root || strings.HasPrefix(target, root+string(filepath.Separator)) {
		return &UsageError{Msg: fmt.Sprintf("%s %s is inside the Parquet tree %s, which BI tools read: write the report elsewhere", what, out, cfg.Warehouse.Parquet)}
	}
	info, err := os.Stat(out)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("check %s %s: %w", what, out, err)
	case info.IsDir():
		return &UsageError{Msg: fmt.Sprintf("%s %s is a directory: give --out a file name", what, out)}
	case force:
		return nil
	}
	if !ours(out) {
		return &UsageError{Msg: fmt.Sprintf("%s %s exists and is not one the report wrote: refusing to replace it (pass --force to overwrite it anyway)", what, out)}
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

// looksLikeDomainsCSV says whether the file starts like the CSV the report writes.
func looksLikeDomainsCSV(path string) bool {
	return bytes.HasPrefix(head(path), []byte("\xef\xbb\xbfDomain,Title,"))
}

// head is the first 512 bytes of the file, none when it cannot be read.
func head(path string) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer func() { _ = f.Close() }() // read-only
	b := make([]byte, 512)
	n, _ := io.ReadFull(f, b)
	return b[:n]
}

// looksLikeHTML says whether the file starts like an HTML document.
func looksLikeHTML(path string) bool {
	h := bytes.ToLower(bytes.TrimSpace(bytes.TrimPrefix(head(path), []byte("\xef\xbb\xbf"))))
	return bytes.HasPrefix(h, []byte("<!doctype html")) || bytes.HasPrefix(h, []byte("<html"))
}
