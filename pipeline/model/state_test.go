package model

import (
	"testing"

	"sitewatch/schema"
)

// storedCount is how many domains st holds a body of.
func storedCount(st *SnapshotState) int {
	n := 0
	st.EachStored(func(string, Endpoints) { n++ })
	return n
}

// TestSnapshotStateKeepsBodiesAndLoadedApart: a domain's stored bodies and its loaded mark
// share one entry and never read as each other; counts follow what was added; a clone
// changes apart from its original.
func TestSnapshotStateKeepsBodiesAndLoadedApart(t *testing.T) {
	st := NewSnapshotState()
	st.AddStored("a.example", EndpointBit(schema.EndpointOverview))
	st.AddStored("a.example", EndpointBit(schema.EndpointSimilar))
	st.SetLoaded("a.example")
	st.SetLoaded("a.example") // twice: counted once
	st.SetLoaded("b.example") // loaded with no body (a restored month's rows)
	st.AddStored("c.example", EndpointBit(schema.EndpointSimilar)|loadedBit)
	switch {
	case !st.Stored("a.example").Both() || !st.Loaded("a.example"):
		t.Errorf("a.example: stored %v, loaded %v; want both bodies, loaded", st.Stored("a.example"), st.Loaded("a.example"))
	case st.Stored("b.example") != 0 || !st.Loaded("b.example"):
		t.Errorf("b.example: stored %v, loaded %v; want no body, loaded", st.Stored("b.example"), st.Loaded("b.example"))
	case st.Stored("c.example") != EndpointBit(schema.EndpointSimilar) || st.Loaded("c.example"):
		t.Errorf("c.example: stored %v, loaded %v; want only site-similar, not loaded (AddStored cannot mark loaded)", st.Stored("c.example"), st.Loaded("c.example"))
	case st.Loaded("d.example") || st.Stored("d.example") != 0:
		t.Error("d.example was never added but reads as held")
	}
	if st.LoadedCount() != 2 || storedCount(st) != 2 {
		t.Errorf("LoadedCount %d, stored domains %d; want 2 and 2", st.LoadedCount(), storedCount(st))
	}
	clone := st.Clone()
	clone.SetLoaded("c.example")
	clone.AddStored("d.example", EndpointBit(schema.EndpointOverview))
	var loaded []string
	for _, d := range []string{"a.example", "b.example", "c.example", "d.example"} {
		if st.Loaded(d) {
			loaded = append(loaded, d)
		}
	}
	if len(loaded) != 2 || st.LoadedCount() != 2 || st.Stored("d.example") != 0 {
		t.Errorf("after changing a clone the state has %v loaded (count %d), d.example stored %v; want a.example and b.example, nothing of d.example", loaded, st.LoadedCount(), st.Stored("d.example"))
	}
	if !clone.Loaded("a.example") || !clone.Loaded("c.example") || clone.LoadedCount() != 3 || !clone.Stored("a.example").Both() {
		t.Errorf("the clone: loaded a %v, c %v, count %d, a's bodies %v; want both loaded, 3, both bodies", clone.Loaded("a.example"), clone.Loaded("c.example"), clone.LoadedCount(), clone.Stored("a.example"))
	}
}
