// Package filehash remembers the content sums of the files of a Parquet tree by their identity
// on disk (size, modification time, inode), so a publish of files unchanged since they were
// last summed reads none of their bytes (issue 34: at a million domains a republish read the
// month's 3 GB twice, once per format, to find it had nothing to do).
//
// A sum is trusted only while every file it covers keeps the identity it had when the sum was
// computed. Every file sitewatch writes into the tree is written beside it and renamed into
// place, so a new file has a new inode; a file changed in place changes its size or its
// modification time, unless the change lands within the file system's clock tick of the
// write the sum saw. Sums of files modified that recently (racyWindow) are therefore not
// kept, as git does with its index. `publish --all --read-data` still hashes every object.
package filehash

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"sitewatch/pipeline/atomicfile"
)

// File is the cache's name at the root of the tree. It is hidden: never published.
const File = ".sitewatch-hashes.json"

// racyWindow is how long before its sum was computed a file must have last changed for the
// sum to be kept: longer than the coarsest modification-time tick of a common file system
// (1–2 s on some network and FAT file systems; nanoseconds on ext4, xfs and btrfs).
const racyWindow = 2 * time.Second

// identity is what tells one version of a file from another without reading it.
type identity struct {
	Path  string `json:"path"` // relative to the tree's root
	Size  int64  `json:"size"`
	MTime int64  `json:"mtime_ns"`
	Inode uint64 `json:"inode,omitempty"`
}

type entry struct {
	Files []identity `json:"files"`
	Sum   string     `json:"sum"`
}

// Cache holds the sums of one tree. It is safe for concurrent use.
type Cache struct {
	root    string
	now     func() time.Time
	mu      sync.Mutex
	entries map[string]entry
	changed bool
}

// Open reads the cache of the tree at root. A missing, unreadable or malformed cache is
// empty: every sum is computed once more, nothing else is lost.
func Open(root string) *Cache {
	c := &Cache{root: root, now: time.Now, entries: map[string]entry{}}
	body, err := os.ReadFile(filepath.Join(root, File))
	if err != nil {
		return c
	}
	var read map[string]entry
	if json.Unmarshal(body, &read) == nil && read != nil {
		c.entries = read
	}
	return c
}

// Sum returns the sum recorded under key when every file of paths still has the identity it
// had when that sum was computed; otherwise it returns compute's result and records it
// (unless a file changed within racyWindow before compute started). A nil Cache always
// computes.
func (c *Cache) Sum(key string, paths []string, compute func() (string, error)) (string, error) {
	if c == nil {
		return compute()
	}
	before, err := c.identities(paths)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	old, ok := c.entries[key]
	c.mu.Unlock()
	if ok && slices.Equal(old.Files, before) {
		return old.Sum, nil
	}
	start := c.now()
	sum, err := compute()
	if err != nil {
		return "", err
	}
	after, err := c.identities(paths)
	if err != nil || !slices.Equal(after, before) || racy(before, start) {
		return sum, err // changed while it was read, or too recently to trust: not kept
	}
	c.mu.Lock()
	c.entries[key] = entry{Files: before, Sum: sum}
	c.changed = true
	c.mu.Unlock()
	return sum, nil
}

func racy(files []identity, start time.Time) bool {
	for _, f := range files {
		if start.UnixNano()-f.MTime < int64(racyWindow) {
			return true
		}
	}
	return false
}

func (c *Cache) identities(paths []string) ([]identity, error) {
	ids := make([]identity, len(paths))
	for i, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("stat %s: %w", p, err)
		}
		rel, err := filepath.Rel(c.root, p)
		if err != nil {
			rel = p
		}
		ids[i] = identity{Path: filepath.ToSlash(rel), Size: fi.Size(), MTime: fi.ModTime().UnixNano(), Inode: inode(fi)}
	}
	return ids, nil
}

// Save writes the cache back when a sum was added, over what the file holds now (another
// cache of the same tree may have saved since this one was opened), keeping only entries
// whose files all still exist (a month rebuilt or removed leaves no stale entry behind). A
// failure only costs the next publish a read of the files: the caller logs it.
func (c *Cache) Save() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.changed {
		return nil
	}
	for key, e := range Open(c.root).entries {
		if _, ours := c.entries[key]; !ours {
			c.entries[key] = e
		}
	}
	for key, e := range c.entries {
		for _, f := range e.Files {
			if _, err := os.Stat(filepath.Join(c.root, filepath.FromSlash(f.Path))); errors.Is(err, fs.ErrNotExist) {
				delete(c.entries, key)
				break
			}
		}
	}
	body, err := json.Marshal(c.entries)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(c.root, File), body, 0o644); err != nil {
		return err
	}
	c.changed = false
	return nil
}
