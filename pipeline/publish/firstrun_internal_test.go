package publish

import "testing"

// TestFirstRunMayIgnore: what a prefix without a manifest may hold and still be a first run
// (the lease, the answer log, the files of a first publish that never reached its manifest),
// and what means months a new warehouse would pay for again (Iceberg tables, anything else).
func TestFirstRunMayIgnore(t *testing.T) {
	for _, tt := range []struct {
		rel  string
		want bool
	}{
		{"_sitewatch/lease.json", true},
		{"_restore/_log/snapshot_month=2026-10/20261128T200217Z-2b6da1/00000003.json.zst", true},
		{"_restore/raw_responses/snapshot_month=2026-10/part-0.parquet", true},
		{"_restore/_manifests/snapshot_month=2026-10.json.tmp", true},
		{"sites/snapshot_month=2026-10/part-0.parquet", true},
		{"countries/part-0.parquet", true},
		{"sites/metadata/00001-5f1c.metadata.json", false},
		{"sites/data/snapshot_month=2026-10/00000-0-a.parquet", false},
		{"sites/data/00000-0-a.parquet", false},
		{"sites/snapshot_month=2026-10/notes.txt", false},
		{"_other/part-0.parquet", false},
		{"readme.txt", false},
		{"sites/.part-0.parquet.tmp", false},
	} {
		if got := firstRunMayIgnore(tt.rel); got != tt.want {
			t.Errorf("firstRunMayIgnore(%q) = %v, want %v", tt.rel, got, tt.want)
		}
	}
}
