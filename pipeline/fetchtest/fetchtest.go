// Package fetchtest is a scripted pipeline.Fetcher for the core's own tests: it answers each
// (endpoint, domain) call at once, in the caller's goroutine, without a socket, from a script
// a test writes (a 400, 401, 402, 429 or 500 answer, a body of another month, a body that does
// not decode) and otherwise with the simulator's body for the month it serves
// (pipeline/atlas/atlastest's Generator, which builds bodies from the specification's field
// tables, not from the client's types), decoded once as the client hands it over.
//
// It keeps the credit rules of the specification and the client's stop reasons: a 200 costs
// 1 credit; a call the balance cannot pay is answered 402 and stops; a call that would take the
// balance below MinCredits, or the run's spend above MaxCreditsPerRun, is not made and stops
// (model.ErrCreditReserve, model.ErrRunBudget); a 401 stops. Calls are answered in the order
// they are asked for, one at a time, so a run against it is the same every time.
package fetchtest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/model"
	"sitewatch/schema"
)

// Answer is one scripted answer to a call.
type Answer struct {
	// Status is the HTTP status: 0 or 200 answers a body; 400 rejects the domain
	// (INVALID_DOMAIN); 401 rejects the key (stops); 402 is out of credits (stops); 429 is
	// rate limited on every attempt; 5xx is a server failure after the retries.
	Status int
	// Month is the data month of a 200 body ("" the month the fetcher serves).
	Month string
	// Body replaces the simulator's body of a 200 (charged; refused as drift if it does not
	// decode, as the client refuses it).
	Body []byte
}

// Options configure a Fetcher.
type Options struct {
	Month string // the month served (YYYY-MM); required
	Seed  int64  // the simulator's data seed (0: 1)
	// Balance is the credits at start (0: the wallet is empty, every call is answered 402);
	// with Unlimited the balance is unknown (-1) and never short.
	Balance   int64
	Unlimited bool
	// MinCredits and MaxCreditsPerRun are the config's reserve and cap (0: none).
	MinCredits, MaxCreditsPerRun int64
	// Source names the credit source on each result and in PerSource ("" : "default").
	Source string
	// Now stamps FetchedAt (nil: time.Now, which is the bubble's fake clock under synctest).
	Now func() time.Time
}

type key struct {
	endpoint schema.Endpoint
	domain   string
}

// Fetcher is a scripted fetcher. Its methods are safe for concurrent use; handle is called
// from the goroutine that called FetchAll or FetchFrom.
type Fetcher struct {
	opts Options

	mu       sync.Mutex
	month    string
	turns    []turn
	script   map[key][]Answer
	gens     map[string]*atlastest.Generator
	balance  int64
	stats    model.Stats
	stopErr  error
	stopCh   chan struct{}
	calls    []model.Request
	answered int
}

// turn serves month to from after `after` answered calls.
type turn struct {
	after int
	to    string
}

// New returns a fetcher serving opts.Month.
func New(opts Options) *Fetcher {
	if opts.Source == "" {
		opts.Source = "default"
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	balance := opts.Balance
	if opts.Unlimited {
		balance = -1
	}
	f := &Fetcher{opts: opts, month: opts.Month, script: map[key][]Answer{}, gens: map[string]*atlastest.Generator{},
		balance: balance, stopCh: make(chan struct{})}
	f.stats.ByStatus = map[int]int64{}
	return f
}

// Script queues answers for the call of endpoint on domain ("" for country-metadata): its
// first call gets the first, and so on; calls beyond the script get a body of the month served.
func (f *Fetcher) Script(endpoint schema.Endpoint, domain string, answers ...Answer) *Fetcher {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := key{endpoint, domain}
	f.script[k] = append(f.script[k], answers...)
	return f
}

// TurnAfter makes the API turn to month to once calls calls were answered (the month turning
// mid-run): later bodies are for to.
func (f *Fetcher) TurnAfter(calls int, to string) *Fetcher {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.turns = append(f.turns, turn{after: calls, to: to})
	return f
}

// Calls returns the calls answered (each once, whatever its status), in order.
func (f *Fetcher) Calls() []model.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]model.Request(nil), f.calls...)
}

// Month is the month served now (after any turn).
func (f *Fetcher) Month() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.month
}

// Balance is the credits left (-1 unknown).
func (f *Fetcher) Balance() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.balance
}

// FetchAll answers reqs in order until the fetcher stops; it returns the stop reason (nil when
// every call was answered) or ctx's error.
func (f *Fetcher) FetchAll(ctx context.Context, reqs []model.Request, handle func(model.Result)) error {
	i := 0
	return f.FetchFrom(ctx, func() (model.Request, bool) {
		if i == len(reqs) {
			return model.Request{}, false
		}
		i++
		return reqs[i-1], true
	}, handle)
}

// FetchFrom is FetchAll over the calls next hands out.
func (f *Fetcher) FetchFrom(ctx context.Context, next func() (model.Request, bool), handle func(model.Result)) error {
	for {
		if err := f.Err(); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		req, ok := next()
		if !ok {
			return nil
		}
		res, made := f.answer(req)
		if made {
			handle(res)
		}
	}
}

// answer makes one call: admitted (reserve, cap), then answered from the script or the
// simulator. made is false when the call was not started (the fetcher stopped).
func (f *Fetcher) answer(req model.Request) (res model.Result, made bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.admitLocked(); err != nil {
		f.stopLocked(err)
		return model.Result{}, false
	}
	f.calls = append(f.calls, req)
	a := f.nextAnswerLocked(req)
	res = model.Result{Request: req, Attempts: 1, FetchedAt: f.opts.Now().UTC(), Source: f.opts.Source}
	f.stats.Requests++
	if a.Status == 0 {
		a.Status = 200
	}
	if a.Status == 200 && f.balance == 0 {
		a.Status = 402 // the wallet is empty: the API refuses, charging nothing
	}
	f.stats.ByStatus[a.Status]++
	if a.Status != 200 {
		res.Err = f.failLocked(req, a.Status)
		return res, true
	}
	f.chargeLocked(&res)
	f.bodyLocked(&res, a)
	f.answered++
	for _, t := range f.turns {
		if f.answered == t.after {
			f.month = t.to
		}
	}
	return res, true
}

