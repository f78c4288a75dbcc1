package sources

import (
	"context"
	"errors"
	"testing"

	"sitewatch/pipeline/atlas"
	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/model"
)

// Two clients sharing one atlas.RunBudget of 10 are charged 10 together (not 10 each), and
// the fetch ends with ErrRunBudget; with the rooms as the cap's shares (Cap), each source
// pays its share: a 4, b 6.
func TestMultiSharedRunBudget(t *testing.T) {
	for _, shares := range []bool{false, true} {
		srv := newSim(t, atlastest.Options{Keys: map[string]int64{keyA: 100, keyB: 100}})
		budget := atlas.NewRunBudget(10)
		roomA, roomB := int64(100), int64(100)
		if shares {
			roomA, roomB = 4, 6
		}
		a := newSource(t, "a", roomA, atlas.Config{BaseURL: srv.URL, APIKey: keyA, RunBudget: budget})
		b := newSource(t, "b", roomB, atlas.Config{BaseURL: srv.URL, APIKey: keyB, RunBudget: budget})
		m := NewMulti([]*Source{a, b})
		if shares {
			m.Cap(&model.Error{Op: "start", Err: model.ErrRunBudget, Message: "cap of 10 spent"})
		}
		paid := map[string]int64{}
		err := m.FetchAll(context.Background(), requests(30), func(res model.Result) { paid[res.Source] += res.Charged })
		if !errors.Is(err, model.ErrRunBudget) {
			t.Errorf("shares %t: FetchAll = %v, want ErrRunBudget", shares, err)
		}
		if got := srv.Stats().Charged; got != 10 {
			t.Errorf("shares %t: charged %d together, want 10 (paid %v)", shares, got, paid)
		}
		if shares && (paid["a"] != 4 || paid["b"] != 6) {
			t.Errorf("paid %v, want a 4 and b 6 (their shares of the cap)", paid)
		}
	}
}
