package storetest

import (
	"slices"

	"sitewatch/pipeline/model"
	"sitewatch/schema"
)

// Ledger returns the run_calls rows, in the order they were written.
func (s *Store) Ledger() []LedgerRow {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ledger)
}

// Credits sums the ledger's credits.
func (s *Store) Credits() int64 {
	var n int64
	for _, row := range s.Ledger() {
		n += row.Credits
	}
	return n
}

// FetchErrors returns the fetch_errors rows, in the order they were written.
func (s *Store) FetchErrors() []model.FetchError {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.fetchErrors)
}

// Runs returns the runs rows, in start order, each as last recorded.
func (s *Store) Runs() []model.RunRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.runs)
}

// Stored returns the bodies month m holds of domain.
func (s *Store) Stored(m, domain string) model.Endpoints {
	s.mu.Lock()
	defer s.mu.Unlock()
	mo, ok := s.months[m]
	if !ok {
		return 0
	}
	var set model.Endpoints
	for ep := range mo.bodies[domain] {
		set = set.With(ep)
	}
	return set
}

// Body returns the bytes of domain's body of ep stored under month m (nil: none, or seeded
// by Hold).
func (s *Store) Body(m, domain string, ep schema.Endpoint) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if mo, ok := s.months[m]; ok {
		return mo.bodies[domain][ep].bytes
	}
	return nil
}

// Loaded returns the domains loaded in month m, sorted.
func (s *Store) Loaded(m string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	if mo, ok := s.months[m]; ok {
		for d := range mo.loaded {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}

// Answers counts the bodies month m holds (country-metadata counts as one).
func (s *Store) Answers(m string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	mo, ok := s.months[m]
	if !ok {
		return 0
	}
	n := 0
	if mo.countries {
		n++
	}
	for _, eps := range mo.bodies {
		n += len(eps)
	}
	return n
}

// Months returns the months holding any answer, sorted.
func (s *Store) Months() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for m, mo := range s.months {
		if len(mo.bodies) > 0 || mo.countries {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out
}

// Exported says how often month m's Parquet was exported.
func (s *Store) Exported(m string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exported[m]
}

// Both is the set of a domain's two bodies; Overview and Similar the sets of one.
var (
	Overview = model.Endpoints(0).With(schema.EndpointOverview)
	Similar  = model.Endpoints(0).With(schema.EndpointSimilar)
	Both     = Overview.With(schema.EndpointSimilar)
)
