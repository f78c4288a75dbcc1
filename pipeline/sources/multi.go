package sources

import (
	"context"
	"errors"
	"sync"

	"sitewatch/pipeline/atlas"
	"sitewatch/pipeline/model"
)

// Source is one credit source: its name and the client that spends it.
type Source struct {
	Name   string
	Client *atlas.Client
	// Room is the calls it may pay for in this run (Allowance.Usable); -1 unknown (no bound
	// beyond what its own client enforces).
	Room int64
}

// Multi fetches through several sources at once. Each FetchAll splits its calls by the spend
// order (each source up to its room, the rest to the last), then every source fetches its
// part at its own pace. A source whose part runs out takes calls queued for a source later in
// the spend order while it has room; a source that stops for credits (402, its reserve, its
// quota) hands what it had not done to the next one. Any other stop stops them all. Results
// carry the source that paid (Result.Source) and are handed over one at a time.
type Multi struct {
	sources []*Source // in spend order

	mu      sync.Mutex
	cond    *sync.Cond
	room    []int64           // calls each source may still take (-1 unbounded)
	queue   [][]model.Request // calls waiting for each source
	out     []map[model.Request]bool
	dead    []error // the credit stop of each source, nil while it can pay
	running []bool
	fatal   error // a stop of the whole fetch (a Stop, a 401, an unreachable source, ...)
	// capped, when set, makes each bounded room a hard limit, own queue included: the rooms
	// are shares of api.max_credits_per_run, and calls beyond them end the fetch with it.
	capped error

	handleMu sync.Mutex
}

// NewMulti returns a fetcher over sources, given in spend order.
func NewMulti(sources []*Source) *Multi {
	m := &Multi{sources: sources}
	m.cond = sync.NewCond(&m.mu)
	n := len(sources)
	m.room, m.queue, m.out = make([]int64, n), make([][]model.Request, n), make([]map[model.Request]bool, n)
	m.dead, m.running = make([]error, n), make([]bool, n)
	for i, s := range sources {
		m.room[i], m.out[i] = s.Room, map[model.Request]bool{}
	}
	return m
}

// Cap makes the sources' rooms shares of a run cap (api.max_credits_per_run, see Capped):
// no source fetches past its room, a source stopped for credits hands its room over with its
// calls, and calls no room covers end the fetch with err (an model.ErrRunBudget).
func (m *Multi) Cap(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.capped = err
}

// Sources returns the sources in spend order.
func (m *Multi) Sources() []*Source { return m.sources }

// IsHandoff says whether err stops one source for credits, so that its calls go to another.
func IsHandoff(err error) bool {
	return errors.Is(err, model.ErrOutOfCredits) || errors.Is(err, model.ErrCreditReserve)
}

// FetchAll fetches reqs through the sources (see Multi) and returns nil when every call was
// attempted, else why not: the stop of the whole fetch, ctx's error, or the credit stop of
// the last source that could pay (every source exhausted: the run stops for credits).
func (m *Multi) FetchAll(ctx context.Context, reqs []model.Request, handle func(model.Result)) error {
	if len(m.sources) == 1 { // one source: its client alone, results named
		s := m.sources[0]
		return s.Client.FetchAll(ctx, reqs, func(res model.Result) { res.Source = s.Name; handle(res) })
	}
	m.mu.Lock()
	if err := m.fatal; err != nil {
		m.mu.Unlock()
		return err
	}
	alive := m.assignLocked(reqs)
	if len(alive) == 0 {
		err := m.creditStopLocked()
		m.mu.Unlock()
		return err
	}
	for _, i := range alive {
		m.running[i] = true
	}
	m.mu.Unlock()
	wake := context.AfterFunc(ctx, func() { m.mu.Lock(); m.cond.Broadcast(); m.mu.Unlock() })
	defer wake()
	var wg sync.WaitGroup
	for _, i := range alive {
		wg.Go(func() { m.work(ctx, i, handle) })
	}
	wg.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.fatal != nil:
		return m.fatal
	case ctx.Err() != nil:
		return ctx.Err()
	case m.pendingLocked():
		return m.creditStopLocked()
	}
	return nil
}

// Queueable says whether the fetch can take its calls from a queue (FetchFrom): with one
// source only; several split their calls up front.
func (m *Multi) Queueable() bool { return len(m.sources) == 1 }

// FetchFrom is FetchAll over the calls next hands out (it may block), for one source
// (Queueable); with several it fetches nothing and says so.
func (m *Multi) FetchFrom(ctx context.Context, next func() (model.Request, bool), handle func(model.Result)) error {
	if !m.Queueable() {
		return errors.New("sources: a queue of calls needs a single credit source")
	}
	s := m.sources[0]
	return s.Client.FetchFrom(ctx, next, func(res model.Result) { res.Source = s.Name; handle(res) })
}