// admitLocked refuses a call the reserve or the cap forbids (1 credit a call).
func (f *Fetcher) admitLocked() error {
	if lim := f.opts.MaxCreditsPerRun; lim > 0 && f.stats.CreditsSpent+1 > lim {
		return &model.Error{Op: "start", Message: fmt.Sprintf("%d credits spent", f.stats.CreditsSpent), Err: model.ErrRunBudget}
	}
	if f.opts.MinCredits > 0 && f.balance >= 0 && f.balance-1 < f.opts.MinCredits {
		return &model.Error{Op: "start", Message: fmt.Sprintf("%d credits left", f.balance), Err: model.ErrCreditReserve}
	}
	return nil
}

func (f *Fetcher) nextAnswerLocked(req model.Request) Answer {
	k := key{req.Endpoint, req.Domain}
	if req.Endpoint == schema.EndpointCountries {
		k.domain = ""
	}
	queue := f.script[k]
	if len(queue) == 0 {
		return Answer{}
	}
	f.script[k] = queue[1:]
	return queue[0]
}

// failLocked is the client's error for a non-200 answer; 401 and 402 stop the fetcher.
func (f *Fetcher) failLocked(req model.Request, status int) error {
	e := &model.Error{Op: "fetch", Domain: req.Domain, Endpoint: req.Endpoint, Status: status}
	switch {
	case status == 400:
		e.Code, e.Err = "INVALID_DOMAIN", model.ErrInvalidDomain
	case status == 401:
		e.Code, e.Err = "Unauthorized", model.ErrUnauthorized
	case status == 402:
		e.Code, e.Err = "Payment Required", model.ErrOutOfCredits
	case status == 429:
		f.stats.RateLimited++
		e.Code, e.Err = "Too Many Requests", model.ErrRateLimited
	default:
		e.Err = model.ErrServer
	}
	if model.IsStop(e) {
		f.stopLocked(e)
	}
	return e
}

func (f *Fetcher) chargeLocked(res *model.Result) {
	res.Charged = 1
	f.stats.CreditsSpent++
	if f.balance > 0 {
		f.balance--
	}
}

// bodyLocked fills a 200's body and its decoded value; a body that does not decode is
// refused as drift, charged all the same.
func (f *Fetcher) bodyLocked(res *model.Result, a Answer) {
	month := a.Month
	if month == "" {
		month = f.month
	}
	body := a.Body
	if body == nil {
		body = f.generatorLocked(month).Body(res.Endpoint, res.Domain)
	}
	var err error
	switch res.Endpoint {
	case schema.EndpointOverview:
		res.Overview, err = schema.DecodeOverview(body)
	case schema.EndpointSimilar:
		res.Similar, err = schema.DecodeSimilar(body)
	default:
		res.Countries, err = schema.DecodeCountries(body)
	}
	if err != nil {
		f.stats.WastedCredits++
		res.Overview, res.Similar, res.Countries = nil, nil, nil
		res.Err = &model.Error{Op: "fetch", Domain: res.Domain, Endpoint: res.Endpoint, Status: 200, Message: err.Error(), Err: model.ErrSchemaDrift}
		return
	}
	f.stats.Succeeded++
	res.Body = body
}

// generatorLocked is the simulator's generator of month.
func (f *Fetcher) generatorLocked(month string) generator {
	g, ok := f.gens[month]
	if !ok {
		g = atlastest.NewGenerator(f.opts.Seed, month)
		f.gens[month] = g
	}
	return generator{g}
}

type generator struct{ *atlastest.Generator }

// Body is the simulator's body of endpoint for domain.
func (g generator) Body(endpoint schema.Endpoint, domain string) []byte {
	switch endpoint {
	case schema.EndpointOverview:
		return g.OverviewBody(domain)
	case schema.EndpointSimilar:
		return g.SimilarBody(domain)
	}
	return g.CountriesBody()
}

// Stop ends the fetching: no new call starts (the first reason wins).
func (f *Fetcher) Stop(reason error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopLocked(reason)
}

func (f *Fetcher) stopLocked(err error) {
	if f.stopErr != nil {
		return
	}
	f.stopErr = err
	close(f.stopCh)
}

// Err is the reason the fetcher stopped, or nil.
func (f *Fetcher) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stopErr
}

// Stopped is closed when the fetcher stops.
func (f *Fetcher) Stopped() <-chan struct{} { return f.stopCh }

// Queueable says the fetcher takes its calls from a queue (as one credit source does).
func (f *Fetcher) Queueable() bool { return true }

// Stats returns the counters; CreditsRemaining is the balance (-1 unknown).
func (f *Fetcher) Stats() model.Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.stats
	s.ByStatus = make(map[int]int64, len(f.stats.ByStatus))
	for k, v := range f.stats.ByStatus {
		s.ByStatus[k] = v
	}
	s.CreditsRemaining, s.QuotaRemaining = f.balance, -1
	return s
}

// Spend reports the one source's spend, as a fetcher of one credit source does.
func (f *Fetcher) Spend() []model.SourceSpend {
	st := f.Stats()
	return []model.SourceSpend{{Name: f.opts.Source, Credits: st.CreditsSpent, Remaining: st.CreditsRemaining}}
}
