// Package storetest is an in-memory pipeline.Store for the core's own tests, the way
// net/http/httptest is a server for a client's: it keeps what a run lands (bodies per month
// and domain, loaded domains, the run_calls ledger, fetch_errors, runs, exported months) in
// maps, so a test of the run's rules needs no DuckDB file, and asserts on what was kept.
//
// It states the warehouse's contract, not its SQL: a domain is loaded once both of its bodies
// are stored (under --refresh, both of the same run); country-metadata makes a month's
// countries loaded; a 400 in fetch_errors marks its domain rejected in that month; every
// answer Store receives with a run ID is a ledger row ("stored", or "refused" for a body that
// does not decode). It does not import the core (the core's tests import it).
package storetest

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sync"
	"time"

	"sitewatch/pipeline/model"
	"sitewatch/schema"
)

// StatusComplete is the runs.status of a complete run (pipeline.StatusComplete), which
// MonthCompleteSince looks for.
const StatusComplete = "complete"

// LedgerRow is one run_calls row: a charged answer, stored or not.
type LedgerRow struct {
	RunID, Month, Domain string
	Endpoint             schema.Endpoint
	Credits              int64
	Outcome              string // model.OutcomeStored, OutcomeRefused, "probe", "month_unknown", ...
	Source               string
}

// body is one stored answer.
type body struct {
	runID     string
	fetchedAt time.Time
	bytes     []byte // nil for a body seeded by Hold
}

// month is what the store holds of one month.
type month struct {
	bodies    map[string]map[schema.Endpoint]body // domain -> endpoint -> body
	loaded    map[string]bool
	countries bool
	rejected  map[string]string // domain -> code of its latest 400
}

func newMonth() *month {
	return &month{bodies: map[string]map[schema.Endpoint]body{}, loaded: map[string]bool{}, rejected: map[string]string{}}
}

// Store is an in-memory store. Its methods are safe for concurrent use. The zero value is not
// usable: call New.
type Store struct {
	mu          sync.Mutex
	months      map[string]*month
	ledger      []LedgerRow
	fetchErrors []model.FetchError
	runs        []model.RunRecord // in StartRun order; FinishRun replaces the run's entry
	exported    map[string]int    // month -> ExportParquet calls
	health      map[string]int    // month -> ExportRunHealth calls
	released    int

	// FailStore, when set, is returned by every Store after the first StoreOK answers: a
	// storage failure (a full disk). FailFlush is returned by Flush.
	FailStore error
	StoreOK   int
	FailFlush error
}

// New returns an empty store.
func New() *Store {
	return &Store{months: map[string]*month{}, exported: map[string]int{}, health: map[string]int{}}
}

var monthRE = regexp.MustCompile(`^[0-9]{4}-(0[1-9]|1[0-2])$`)

func checkMonth(m string) error {
	if !monthRE.MatchString(m) {
		return fmt.Errorf("storetest: snapshot %q is not a month YYYY-MM", m)
	}
	return nil
}

// monthLocked returns month m, created empty when missing.
func (s *Store) monthLocked(m string) *month {
	mo, ok := s.months[m]
	if !ok {
		mo = newMonth()
		s.months[m] = mo
	}
	return mo
}

// Hold seeds the store with answers fetched at `at` by no run: each domain's site-overview and
// site-similar bodies (loaded), and country-metadata, under month m. A test builds the
// warehouse an earlier run left with it.
func (s *Store) Hold(m string, at time.Time, domains ...string) {
	for _, d := range domains {
		s.HoldBody(m, d, schema.EndpointOverview, at)
		s.HoldBody(m, d, schema.EndpointSimilar, at)
	}
	s.HoldBody(m, "", schema.EndpointCountries, at)
}

// HoldBody seeds one stored body of domain (ignored for country-metadata) under month m.
func (s *Store) HoldBody(m, domain string, ep schema.Endpoint, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.putLocked(s.monthLocked(m), domain, ep, body{fetchedAt: at}, false)
}

