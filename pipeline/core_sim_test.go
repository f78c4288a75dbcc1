package pipeline

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/fetchtest"
	"sitewatch/pipeline/storetest"
	"sitewatch/schema"
)

var (
	simSeed  = flag.Uint64("core.seed", 0, "TestSimulatedRuns: replay this seed only")
	simSeeds = flag.Int("core.seeds", 40, "TestSimulatedRuns: how many seeds to run (from 1)")
	// A site-similar answer carries no date: one answered after the API turned and before any
	// overview answer showed the turn is filed under the run's month (a known limit; see
	// docs/design.md, "Testing the core"). The check finds it in about 1 seed in 9.
	simSimilar = flag.Bool("core.similar-month", false, "TestSimulatedRuns: also check that every stored site-similar body is its month's")
)

// TestSimulatedRuns runs random sequences of runs against the fakes (one seeded stream per
// seed: watchlist, faults, credits, caps, month turns) and checks the invariants after every
// run: the ledger equals the API's charges, every stored site-overview body is the body of the
// month it is stored under, a complete month is never rewritten, and exit 0 means the month is
// complete; at the end, runs without faults complete the month the API serves, and one more
// run is up to date for one call. A failing seed replays alone:
// go test -run TestSimulatedRuns ./pipeline/ -core.seed=N
func TestSimulatedRuns(t *testing.T) {
	seeds := make([]uint64, 0, *simSeeds)
	for s := 1; s <= *simSeeds; s++ {
		seeds = append(seeds, uint64(s))
	}
	if *simSeed != 0 {
		seeds = []uint64{*simSeed}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			inBubble(t, func(t *testing.T) { simulate(t, seed) })
			if t.Failed() {
				t.Logf("replay: go test -run TestSimulatedRuns ./pipeline/ -core.seed=%d", seed)
			}
		})
	}
}

// sim is one seed's world: the store carries over from run to run, the API's month moves on.
type sim struct {
	t        *testing.T
	rng      *rand.Rand
	domains  []string
	rejected map[string]bool // domains the API always answers 400
	store    *storetest.Store
	served   string
	turns    int
}

func simulate(t *testing.T, seed uint64) {
	s := &sim{t: t, rng: rand.New(rand.NewPCG(seed, 0x5eed)), store: storetest.New(), served: jun, rejected: map[string]bool{}}
	s.domains = domainsN(1 + s.rng.IntN(6))
	for _, d := range s.domains[1:] { // one domain the API accepts: a month needs an answer to name it
		if s.rng.Float64() < 0.15 {
			s.rejected[d] = true
		}
	}
	for range 1 + s.rng.IntN(5) {
		s.run(true)
	}
	for i := 0; ; i++ {
		o, _ := s.run(false)
		if o.exit == 0 {
			break
		}
		if i == 1 {
			t.Fatalf("runs without faults did not complete %s: exit %d, %v", s.served, o.exit, o.err)
		}
	}
	o, c := s.run(false)
	if o.sum.Status != StatusUpToDate || len(c.api.Calls()) != 1 {
		t.Errorf("the run after completion: %s with calls %v, want up_to_date with 1 call", o.sum.Status, c.callNames())
	}
}

// run makes one run (faulty: with random failures, credits, cap and perhaps a month turn) and
// checks the invariants.
func (s *sim) run(faulty bool) (outcome, *core) {
	c := newCore(s.t, s.served, s.domains...)
	c.store = s.store
	s.script(c, faulty)
	before := s.completeMonths()
	o := c.run()
	s.served = c.api.Month()
	s.check(c, o, before)
	return o, c
}

// script sets the API of one run.
func (s *sim) script(c *core, faulty bool) {
	opts := fetchtest.Options{Month: s.served, Balance: 1000}
	if faulty && s.rng.Float64() < 0.3 {
		opts.Balance = int64(s.rng.IntN(2*len(s.domains) + 2))
	}
	if faulty && s.rng.Float64() < 0.2 {
		opts.MaxCreditsPerRun = int64(1 + s.rng.IntN(2*len(s.domains)))
		c.cfg.API.MaxCreditsPerRun = opts.MaxCreditsPerRun
	}
	api := c.useAPI(opts)
	if faulty && s.turns < 2 && s.rng.Float64() < 0.25 {
		s.turns++
		api.TurnAfter(1+s.rng.IntN(2*len(s.domains)+1), nextMonth(s.served))
	}
	for _, d := range s.domains {
		for _, ep := range schema.DomainEndpoints {
			if s.rejected[d] {
				api.Script(ep, d, slices.Repeat([]fetchtest.Answer{{Status: 400}}, 8)...)
				continue
			}
			if faulty && s.rng.Float64() < 0.15 {
				api.Script(ep, d, fetchtest.Answer{Status: []int{429, 500, 502}[s.rng.IntN(3)]})
			}
		}
	}
}

// check asserts the invariants after a run.
func (s *sim) check(c *core, o outcome, before map[string]map[string][]byte) {
	t := s.t
	t.Helper()
	var ledger int64
	for _, row := range s.store.Ledger() {
		if row.RunID == o.sum.RunID {
			ledger += row.Credits
		}
	}
	if got, want := ledger, c.api.Stats().CreditsSpent; got != want {
		t.Errorf("run %s: ledger %d credits, the API charged %d", o.sum.Status, got, want)
	}
	for _, m := range s.store.Months() {
		gen := atlastest.NewGenerator(1, m)
		for _, d := range s.domains {
			if b := s.store.Body(m, d, schema.EndpointOverview); b != nil && !bytes.Equal(b, gen.OverviewBody(d)) {
				t.Errorf("run %s: %s holds a site-overview of %s that is another month's", o.sum.Status, m, d)
			}
			if b := s.store.Body(m, d, schema.EndpointSimilar); *simSimilar && b != nil && !bytes.Equal(b, gen.SimilarBody(d)) {
				t.Errorf("run %s: %s holds a site-similar of %s that is another month's", o.sum.Status, m, d)
			}
		}
	}
	for m, bodies := range before {
		if got := s.bodiesOf(m); !equalBodies(got, bodies) {
			t.Errorf("run %s rewrote %s, which was complete", o.sum.Status, m)
		}
	}
	if o.exit == 0 && !s.complete(o.sum.Snapshot) {
		t.Errorf("exit 0 (%s) but %s is not complete", o.sum.Status, o.sum.Snapshot)
	}
}

// completeMonths returns the bodies of every complete month.
func (s *sim) completeMonths() map[string]map[string][]byte {
	out := map[string]map[string][]byte{}
	for _, m := range s.store.Months() {
		if s.complete(m) {
			out[m] = s.bodiesOf(m)
		}
	}
	return out
}

func (s *sim) complete(m string) bool {
	st, err := s.store.State(s.t.Context(), m)
	if err != nil {
		s.t.Fatal(err)
	}
	return (&Plan{}).Complete(st, s.domains)
}

func (s *sim) bodiesOf(m string) map[string][]byte {
	out := map[string][]byte{}
	for _, d := range s.domains {
		for _, ep := range schema.DomainEndpoints {
			if b := s.store.Body(m, d, ep); b != nil {
				out[d+" "+string(ep)] = b
			}
		}
	}
	return out
}

func equalBodies(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !bytes.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// nextMonth is the month after m (YYYY-MM).
func nextMonth(m string) string {
	var y, mo int
	fmt.Sscanf(m, "%d-%d", &y, &mo)
	if mo == 12 {
		return fmt.Sprintf("%04d-01", y+1)
	}
	return fmt.Sprintf("%04d-%02d", y, mo+1)
}
