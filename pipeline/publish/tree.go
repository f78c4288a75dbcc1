package publish

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/parquet/file"

	"sitewatch/pipeline/publish/filehash"
)

// partitionPrefix names a Hive partition directory of the snapshot month.
const partitionPrefix = "snapshot_month="

var monthRE = regexp.MustCompile(`^[0-9]{4}-(0[1-9]|1[0-2])$`)

// localFile is one Parquet file of the local tree and what the manifest records of it.
type localFile struct {
	Rel    string // slash path under the Parquet root, the object key under the prefix
	Table  string
	Path   string
	Size   int64
	SHA256 []byte
	Rows   int64
}

// tree is the local Parquet tree: each table is either partitioned by month
// (<table>/snapshot_month=M/*.parquet) or whole (<table>/*.parquet, like countries).
type tree struct {
	root        string
	partitioned map[string][]string // table -> months
	whole       []string            // tables without partitions
}

// scanTree reads the table directories of root. Hidden entries (staging files of an export in
// progress) are never published.
func scanTree(root string) (*tree, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("read the Parquet tree %s: %w (run `sitewatch run` first, or fix warehouse.parquet)", root, err)
	}
	t := &tree{root: root, partitioned: map[string][]string{}}
	for _, e := range entries {
		if !e.IsDir() || hidden(e.Name()) {
			continue
		}
		sub, err := os.ReadDir(filepath.Join(root, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read the Parquet tree %s: %w", root, err)
		}
		for _, s := range sub {
			month, ok := strings.CutPrefix(s.Name(), partitionPrefix)
			switch {
			case s.IsDir() && ok && monthRE.MatchString(month):
				t.partitioned[e.Name()] = append(t.partitioned[e.Name()], month)
			case !s.IsDir() && isParquet(s.Name()) && !slices.Contains(t.whole, e.Name()):
				t.whole = append(t.whole, e.Name())
			}
		}
	}
	return t, nil
}

func hidden(name string) bool { return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") }

func isParquet(name string) bool { return !hidden(name) && strings.HasSuffix(name, ".parquet") }

// months returns every month with at least one partition, oldest first.
func (t *tree) months() []string {
	var ms []string
	for _, months := range t.partitioned {
		for _, m := range months {
			if !slices.Contains(ms, m) {
				ms = append(ms, m)
			}
		}
	}
	slices.Sort(ms)
	return ms
}

// monthFiles lists the files a month's publication holds: every table's partition of month.
// It fails with ErrNoMonth when no table has a partition of month.
func (t *tree) monthFiles(month string) ([]localFile, error) {
	var files []localFile
	for table, months := range t.partitioned {
		if slices.Contains(months, month) {
			fs, err := t.dirFiles(table, path.Join(table, partitionPrefix+month))
			if err != nil {
				return nil, err
			}
			files = append(files, fs...)
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%w: no partition snapshot_month=%s under %s (run or rebuild that month first)", ErrNoMonth, month, t.root)
	}
	slices.SortFunc(files, func(a, b localFile) int { return strings.Compare(a.Rel, b.Rel) })
	return files, nil
}

// sharedFiles lists the files of every whole table (countries): the shared manifest's.
func (t *tree) sharedFiles() ([]localFile, error) {
	var files []localFile
	for _, table := range t.whole {
		fs, err := t.dirFiles(table, table)
		if err != nil {
			return nil, err
		}
		files = append(files, fs...)
	}
	slices.SortFunc(files, func(a, b localFile) int { return strings.Compare(a.Rel, b.Rel) })
	return files, nil
}

func (t *tree) dirFiles(table, rel string) ([]localFile, error) {
	entries, err := os.ReadDir(filepath.Join(t.root, filepath.FromSlash(rel)))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", rel, err)
	}
	var files []localFile
	for _, e := range entries {
		if e.Type().IsRegular() && isParquet(e.Name()) {
			files = append(files, localFile{Rel: path.Join(rel, e.Name()), Table: table,
				Path: filepath.Join(t.root, filepath.FromSlash(rel), e.Name())})
		}
	}
	return files, nil
}

// describe fills Size, SHA256 and Rows (from the Parquet footer) of f. The SHA-256 comes
// from sums while the file is the one it was computed from (nil sums: always read).
func (f *localFile) describe(sums *filehash.Cache) error {
	hexed, err := sums.Sum(f.Rel, []string{f.Path}, func() (string, error) {
		h, _, err := hashFile(f.Path)
		return hexSum(h), err
	})
	if err != nil {
		return fmt.Errorf("hash %s: %w", f.Path, err)
	}
	if f.SHA256, err = hex.DecodeString(hexed); err != nil {
		return fmt.Errorf("hash %s: %w", f.Path, err)
	}
	fi, err := os.Stat(f.Path)
	if err != nil {
		return fmt.Errorf("hash %s: %w", f.Path, err)
	}
	f.Size = fi.Size()
	r, err := file.OpenParquetFile(f.Path, false)
	if err != nil {
		return fmt.Errorf("read the Parquet footer of %s: %w", f.Path, err)
	}
	defer func() { _ = r.Close() }() // read-only
	f.Rows = r.NumRows()
	return nil
}

func hashFile(p string) ([]byte, int64, error) {
	fh, err := os.Open(p)
	if err != nil {
		return nil, 0, err
	}
	defer func() { _ = fh.Close() }() // read-only
	h := sha256.New()
	n, err := io.Copy(h, fh)
	if err != nil {
		return nil, 0, err
	}
	return h.Sum(nil), n, nil
}

func hexSum(b []byte) string { return hex.EncodeToString(b) }

// sums opens the cache of the SHA-256 sums of the tree at root (nil with Options.ReadData:
// every local file is read and hashed too).
func (p *Publisher) sums(root string) *filehash.Cache {
	if p.opts.ReadData {
		return nil
	}
	return filehash.Open(root)
}

// saveSums writes sums back; a failure costs the next publish one read of the files.
func (p *Publisher) saveSums(sums *filehash.Cache) {
	if err := sums.Save(); err != nil {
		p.log.Warn("could not save the sums of the Parquet files: the next publish reads them again", "file", filehash.File, "err", err)
	}
}
