package publishtest

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// AgeTree sets every file under root an hour back, as a month exported well before its
// publish: the sums of files changed within the file system's clock tick are never cached
// (pipeline/publish/filehash).
func AgeTree(t testing.TB, root string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		return os.Chtimes(p, old, old)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// FlipByteKeepingTime changes one byte in the middle of the file at path in place and puts
// its modification time back: a change no size, time or inode shows, so only a publish that
// reads the file's bytes sees it.
func FlipByteKeepingTime(t testing.TB, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
}
