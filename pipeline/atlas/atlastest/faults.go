package atlastest

import (
	"encoding/binary"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
)

// draw returns the generator of the next fault draw of kind ("429", "5xx", "200") for the
// request's path and url value: seeded from Options.Seed, the kind, the path, the url value
// and how many such draws came before. The same seed therefore injects the same faults into
// the same calls (the nth request for a domain gets the nth draw for that domain) however
// the client's workers interleave, so a test that fails on a fault replays with its seed.
// A draw from the process-wide generator could not: which request took which value depended
// on arrival order, and the seed the test printed replayed nothing. The counts are kept by a
// 64-bit hash of the call (16 bytes a call, not its strings: a simulator with faults serving
// a million domains); two calls sharing a hash would share a count, which changes only which
// draw each gets.
func (h *Handler) draw(kind string, r *http.Request) *rand.Rand {
	f := fnv.New64a()
	f.Write([]byte(kind + "\x00" + r.URL.Path + "\x00" + r.URL.Query().Get("url")))
	call := f.Sum64()
	h.mu.Lock()
	n := h.draws[call]
	h.draws[call] = n + 1
	h.mu.Unlock()
	var b [24]byte
	binary.LittleEndian.PutUint64(b[:8], uint64(h.opts.Seed))
	binary.LittleEndian.PutUint64(b[8:16], call)
	binary.LittleEndian.PutUint64(b[16:], n)
	f.Reset()
	f.Write(b[:])
	s := f.Sum64()
	return rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15))
}