// Reject seeds a 400 for domain in month m (the API rejected it in an earlier run).
func (s *Store) Reject(m, domain, code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.monthLocked(m).rejected[domain] = code
}

// putLocked stores b and loads its domain when both bodies are in (refresh: of b's run).
func (s *Store) putLocked(mo *month, domain string, ep schema.Endpoint, b body, refresh bool) {
	if ep == schema.EndpointCountries {
		mo.countries = true
		return
	}
	eps := mo.bodies[domain]
	if eps == nil {
		eps = map[schema.Endpoint]body{}
		mo.bodies[domain] = eps
	}
	eps[ep] = b
	partner := schema.EndpointSimilar
	if ep == schema.EndpointSimilar {
		partner = schema.EndpointOverview
	}
	other, ok := eps[partner]
	switch {
	case !ok:
	case !refresh || other.runID == b.runID:
		mo.loaded[domain] = true
	default: // a refresh never loads a new body beside an older partner: it waits for its own
		delete(eps, partner)
		delete(mo.loaded, domain)
	}
}

// State returns what month m holds.
func (s *Store) State(_ context.Context, m string) (*model.SnapshotState, error) {
	if err := checkMonth(m); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := model.NewSnapshotState()
	mo, ok := s.months[m]
	if !ok {
		return st, nil
	}
	for d, eps := range mo.bodies {
		var set model.Endpoints
		for ep := range eps {
			set = set.With(ep)
		}
		st.AddStored(d, set)
	}
	for d := range mo.loaded {
		st.SetLoaded(d)
	}
	st.CountriesLoaded = mo.countries
	maps.Copy(st.Rejected, mo.rejected)
	return st, nil
}

// Outcome counts what month m holds for watchlist.
func (s *Store) Outcome(_ context.Context, m string, watchlist []string) (*model.Outcome, error) {
	if err := checkMonth(m); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := &model.Outcome{Rejected: map[string]string{}}
	mo, ok := s.months[m]
	if !ok {
		return out, nil
	}
	out.AnyStored, out.CountriesLoaded = len(mo.bodies) > 0 || mo.countries, mo.countries
	for _, d := range watchlist {
		if mo.loaded[d] {
			out.Loaded++
		} else if code, ok := mo.rejected[d]; ok {
			out.Rejected[d] = code
		}
	}
	return out, nil
}

// Store lands one answer under month m and writes its ledger row. A body that does not
// decode is refused (a *schema.DecodeError, ledger outcome "refused"), as the warehouse does.
func (s *Store) Store(_ context.Context, m string, raw model.Raw) error {
	if err := checkMonth(m); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.FailStore != nil && s.StoreOK <= 0 {
		return s.FailStore
	}
	s.StoreOK--
	outcome := model.OutcomeStored
	err := decodable(raw)
	if err != nil {
		outcome = model.OutcomeRefused
	}
	if raw.RunID != "" {
		s.ledger = append(s.ledger, LedgerRow{RunID: raw.RunID, Month: m, Domain: raw.Domain, Endpoint: raw.Endpoint,
			Credits: raw.Credits, Outcome: outcome, Source: raw.Source})
	}
	if err != nil {
		return err
	}
	s.putLocked(s.monthLocked(m), raw.Domain, raw.Endpoint, body{runID: raw.RunID, fetchedAt: raw.FetchedAt, bytes: raw.Body}, raw.Refresh)
	return nil
}

// decodable checks raw's body the way the warehouse does: decoded already, or decoding now.
func decodable(raw model.Raw) error {
	var err error
	switch raw.Endpoint {
	case schema.EndpointOverview:
		if raw.Overview == nil {
			_, err = schema.DecodeOverview(raw.Body)
		}
	case schema.EndpointSimilar:
		if raw.Similar == nil {
			_, err = schema.DecodeSimilar(raw.Body)
		}
	case schema.EndpointCountries:
		if raw.Countries == nil {
			_, err = schema.DecodeCountries(raw.Body)
		}
	default:
		err = fmt.Errorf("storetest: unknown endpoint %q", raw.Endpoint)
	}
	return err
}

