package pipeline

import (
	"math"

	"sitewatch/pipeline/model"
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
	// calls are the calls in order: countries first, then both endpoints of each domain in
	// turn (or the one missing), each pointing into domains, the watchlist it was built from.
	calls   []call
	domains []string
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
func (p *Plan) Complete(state *model.SnapshotState, domains []string) bool {
	if !state.CountriesLoaded {
		return false
	}
	for _, d := range domains {
		if _, rejected := state.Rejected[d]; !state.Loaded(d) && !rejected {
			return false
		}
	}
	return true
}

// call is one planned call in 4 bytes: the domain's place in Plan.domains (shifted left by
// one) and the endpoint (bit 0: site-similar), or countryCall. A plan holds one per call for
// the whole fetch: as an model.Request (two strings, 32 bytes) that was 64 MB of the run's
// heap at a million domains; as a call 8 MB.
type call uint32

// countryCall is the country-metadata call.
const countryCall call = math.MaxUint32

func domainCall(domain int, endpoint schema.Endpoint) call {
	c := call(domain) << 1
	if endpoint == schema.EndpointSimilar {
		c |= 1
	}
	return c
}

// endpoint is the call's endpoint, known without the plan.
func (c call) endpoint() schema.Endpoint {
	switch {
	case c == countryCall:
		return schema.EndpointCountries
	case c&1 == 1:
		return schema.EndpointSimilar
	}
	return schema.EndpointOverview
}

// sameDomain says whether c and o are calls of one domain (country-metadata is of none).
func (c call) sameDomain(o call) bool { return c != countryCall && o != countryCall && c>>1 == o>>1 }

// request is c as the client sends it.
func (p *Plan) request(c call) model.Request {
	if c == countryCall {
		return model.Request{Endpoint: schema.EndpointCountries}
	}
	return model.Request{Endpoint: c.endpoint(), Domain: p.domains[c>>1]}
}

// requests is cs as the client sends them (for a fetcher that takes a list, not a queue).
func (p *Plan) requests(cs []call) []model.Request {
	reqs := make([]model.Request, len(cs))
	for i, c := range cs {
		reqs[i] = p.request(c)
	}
	return reqs
}

// queue hands out cs in order, one request at a time, for a fetcher's FetchFrom.
func (p *Plan) queue(cs []call) func() (model.Request, bool) {
	next := 0
	return func() (model.Request, bool) {
		if next == len(cs) {
			return model.Request{}, false
		}
		next++
		return p.request(cs[next-1]), true
	}
}

// Requests lists the plan's calls in order, as the client sends them.
func (p *Plan) Requests() []model.Request { return p.requests(p.calls) }

// drop removes a call already made (the probe) from the plan.
func (p *Plan) drop(done model.Request) {
	for i, c := range p.calls {
		if p.request(c) == done {
			p.calls = append(p.calls[:i:i], p.calls[i+1:]...)
			return
		}
	}
}

// Credits is the most the plan can cost: one credit per call.
func (p *Plan) Credits() int { return len(p.calls) }

// PendingDomains counts the domains with at least one call planned (a domain's calls are
// adjacent: BuildPlan's order, which drop keeps).
func (p *Plan) PendingDomains() int {
	n := 0
	for i, c := range p.calls {
		if c != countryCall && (i == 0 || !c.sameDomain(p.calls[i-1])) {
			n++
		}
	}
	return n
}

// release drops the plan's calls once the fetch is over (the counts stay).
func (p *Plan) release() { p.calls = nil }

// BuildPlan lists the calls a snapshot still needs given what the warehouse holds: two per
// domain not yet loaded, only the missing endpoint of a half-loaded domain, and one for
// country-metadata if it is not stored for this snapshot. With refresh, everything is planned.
func BuildPlan(snapshot string, domains []string, state *model.SnapshotState, refresh bool) *Plan {
	if uint64(len(domains)) >= uint64(countryCall>>1) {
		panic("pipeline: a watchlist of 2^31 domains") // a call keeps 31 bits of a domain's place
	}
	p := &Plan{Snapshot: snapshot, Domains: len(domains), RejectedByAPI: map[string]bool{}, domains: domains}
	// Sized once: at a million domains, growing by appends left ~100 MB of garbage behind
	// (the heap the run then keeps).
	planned := len(domains)
	if !refresh {
		planned -= min(planned, state.LoadedCount())
	}
	p.calls = make([]call, 0, 1+len(schema.DomainEndpoints)*planned)
	if refresh || !state.CountriesLoaded {
		p.Countries = true
		p.calls = append(p.calls, countryCall)
	}
	for i, d := range domains {
		if !refresh {
			if state.Loaded(d) {
				p.Loaded++
				continue
			}
			if _, rejected := state.Rejected[d]; rejected {
				p.RejectedByAPI[d] = true
				continue
			}
		}
		stored := state.Stored(d)
		if !refresh && stored.Both() {
			p.Unloadable++ // both bodies paid for but not loadable: fetching again buys the same
			continue
		}
		missing := 0
		for _, ep := range schema.DomainEndpoints {
			if refresh || !stored.Has(ep) {
				p.calls = append(p.calls, domainCall(i, ep))
				missing++
			}
		}
		if missing == 1 {
			p.HalfLoaded++
		}
	}
	return p
}
