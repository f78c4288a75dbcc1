package atlastest_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"sitewatch/pipeline/atlas/atlastest"
)

// TestFaultsReplayWithTheSeed: the faults a seed injects are the same for the same calls
// whatever their order (a client's workers interleave them differently each run), and
// another seed injects others. Each call is sent twice, so the second draw of a call is
// checked too (a retry of a broken answer may well come back intact).
func TestFaultsReplayWithTheSeed(t *testing.T) {
	var paths []string
	for _, d := range atlastest.Domains(20) {
		paths = append(paths, "/atlas/site-overview?url="+d, "/atlas/site-similar?url="+d)
	}
	outcomes := func(seed int64, order []int) map[string]string {
		s := newServer(t, atlastest.Options{Seed: seed, Rate: 100000, Keys: map[string]int64{"k": 1000}, FailRate: 0.2,
			Faults: atlastest.Faults{RateLimited: 0.1, Truncated: 0.1, HTML200: 0.1, Drift: 0.1}})
		got := map[string]string{}
		for _, i := range order {
			r := get(t, s, paths[i%len(paths)], "X-API-Key", "k")
			key := fmt.Sprintf("%s #%d", paths[i%len(paths)], i/len(paths))
			got[key] = fmt.Sprintf("%d %s %x", r.status, r.header.Get("Content-Type"), fnv(r.body))
		}
		return got
	}
	order := make([]int, 2*len(paths))
	for i := range order {
		order[i] = i
	}
	first := outcomes(7, order)
	shuffled := rand.New(rand.NewPCG(1, 2)).Perm(len(paths)) // one permutation for both rounds
	var again []int
	for round := range 2 {
		for _, i := range shuffled {
			again = append(again, round*len(paths)+i)
		}
	}
	second := outcomes(7, again)
	for k, v := range first {
		if second[k] != v {
			t.Errorf("seed 7, %s: %s in one order, %s in another", k, v, second[k])
		}
	}
	statuses := map[string]bool{}
	for _, v := range first {
		statuses[v] = true
	}
	if len(statuses) < 4 {
		t.Errorf("seed 7 drew only %d kinds of answers over %d calls: the faults are not drawn", len(statuses), len(first))
	}
	other := outcomes(8, order)
	same := 0
	for k, v := range first {
		if other[k] == v {
			same++
		}
	}
	if same == len(first) {
		t.Errorf("seeds 7 and 8 drew the same faults for all %d calls: the seed is not used", len(first))
	}
}

// fnv is a short fingerprint of a body (which holds no request id: equal answers are equal).
func fnv(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}