// Stopped is closed once the single source's client has stopped (nil with several sources).
func (m *Multi) Stopped() <-chan struct{} {
	if !m.Queueable() {
		return nil
	}
	return m.sources[0].Client.Stopped()
}

// assignLocked queues reqs: each live source in spend order up to its room, the rest to the
// last live source (whose own client then stops for credits). It returns the live sources.
func (m *Multi) assignLocked(reqs []model.Request) []int {
	var alive []int
	for i := range m.sources {
		m.queue[i] = nil
		if m.dead[i] == nil {
			alive = append(alive, i)
		}
	}
	if len(alive) == 0 {
		return nil
	}
	for _, i := range alive {
		take := len(reqs)
		if m.room[i] >= 0 {
			take = min(take, int(m.room[i]))
		}
		m.queue[i], reqs = append(m.queue[i], reqs[:take]...), reqs[take:]
	}
	last := alive[len(alive)-1]
	m.queue[last] = append(m.queue[last], reqs...)
	return alive
}

// work runs source i until nothing is left that it may fetch, or the fetch stops.
func (m *Multi) work(ctx context.Context, i int, handle func(model.Result)) {
	s := m.sources[i]
	for {
		err := s.Client.FetchFrom(ctx, m.puller(i), m.handler(i, handle))
		m.mu.Lock()
		m.settleLocked(ctx, i, err)
		m.running[i] = false
		m.cond.Broadcast()
		for m.mayWaitLocked(ctx, i) {
			m.cond.Wait()
		}
		if !m.mayFetchLocked(ctx, i) {
			m.mu.Unlock()
			return
		}
		m.running[i] = true
		m.mu.Unlock()
	}
}

// settleLocked puts back the calls source i took and did not finish, and records its stop.
func (m *Multi) settleLocked(ctx context.Context, i int, err error) {
	for r := range m.out[i] {
		m.queue[i] = append([]model.Request{r}, m.queue[i]...)
		delete(m.out[i], r)
		if m.capped != nil && m.room[i] >= 0 {
			m.room[i]++ // not paid: its share of the cap is still to spend
		}
	}
	switch {
	case err == nil:
	case IsHandoff(err):
		m.dead[i] = err
		m.handOffLocked(i)
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
	case m.fatal == nil:
		m.fatal = err
		for _, o := range m.sources {
			o.Client.Stop(err)
		}
	}
}

// handOffLocked gives the calls of stopped source i to the next live source after it; with
// none, they stay queued for any live source with room to take.
func (m *Multi) handOffLocked(i int) {
	for j := i + 1; j < len(m.sources); j++ {
		if m.dead[j] == nil {
			m.queue[j] = append(m.queue[j], m.queue[i]...)
			m.queue[i] = nil
			if m.capped != nil && m.room[j] >= 0 && m.room[i] > 0 {
				m.room[j] += m.room[i] // the cap's share moves with the calls
				m.room[i] = 0
			}
			return
		}
	}
}

func (m *Multi) mayFetchLocked(ctx context.Context, i int) bool {
	return m.dead[i] == nil && m.fatal == nil && ctx.Err() == nil && m.hasWorkLocked(i)
}

// mayWaitLocked says source i has nothing to do now but another source still running may
// yet hand it calls.
func (m *Multi) mayWaitLocked(ctx context.Context, i int) bool {
	if m.dead[i] != nil || m.fatal != nil || ctx.Err() != nil || m.hasWorkLocked(i) {
		return false
	}
	for j, r := range m.running {
		if r && j != i {
			return true
		}
	}
	return false
}

func (m *Multi) hasWorkLocked(i int) bool {
	if m.capped != nil && m.room[i] == 0 {
		return false
	}
	if len(m.queue[i]) > 0 {
		return true
	}
	_, ok := m.victimLocked(i)
	return ok
}

// victimLocked picks the source whose queued calls source i may take: a stopped source's,
// or one later in the spend order (i spends what expires sooner); the longest queue first.
// A source without room takes nothing of others.
func (m *Multi) victimLocked(i int) (int, bool) {
	if m.room[i] == 0 {
		return 0, false
	}
	best, found := 0, false
	for j := range m.sources {
		if j == i || len(m.queue[j]) == 0 || (j < i && m.dead[j] == nil) {
			continue
		}
		if !found || len(m.queue[j]) > len(m.queue[best]) {
			best, found = j, true
		}
	}
	return best, found
}

