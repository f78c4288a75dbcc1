package pipeline

import (
	"fmt"
	"io"
	"strings"

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
		if !refresh && stored[schema.EndpointOverview] && stored[schema.EndpointSimilar] {
			p.Unloadable++ // both bodies paid for but not loadable: fetching again buys the same
			continue
		}
		missing := 0
		for _, ep := range schema.DomainEndpoints {
			if refresh || !stored[ep] {
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

// Print writes the plan as a user reads it in --dry-run output.
func (p *Plan) Print(w io.Writer, cfg *Config, wl *Watchlist) {
	fmt.Fprintf(w, "snapshot %s — plan (dry run: nothing that costs credits is called)\n", p.Snapshot)
	rows := [][2]string{
		{"watchlist entries", fmt.Sprint(len(cfg.Domains))},
		{"valid domains", fmt.Sprint(p.Domains)},
		{"rejected before sending", fmt.Sprint(len(wl.Rejected))},
		{"duplicates collapsed", fmt.Sprint(len(wl.Duplicates))},
		{"already loaded", fmt.Sprint(p.Loaded)},
		{"rejected by the API earlier", fmt.Sprint(len(p.RejectedByAPI))},
		{"stored but not loadable", fmt.Sprint(p.Unloadable)},
		{"domains to fetch", fmt.Sprintf("%d (%d half-loaded: only the missing call)", p.PendingDomains(), p.HalfLoaded)},
		{"country-metadata", map[bool]string{true: "to fetch (1 call)", false: "already loaded"}[p.Countries]},
		{"calls", fmt.Sprint(len(p.Requests))},
		{"credits (at most)", fmt.Sprint(p.Credits())},
		{"min_credits reserve", fmt.Sprint(cfg.API.MinCredits)},
		{"max_credits_per_run", capText(cfg.API.MaxCreditsPerRun)},
	}
	printRows(w, rows)
	if c := cfg.API.MaxCreditsPerRun; c > 0 && int64(p.Credits()) > c {
		fmt.Fprintf(w, "note: the run will stop after %d calls (max_credits_per_run) with exit code 3; rerun to continue\n", c)
	}
	for _, r := range wl.Rejected {
		fmt.Fprintf(w, "rejected: %q (line %d): %s\n", r.Input, r.Line, r.Reason)
	}
}

func capText(n int64) string {
	if n == 0 {
		return "0 (no cap)"
	}
	return fmt.Sprint(n)
}

// printRows writes label/value rows with the labels padded to one width.
func printRows(w io.Writer, rows [][2]string) {
	width := 0
	for _, r := range rows {
		width = max(width, len(r[0]))
	}
	for _, r := range rows {
		fmt.Fprintf(w, "  %s%s  %s\n", r[0], strings.Repeat(" ", width-len(r[0])), r[1])
	}
}

// unloadable lists the watchlist domains whose two responses are stored but not loaded.
func unloadable(domains []string, state *warehouse.SnapshotState) []string {
	var out []string
	for _, d := range domains {
		if st := state.Stored[d]; st[schema.EndpointOverview] && st[schema.EndpointSimilar] && !state.Loaded[d] {
			out = append(out, d)
		}
	}
	return out
}
