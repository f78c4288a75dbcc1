package pipeline

import (
	"sitewatch/pipeline/atlas"
	"sitewatch/pipeline/warehouse"
	"sitewatch/schema"
)

// Plan is the pending work of one snapshot: the calls still needed, and what is already done.
type Plan struct {
	Snapshot      string
	Domains       int             // valid watchlist domains
	Loaded        int             // domains already loaded in this snapshot (skipped unless --refresh)
	RejectedByAPI map[string]bool // domains the API answered 400 earlier in this snapshot (skipped unless --refresh)
	HalfLoaded    int             // domains with one of their two responses stored
	Unloadable    int             // domains with both responses stored that cannot be loaded (skipped unless --refresh)
	Countries     bool            // country-metadata still to fetch
	Requests      []atlas.Request // in order: countries first, then both endpoints of each domain in turn
	// HeldComplete says the warehouse already holds Snapshot complete (dry run): a run finds
	// it up to date for 1 credit while the API still serves that month.
	HeldComplete bool
	// FullCredits is what a new month costs: 2 calls per domain and country-metadata.
	FullCredits int
	// FromBucket is how many answers of Snapshot the bucket (BucketURL) holds that the
	// warehouse lacks: a run pulls them first (0 credits), and the plan counts them as held.
	// BucketUnread says why the bucket could not be read ("" when it was, or there is none).
	FromBucket   int64
	BucketURL    string
	BucketUnread string
}

// Complete says whether state holds the snapshot complete for domains: every domain loaded
// or rejected by the API, nothing stored that cannot be loaded, and the countries stored.
func (p *Plan) Complete(state *warehouse.SnapshotState, domains []string) bool {
	if !state.CountriesLoaded {
		return false
	}
	for _, d := range domains {
		if _, rejected := state.Rejected[d]; !state.Loaded[d] && !rejected {
			return false
		}
	}
	return true
}

// drop removes a call already made (the probe) from the plan.
func (p *Plan) drop(done atlas.Request) {
	for i, r := range p.Requests {
		if r == done {
			p.Requests = append(p.Requests[:i:i], p.Requests[i+1:]...)
			return
		}
	}
}

// Credits is the most the plan can cost: one credit per call.
func (p *Plan) Credits() int { return len(p.Requests) }

// PendingDomains counts the domains with at least one call planned.
func (p *Plan) PendingDomains() int {
	seen := map[string]bool{}
	for _, r := range p.Requests {
		if r.Domain != "" {
			seen[r.Domain] = true
		}
	}
	return len(seen)
}

// BuildPlan lists the calls a snapshot still needs given what the warehouse holds: two per
// domain not yet loaded, only the missing endpoint of a half-loaded domain, and one for
// country-metadata if it is not stored for this snapshot. With refresh, everything is planned.
func BuildPlan(snapshot string, domains []string, state *warehouse.SnapshotState, refresh bool) *Plan {
	p := &Plan{Snapshot: snapshot, Domains: len(domains), RejectedByAPI: map[string]bool{}}
	// Sized once: at a million domains, growing by appends left ~100 MB of garbage behind
	// (the heap the run then keeps).
	planned := len(domains)
	if !refresh {
		planned -= min(planned, len(state.Loaded))
	}
	p.Requests = make([]atlas.Request, 0, 1+len(schema.DomainEndpoints)*planned)
	if refresh || !state.CountriesLoaded {
		p.Countries = true
		p.Requests = append(p.Requests, atlas.Request{Endpoint: schema.EndpointCountries})
	}
	for _, d := range domains {
		if !refresh {
			if state.Loaded[d] {
				p.Loaded++
				continue
			}
			if _, rejected := state.Rejected[d]; rejected {
				p.RejectedByAPI[d] = true
				continue
			}
		}
		stored := state.Stored[d]
		if !refresh && stored.Both() {
			p.Unloadable++ // both bodies paid for but not loadable: fetching again buys the same
			continue
		}
		missing := 0
		for _, ep := range schema.DomainEndpoints {
			if refresh || !stored.Has(ep) {
				p.Requests = append(p.Requests, atlas.Request{Endpoint: ep, Domain: d})
				missing++
			}
		}
		if missing == 1 {
			p.HalfLoaded++
		}
	}
	return p
}