// puller hands source i its next call: its own queue first, then one taken from a victim.
func (m *Multi) puller(i int) func() (model.Request, bool) {
	return func() (model.Request, bool) {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.dead[i] != nil || m.fatal != nil || (m.capped != nil && m.room[i] == 0) {
			return model.Request{}, false
		}
		var r model.Request
		if q := m.queue[i]; len(q) > 0 {
			r, m.queue[i] = q[0], q[1:]
		} else if j, ok := m.victimLocked(i); ok {
			q := m.queue[j]
			r, m.queue[j] = q[len(q)-1], q[:len(q)-1]
		} else {
			return model.Request{}, false
		}
		if m.room[i] > 0 {
			m.room[i]--
		}
		m.out[i][r] = true
		return r, true
	}
}

// handler names the source on each result and hands it over; a call the source could not
// pay for stays with it and is put back for another source.
func (m *Multi) handler(i int, handle func(model.Result)) func(model.Result) {
	name := m.sources[i].Name
	return func(res model.Result) {
		res.Source = name
		if res.Err != nil && IsHandoff(res.Err) && res.Charged == 0 {
			return
		}
		m.mu.Lock()
		delete(m.out[i], res.Request)
		m.mu.Unlock()
		m.handleMu.Lock()
		defer m.handleMu.Unlock()
		handle(res)
	}
}

func (m *Multi) pendingLocked() bool {
	for i := range m.sources {
		if len(m.queue[i]) > 0 || len(m.out[i]) > 0 {
			return true
		}
	}
	return false
}

// creditStopLocked is the error of a fetch every source stopped for credits: the cap when
// a source could still pay, else the last source's stop (the long-lived credits, usually).
func (m *Multi) creditStopLocked() error {
	for i := range m.sources {
		if m.capped != nil && m.dead[i] == nil {
			return m.capped // a source could pay, but the cap's shares are spent
		}
	}
	for i := len(m.sources) - 1; i >= 0; i-- {
		if m.dead[i] != nil {
			return &SourceError{Source: m.sources[i].Name, Err: m.dead[i]}
		}
	}
	return model.ErrOutOfCredits
}

// SourceError is the stop of one credit source (its 402, its reserve), naming the source so
// a message can say which source to top up and whose min_credits stopped it.
type SourceError struct {
	Source string
	Err    error
}

func (e *SourceError) Error() string { return "credit source " + e.Source + ": " + e.Err.Error() }
func (e *SourceError) Unwrap() error { return e.Err }

// Stop stops every source: no new call starts, calls in flight finish.
func (m *Multi) Stop(reason error) {
	m.mu.Lock()
	if m.fatal == nil {
		m.fatal = reason
	}
	m.cond.Broadcast()
	m.mu.Unlock()
	for _, s := range m.sources {
		s.Client.Stop(reason)
	}
}

// SourceStats is one source's counters.
type SourceStats struct {
	Name string
	model.Stats
}

// Spend is what each source paid in the run and has left (its quota when it has one, else its
// balance), in spend order: the core's SourceCounter.
func (m *Multi) Spend() []model.SourceSpend {
	var out []model.SourceSpend
	for _, s := range m.PerSource() {
		left := s.CreditsRemaining
		if s.QuotaRemaining >= 0 {
			left = s.QuotaRemaining
		}
		out = append(out, model.SourceSpend{Name: s.Name, Credits: s.CreditsSpent, Remaining: left})
	}
	return out
}

// PerSource returns each source's counters, in spend order.
func (m *Multi) PerSource() []SourceStats {
	out := make([]SourceStats, len(m.sources))
	for i, s := range m.sources {
		out[i] = SourceStats{Name: s.Name, Stats: s.Client.Stats()}
	}
	return out
}

// Stats adds up the sources' counters. Remaining credits and quota are the sums of those
// known (-1 when none is); rates add up, as the sources work at once.
func (m *Multi) Stats() model.Stats {
	var t model.Stats
	t.ByStatus = map[int]int64{}
	t.CreditsRemaining, t.QuotaRemaining = -1, -1
	for _, s := range m.sources {
		st := s.Client.Stats()
		t.Requests += st.Requests
		t.Succeeded += st.Succeeded
		t.RateLimited += st.RateLimited
		t.Retries += st.Retries
		t.CreditsSpent += st.CreditsSpent
		t.Unanswered += st.Unanswered
		t.WastedCredits += st.WastedCredits
		t.Refetches += st.Refetches
		t.RateLimitWaited = max(t.RateLimitWaited, st.RateLimitWaited)
		t.InFlight += st.InFlight
		t.RateLimit += st.RateLimit
		t.PacedRate += st.PacedRate
		t.CreditsRemaining = addKnown(t.CreditsRemaining, st.CreditsRemaining)
		t.QuotaRemaining = addKnown(t.QuotaRemaining, st.QuotaRemaining)
		for k, v := range st.ByStatus {
			t.ByStatus[k] += v
		}
	}
	return t
}

func addKnown(sum, v int64) int64 {
	switch {
	case v < 0:
		return sum
	case sum < 0:
		return v
	}
	return sum + v
}
