package warehouse

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"strings"
	"sync"
	"syscall"

	"sitewatch/pipeline/atomicfile"
)

// The lists mark, <file>.lists-current: a writer that leaves the stored lists fresh (cache_state,
// cachestate.go) records beside the DuckDB file the file's identity as it leaves it (size,
// modification time to the nanosecond, inode), with the list settings it stored and the stamp
// of its view definitions. A reader that finds the file unchanged since (and no WAL) knows no
// one has written a row since the lists were stored, so it reads them without recomputing the
// checksums of every row they came from (at 100,000 domains 0.6–1 s of a `show`). Any write,
// by sitewatch or another program, changes the file's modification time; a writer's open
// removes the mark before anything else, and a file system without nanosecond times gets no
// mark. Without a valid mark the reads check the checksums as before.

type listsMark struct {
	Size       int64  `json:"size"`
	ModTimeNS  int64  `json:"mtime_ns"`
	Inode      uint64 `json:"inode"`
	Settings   string `json:"settings"`
	Definition string `json:"definition"`
}

// definitionStamp is this build's stamp of the view definitions (viewsStamp), computed once.
var definitionStamp = sync.OnceValues(func() (string, error) {
	texts, err := viewTexts()
	if err != nil {
		return "", err
	}
	return viewsStamp(texts), nil
})

func listsMarkPath(duckdbPath string) string { return duckdbPath + ".lists-current" }

// fileIdentity is the mark's identity of path now; ok is false when the file system cannot
// tell a rewrite within the same second (no nanoseconds) or the inode is unknown.
func fileIdentity(path string) (listsMark, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return listsMark{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	ns := fi.ModTime().UnixNano()
	if !ok || ns%1_000_000_000 == 0 {
		return listsMark{}, false
	}
	return listsMark{Size: fi.Size(), ModTimeNS: ns, Inode: uint64(st.Ino)}, true //nolint:unconvert // Ino is uint32 on some platforms
}

// removeListsMark is a writer's first step after taking the file: from now on the file may change.
// It also removes what a writer killed while writing the mark left beside it (a run killed
// at its Close left ".w.duckdb.lists-current.tmp-…": a kill point of
// TestCrashKillMinus9DuringRun): no other writer can be writing it now.
func removeListsMark(duckdbPath string) error {
	if err := os.Remove(listsMarkPath(duckdbPath)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return atomicfile.RemoveLeftovers(listsMarkPath(duckdbPath))
}

// fileState is the DuckDB file and its WAL at an instant: any write changes one of them (a
// commit appends to the WAL, a checkpoint or a large insert writes the file).
type fileState struct {
	db           listsMark
	walSize      int64 // -1: no WAL
	walModTimeNS int64
	ok           bool
}

func currentFileState(duckdbPath string) fileState {
	id, ok := fileIdentity(duckdbPath)
	st := fileState{db: id, walSize: -1, ok: ok}
	if fi, err := os.Stat(duckdbPath + ".wal"); err == nil {
		st.walSize, st.walModTimeNS = fi.Size(), fi.ModTime().UnixNano()
	}
	return st
}

// unchangedSinceFresh tells, before Close's checkpoint, whether the lists are fresh and nothing
// wrote the file or its WAL since noteFreshFile.
func (w *Warehouse) unchangedSinceFresh() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cachesFresh.Load() && w.freshFile.ok && currentFileState(w.opts.DuckDBPath) == w.freshFile
}

// writeListsMark records the file as it is now, after Close's checkpoint and while this writer
// still holds it; the caller checked unchangedSinceFresh before that checkpoint.
func (w *Warehouse) writeListsMark() {
	id, ok := fileIdentity(w.opts.DuckDBPath)
	if !ok || walPresent(w.opts.DuckDBPath) {
		return
	}
	stamp, err := definitionStamp()
	if err != nil {
		return
	}
	id.Settings, id.Definition = w.listSettingsKey(), stamp
	data, err := json.Marshal(id)
	if err == nil {
		err = atomicfile.WriteFile(listsMarkPath(w.opts.DuckDBPath), data, 0o644)
	}
	if err != nil {
		w.log.Warn("could not record that the stored lists are current; readers check them row by row", "err", err)
	}
}

func walPresent(duckdbPath string) bool {
	fi, err := os.Stat(duckdbPath + ".wal")
	return err == nil && fi.Size() > 0
}

// readListsMark is a reader's: the settings whose stored lists are current, "" when the mark is
// missing or the file changed since it was written.
func readListsMark(duckdbPath string) string {
	data, err := os.ReadFile(listsMarkPath(duckdbPath))
	if err != nil {
		return ""
	}
	var m listsMark
	if json.Unmarshal(data, &m) != nil {
		return ""
	}
	id, ok := fileIdentity(duckdbPath)
	stamp, err := definitionStamp()
	if !ok || err != nil || walPresent(duckdbPath) || id.Size != m.Size || id.ModTimeNS != m.ModTimeNS || id.Inode != m.Inode ||
		m.Definition != stamp {
		return ""
	}
	return m.Settings
}

// StoredListsCurrent tells a reader whether the stored needs-attention list for these settings
// (zero: the defaults) and the stored lists of `changes` are current as of every row in the
// file, by the writer's mark: the reads may then skip their checksums. False on a writer.
func (w *Warehouse) StoredListsCurrent(minVisits int64, threshold float64) bool {
	key := AttentionListSettings{MinVisits: minVisits, Threshold: threshold}.withDefaults().key()
	return w.listsCurrent != "" && strings.Contains(";"+w.listsCurrent, ";"+key)
}
