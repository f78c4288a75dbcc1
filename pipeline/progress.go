package pipeline

import (
	"context"
	"sync"
	"time"

	"sitewatch/pipeline/model"
)

// progress tracks finished calls and reports them to the run's observer every
// Env.ProgressEvery and at the end (cmd/sitewatch draws them: a live line on a terminal, a log
// line otherwise; pipeline/wire feeds the metrics).
type progress struct {
	env    Env
	client Fetcher
	begun  time.Time

	mu        sync.Mutex
	month     string
	calls     int // planned (an estimate until the plan is known)
	finishedN int
	// single holds the domains with one call planned (half-loaded, or the other was the
	// probe), nil until plan; halfDone the domains with one of their two calls finished.
	// Neither holds every domain: at 100,000 domains a map of calls out per domain was
	// 4–5 MB of live heap.
	single     map[string]bool
	halfDone   map[string]struct{}
	domains    int // domains with calls planned
	domainsOK  int // domains whose calls have all finished
	stopping   bool
	loadedBase int                  // domains of the month loaded before this run
	onReport   func(ProgressReport) // told each report
}

// Progress is a run's state as reported while it runs.
type Progress struct {
	Month         string // "" until the first answer tells it
	Loaded        int    // domains of the month loaded so far (earlier runs included; approximate while running)
	DomainsDone   int
	DomainsTotal  int
	CallsDone     int
	CallsTotal    int
	Elapsed       time.Duration
	ETA           time.Duration // -1 unknown
	RatePerSecond float64
	Stopping      bool // a signal asked to stop; calls in flight are finishing
}

func newProgress(env Env, client Fetcher, estimatedCalls int) *progress {
	return &progress{env: env, client: client, calls: estimatedCalls}
}

// plan switches from the estimate to the plan's calls (made after the probe). The calls of a
// domain are adjacent in the plan (BuildPlan's order, which drop keeps).
func (p *progress) plan(plan *Plan) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.month = plan.Snapshot
	p.loadedBase = plan.Loaded
	p.calls = p.finishedN + plan.Credits()
	p.single, p.halfDone = map[string]bool{}, map[string]struct{}{}
	p.domains, p.domainsOK = 0, 0
	calls := plan.calls
	for i, c := range calls {
		if c == countryCall || (i > 0 && calls[i-1].sameDomain(c)) {
			continue // country-metadata, or a domain's second call
		}
		p.domains++
		if i+1 == len(calls) || !calls[i+1].sameDomain(c) {
			p.single[plan.request(c).Domain] = true
		}
	}
}

// finished counts one finished call.
func (p *progress) finished(res model.Result) { p.done(res.Domain) }

// done counts one finished call of domain ("" for country-metadata).
func (p *progress) done(domain string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finishedN++
	if p.single == nil || domain == "" {
		return // a probe's call (before the plan) or country-metadata
	}
	if p.single[domain] {
		delete(p.single, domain)
		p.domainsOK++
		return
	}
	if _, ok := p.halfDone[domain]; ok {
		delete(p.halfDone, domain)
		p.domainsOK++
		return
	}
	p.halfDone[domain] = struct{}{}
}

// stop notes that a signal asked the run to stop.
func (p *progress) stop() {
	p.mu.Lock()
	p.stopping = true
	p.mu.Unlock()
	p.report(false)
}

// start reports until the returned function is called; that function draws the last line.
func (p *progress) start(ctx context.Context) (stop func()) {
	// Under the lock: the live-status keeper (pipeline/wire) may already read the progress.
	p.mu.Lock()
	p.begun = p.env.Now()
	p.mu.Unlock()
	every := p.env.ProgressEvery
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				p.report(false)
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
		p.report(true)
	}
}

// snapshot returns the current Progress.
func (p *progress) snapshot() Progress {
	p.mu.Lock()
	pr := Progress{Month: p.month, DomainsDone: p.domainsOK, DomainsTotal: p.domains, CallsDone: p.finishedN,
		CallsTotal: p.calls, Stopping: p.stopping, ETA: -1, Loaded: p.loadedBase + p.domainsOK}
	begun := p.begun
	p.mu.Unlock()
	pr.Elapsed = p.env.Now().Sub(begun)
	if pr.Elapsed > 0 {
		pr.RatePerSecond = float64(p.client.Stats().Requests) / pr.Elapsed.Seconds()
	}
	if pr.CallsDone > 0 && pr.CallsDone < pr.CallsTotal {
		pr.ETA = time.Duration(float64(pr.Elapsed) / float64(pr.CallsDone) * float64(pr.CallsTotal-pr.CallsDone))
	}
	return pr
}

func (p *progress) report(last bool) {
	pr := p.snapshot()
	if last {
		pr.ETA = -1 // the run has ended: whatever calls it did not make, it will not make
	}
	if p.onReport != nil {
		p.onReport(ProgressReport{Progress: pr, Stats: p.client.Stats(), Sources: spendBySource(p.client), Planned: p.planned(), Last: last})
	}
}

// planned says whether the run knows its month and its calls: before that only the probe has
// run, and a domain count (0/0), a call total (a whole month's) or an ETA would be invented.
func (p *progress) planned() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.single != nil
}
