package model

import (
	"maps"
	"strings"

	"sitewatch/schema"
)

// SnapshotState is what a snapshot already holds, for resuming a run. Each domain it holds is
// one map entry (its stored bodies and whether its rows are loaded): two maps, one of stored
// bodies and one of loaded domains, were ~110 MB of a rerun at a million domains.
type SnapshotState struct {
	held            map[string]Endpoints // domain -> endpoints whose raw body is stored, | loadedBit
	loaded          int                  // domains with loadedBit
	CountriesLoaded bool                 // country-metadata stored for this snapshot
	Rejected        map[string]string    // domain -> error code of its latest 400 in this snapshot (from fetch_errors)
}

// loadedBit marks, beside a domain's stored bodies, that its rows are in the derived tables.
const loadedBit Endpoints = 4

// NewSnapshotState returns a state that holds nothing.
func NewSnapshotState() *SnapshotState {
	return &SnapshotState{held: map[string]Endpoints{}, Rejected: map[string]string{}}
}

// Clone returns a copy of s that changes apart from it.
func (s *SnapshotState) Clone() *SnapshotState {
	return &SnapshotState{held: maps.Clone(s.held), loaded: s.loaded, CountriesLoaded: s.CountriesLoaded, Rejected: maps.Clone(s.Rejected)}
}

// Stored is the set of domain's bodies stored for the snapshot.
func (s *SnapshotState) Stored(domain string) Endpoints { return s.held[domain] &^ loadedBit }

// Loaded says whether domain's rows are in the derived tables.
func (s *SnapshotState) Loaded(domain string) bool { return s.held[domain]&loadedBit != 0 }

// LoadedCount is how many domains are loaded.
func (s *SnapshotState) LoadedCount() int { return s.loaded }

// AddStored records the bodies eps of domain as stored.
func (s *SnapshotState) AddStored(domain string, eps Endpoints) {
	s.held[domain] |= eps &^ loadedBit
}

// SetLoaded records domain's rows as loaded.
func (s *SnapshotState) SetLoaded(domain string) {
	if e := s.held[domain]; e&loadedBit == 0 {
		s.held[domain] = e | loadedBit
		s.loaded++
	}
}

// EachStored calls fn with every domain that has a stored body, and its bodies.
func (s *SnapshotState) EachStored(fn func(domain string, stored Endpoints)) {
	for d, e := range s.held {
		if stored := e &^ loadedBit; stored != 0 {
			fn(d, stored)
		}
	}
}

// Endpoints is a set of a domain's two endpoints (site-overview, site-similar). A byte, not a
// map: a snapshot's state holds one per watchlist domain, and a map per domain made the state
// of 200,000 domains 30 MB.
type Endpoints uint8

// EndpointBit is the set of ep alone (empty for country-metadata, which belongs to no domain).
func EndpointBit(ep schema.Endpoint) Endpoints {
	switch ep {
	case schema.EndpointOverview:
		return 1
	case schema.EndpointSimilar:
		return 2
	}
	return 0
}

// Has reports whether ep is in the set.
func (e Endpoints) Has(ep schema.Endpoint) bool { return e&EndpointBit(ep) != 0 }

// With returns the set with ep added.
func (e Endpoints) With(ep schema.Endpoint) Endpoints { return e | EndpointBit(ep) }

// Both reports whether both of a domain's bodies are in the set.
func (e Endpoints) Both() bool {
	return e.Has(schema.EndpointOverview) && e.Has(schema.EndpointSimilar)
}

func (e Endpoints) String() string {
	var names []string
	for _, ep := range schema.DomainEndpoints {
		if e.Has(ep) {
			names = append(names, string(ep))
		}
	}
	return "{" + strings.Join(names, " ") + "}"
}