// Flush returns FailFlush: answers are kept at once.
func (s *Store) Flush(context.Context) error { return s.FailFlush }

// ReleaseLoading counts the call (Released).
func (s *Store) ReleaseLoading() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.released++
}

// RecordCharge writes a ledger row for a charged answer that was not stored.
func (s *Store) RecordCharge(_ context.Context, c model.Charge) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	outcome := c.Outcome
	if outcome == "" {
		outcome = model.OutcomeRefused
	}
	s.ledger = append(s.ledger, LedgerRow{RunID: c.RunID, Month: c.SnapshotMonth, Domain: c.Domain, Endpoint: c.Endpoint,
		Credits: c.Credits, Outcome: outcome, Source: c.Source})
	return nil
}

// RecordFetchError keeps e; a 400 marks its domain rejected in its month.
func (s *Store) RecordFetchError(_ context.Context, e model.FetchError) error {
	if err := checkMonth(e.SnapshotMonth); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fetchErrors = append(s.fetchErrors, e)
	if e.HTTPStatus == 400 {
		s.monthLocked(e.SnapshotMonth).rejected[e.Domain] = e.Code
	}
	return nil
}

// StartRun keeps r; an ID already started is an error (a run starts once).
func (s *Store) StartRun(_ context.Context, r model.RunRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.ContainsFunc(s.runs, func(o model.RunRecord) bool { return o.RunID == r.RunID }) {
		return fmt.Errorf("storetest: run %s started twice", r.RunID)
	}
	s.runs = append(s.runs, r)
	return nil
}

// FinishRun replaces the started run's record; a run never started is an error.
func (s *Store) FinishRun(_ context.Context, r model.RunRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.runs, func(o model.RunRecord) bool { return o.RunID == r.RunID })
	if i < 0 {
		return fmt.Errorf("storetest: run %s finished but never started", r.RunID)
	}
	s.runs[i] = r
	return nil
}

// ExportParquet counts the export of month m.
func (s *Store) ExportParquet(_ context.Context, m string) error {
	if err := checkMonth(m); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exported[m]++
	return nil
}

// ParquetMissing says month m was never exported by this store.
func (s *Store) ParquetMissing(m string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exported[m] == 0
}

// MarkExported records month m as exported (a warehouse whose Parquet tree is whole).
func (s *Store) MarkExported(m string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exported[m]++
}

// ExportRunHealth counts the call for month m.
func (s *Store) ExportRunHealth(_ context.Context, m string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.health[m]++
	return nil
}

// RunQualityChecks finds nothing: the checks are the warehouse's own tests' business.
func (s *Store) RunQualityChecks(context.Context, string) ([]model.QualityFinding, error) {
	return nil, nil
}

// LatestMonth is the newest month holding any answer ("" for none).
func (s *Store) LatestMonth(context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	latest := ""
	for m, mo := range s.months {
		if (len(mo.bodies) > 0 || mo.countries) && m > latest {
			latest = m
		}
	}
	return latest, nil
}

// NewestOverview is when month m's newest site-overview body was fetched (zero: none).
func (s *Store) NewestOverview(_ context.Context, m string) (time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var newest time.Time
	if mo, ok := s.months[m]; ok {
		for _, eps := range mo.bodies {
			if b, ok := eps[schema.EndpointOverview]; ok && b.fetchedAt.After(newest) {
				newest = b.fetchedAt
			}
		}
	}
	return newest, nil
}

// MonthCompleteSince is when the first run that completed month m finished.
func (s *Store) MonthCompleteSince(_ context.Context, m string) (time.Time, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var first time.Time
	for _, r := range s.runs {
		if r.SnapshotMonth == m && r.Status == StatusComplete && r.FinishedAt != nil && (first.IsZero() || r.FinishedAt.Before(first)) {
			first = *r.FinishedAt
		}
	}
	return first, !first.IsZero(), nil
}
