package sql

import (
	"slices"
	"strings"
	"testing"
)

// TestViewsHonourRequires: needs_attention.sql requires discover_candidates.sql (its view
// binds the macro, which reads discover_candidates, at creation), so it comes after it although
// it sorts before; every other file keeps its lexical place.
func TestViewsHonourRequires(t *testing.T) {
	views, err := Views()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range views {
		names = append(names, v.Name)
	}
	need, disc := slices.Index(names, "views/needs_attention.sql"), slices.Index(names, "views/discover_candidates.sql")
	if need < 0 || disc < 0 || need < disc {
		t.Errorf("views in order %v: needs_attention.sql must follow discover_candidates.sql", names)
	}
	if got := requires("-- a comment\n-- requires: a.sql, b.sql\nSELECT 1;\n  -- requires: c.sql"); !slices.Equal(got, []string{"a.sql", "b.sql", "c.sql"}) {
		t.Errorf("requires = %v, want [a.sql b.sql c.sql]", got)
	}
}

// TestChecksumsAreRowsChecksum: the stored lists are read only while their sources' checksums
// match, so every checksum of a group of rows goes through rows_checksum (views/_checksum.sql).
// A bit_xor of hash() of several values misses two rows whose last column moved alike, and
// two equal rows (pipeline/changes TestStaleStoredListsNeverRead shows both).
func TestChecksumsAreRowsChecksum(t *testing.T) {
	views, err := Views()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range views {
		if v.Name == "views/_checksum.sql" {
			continue
		}
		for i, line := range strings.Split(v.Text, "\n") {
			if code, _, _ := strings.Cut(line, "--"); strings.Contains(strings.ToLower(code), "bit_xor(") {
				t.Errorf("%s:%d: %s: checksum a group of rows with rows_checksum(hash(...)) instead", v.Name, i+1, strings.TrimSpace(line))
			}
		}
	}
}
