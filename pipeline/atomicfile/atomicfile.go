// Package atomicfile replaces files that other programs read while sitewatch runs (the live
// progress file, the Prometheus textfile, the HTML report): a reader sees the old content or
// the new, never a half-written file.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Write replaces path with what write produces: it writes a hidden temporary sibling, syncs
// it, gives it perm and renames it over path. On any failure path is untouched and the
// temporary file is removed. A process killed before the rename leaves the sibling behind;
// RemoveLeftovers deletes it.
func Write(path string, perm os.FileMode, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), tempPrefix(path)+"*")
	if err != nil {
		return fmt.Errorf("create a temporary file beside %s: %w", path, err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // fails once renamed: nothing left to remove
	err = write(tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), perm) // CreateTemp makes it 0600; readers may be other users
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// WriteFile is Write for content already in memory, as os.WriteFile is to os.Create.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return Write(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// RemoveLeftovers deletes the temporary siblings of path that writes killed before their
// rename left behind. Call it only where no other Write of path can be in flight (the one
// process that owns the file, at its start). It returns the first removal that failed.
func RemoveLeftovers(path string) error {
	leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(path), globEscape(tempPrefix(path))+"*")) // the pattern is escaped, so Glob cannot fail
	var errs []error
	for _, name := range leftovers {
		if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove the leftover of an interrupted write %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

func tempPrefix(path string) string { return "." + filepath.Base(path) + ".tmp-" }

// globEscape quotes the characters filepath.Match treats specially.
func globEscape(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', '\\':
			out = append(out, '\\')
		}
		out = append(out, s[i])
	}
	return string(out)
}
