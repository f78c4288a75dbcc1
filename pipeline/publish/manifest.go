package publish

import (
	"encoding/json"
	"slices"
	"time"
)

// ManifestFormat is the version of the manifest layout.
const ManifestFormat = 1

// Manifest describes one published month: every object a reader of that month should see. It
// is written after every data object of the month, so when it exists its objects were complete
// (until a later publish of the same month replaces them, and then it).
type Manifest struct {
	Format        int    `json:"format"`
	SnapshotMonth string `json:"snapshot_month"` // "" in the shared manifest
	RunID         string `json:"run_id"`
	// SchemaVersion is the newest migration of the warehouse that wrote the objects: a
	// restore refuses a bucket newer than its build.
	SchemaVersion    string         `json:"schema_version,omitempty"`
	SitewatchVersion string         `json:"sitewatch_version"`
	PublishedAt      time.Time      `json:"published_at"`
	Files            []ManifestFile `json:"files"`
}

// ManifestFile is one data object of a manifest. Key is relative to the publish prefix;
// SHA256 is the hex SHA-256 of the whole object; S3ChecksumSHA256 is the checksum the server
// verified and stored (base64; "…-N" for a multipart object: the checksum of its N part
// checksums).
type ManifestFile struct {
	Key              string `json:"key"`
	Table            string `json:"table"`
	Rows             int64  `json:"rows"`
	Size             int64  `json:"size"`
	SHA256           string `json:"sha256"`
	S3ChecksumSHA256 string `json:"s3_checksum_sha256,omitempty"`
}

// file returns the entry of key, or nil.
func (m *Manifest) file(key string) *ManifestFile {
	if m == nil {
		return nil
	}
	for i := range m.Files {
		if m.Files[i].Key == key {
			return &m.Files[i]
		}
	}
	return nil
}

// sameContent reports whether m and o describe the same objects of the same run and version:
// publishing o over m would change nothing a reader can see.
func (m *Manifest) sameContent(o *Manifest) bool {
	if m == nil || o == nil {
		return false
	}
	// SitewatchVersion is left out: it names the build that wrote these objects, and a newer
	// build finding them identical has nothing to write (a republish sends no PUT).
	return m.Format == o.Format && m.SnapshotMonth == o.SnapshotMonth && m.RunID == o.RunID && m.SchemaVersion == o.SchemaVersion &&
		slices.Equal(m.Files, o.Files)
}

func (m *Manifest) marshal() ([]byte, error) { return json.MarshalIndent(m, "", "  ") }
