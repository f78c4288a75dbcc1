package publish

import (
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sitewatch/pipeline/atomicfile"
)

// SyncStateFile, at the root of the local Parquet tree, records the manifest versions the
// warehouse has taken in: those a sync pulled or found held, and those a publish from this
// tree wrote. With it a sync of a bucket that holds nothing new costs one listing, even
// right after this machine's own publish. It is hidden: never published.
const SyncStateFile = ".sitewatch-bucket.json"

// SyncState is the content of SyncStateFile.
type SyncState struct {
	URL       string                 `json:"url"`       // publish.url it describes
	Manifests map[string]SeenVersion `json:"manifests"` // manifest key (relative to the prefix) -> version
	// Logs are the answer log's segments the warehouse holds (it merged or wrote them). A
	// pull skips them; a publish of their month folds them in and deletes them.
	Logs map[string]SeenLog `json:"logs,omitempty"`
}

// SeenLog is a segment of the answer log the warehouse holds.
type SeenLog struct {
	Month string `json:"month"`
	ETag  string `json:"etag"`
}

// AddLogs records segments the warehouse holds (by key), in the state of the tree at root
// for url.
func AddLogs(root, url string, logs map[string]SeenLog) error {
	if len(logs) == 0 {
		return nil
	}
	st := LoadSyncState(root, url, nil)
	if st.Logs == nil {
		st.Logs = map[string]SeenLog{}
	}
	for k, m := range logs {
		st.Logs[k] = m
	}
	return st.Save(root)
}

// DropLogs forgets segments deleted from the bucket.
func DropLogs(root, url string, keys []string) error {
	st := LoadSyncState(root, url, nil)
	if len(st.Logs) == 0 {
		return nil
	}
	for _, k := range keys {
		delete(st.Logs, k)
	}
	return st.Save(root)
}

// SeenVersion is a manifest version the warehouse holds: its ETag and the runs it names.
type SeenVersion struct {
	ETag  string   `json:"etag"`
	RunID string   `json:"run_id"`
	Runs  []string `json:"runs,omitempty"`
}

// LoadSyncState reads the state of the tree at root for url; a missing or unreadable file,
// or one of another bucket, is empty (every manifest is then read once).
func LoadSyncState(root, url string, log *slog.Logger) SyncState {
	st := SyncState{URL: url, Manifests: map[string]SeenVersion{}}
	path := filepath.Join(root, SyncStateFile)
	body, err := os.ReadFile(path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) && log != nil {
			log.Warn("the bucket sync state is unreadable: every manifest is read again", "file", path, "err", err)
		}
		return st
	}
	var read SyncState
	if json.Unmarshal(body, &read) != nil || read.URL != url || read.Manifests == nil {
		return st
	}
	return read
}

// Save writes st to the tree at root, atomically.
func (st SyncState) Save(root string) error {
	body, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(root, SyncStateFile), body, 0o644)
}

// recordVersion notes in the state of the tree at root that the warehouse holds m, the
// version of the month manifest at rel (a publish from this tree wrote it, or found it
// unchanged). A failure only costs the next sync one read: it is logged.
func (p *Publisher) recordVersion(root, rel string, m *Manifest) {
	if p.url == "" || m == nil || m.ETag == "" || m.SnapshotMonth == "" {
		return
	}
	key := path2key(p.statePrefix, rel)
	st := LoadSyncState(root, p.url, p.log)
	v := SeenVersion{ETag: strings.Trim(m.ETag, `"`), RunID: m.RunID, Runs: m.Runs}
	if old, ok := st.Manifests[key]; ok && old.ETag == v.ETag && old.RunID == v.RunID && slices.Equal(old.Runs, v.Runs) {
		return
	}
	st.Manifests[key] = v
	if err := st.Save(root); err != nil {
		p.log.Warn("could not record the manifest version just published: the next sync reads it once", "file", filepath.Join(root, SyncStateFile), "err", err)
	}
}

func path2key(prefix, rel string) string {
	if prefix == "" {
		return rel
	}
	return prefix + "/" + rel
}

// RecordRestored writes the state of the tree at root after a restore from url built its
// warehouse from months (the months' manifests) and copies (the restore copies' manifests,
// read through RestoreCopies): the same versions a sync would have recorded, so the next sync
// costs one listing instead of reading every manifest again. It replaces any earlier state:
// the warehouse now holds what the restore took, nothing else.
func RecordRestored(root, url string, months, copies []*Manifest) error {
	st := SyncState{URL: url, Manifests: map[string]SeenVersion{}}
	add := func(prefix string, m *Manifest) {
		if m.SnapshotMonth == "" || m.Key == "" || m.ETag == "" {
			return // the shared tables' manifest: a sync never reads it
		}
		st.Manifests[path2key(prefix, m.Key)] = SeenVersion{ETag: strings.Trim(m.ETag, `"`), RunID: m.RunID, Runs: m.Runs}
	}
	for _, m := range months {
		add("", m)
	}
	for _, m := range copies {
		add(RestoreCopyDir, m)
	}
	return st.Save(root)
}
