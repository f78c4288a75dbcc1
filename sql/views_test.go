package sql

import (
	"slices"
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
