// Package sources spends several credit sources in one run: a planner that decides which
// source pays for which calls (what expires first is spent first), and a fetcher that then
// lets every paying source work at once, each paced to its own limits. The run core sees one
// pipeline.Fetcher; each source is an *atlas.Client.
package sources

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"sitewatch/pipeline/textout"
)

// Allowance is what one source may pay for, as its free probe reported it.
type Allowance struct {
	Name string
	// Usable is the calls the source may pay for: its balance or remaining quota minus its
	// reserve (min_credits); -1 when the server did not say.
	Usable int64
	// Quota says the allowance is a marketplace monthly quota (no rollover); Reset is when it
	// resets (zero: unknown). Credits of a direct wallet last (up to 12 months).
	Quota bool
	Reset time.Time
	Rate  float64 // requests/second the source is paced to
}

// Share is one source's part of a plan.
type Share struct {
	Allowance
	Calls int // calls this source pays for
	// Expiring says the quota resets before the next scheduled run: what it does not spend
	// now is lost. Unused is how much of it this plan leaves to expire.
	Expiring bool
	Unused   int64
}

// Plan is who pays for a run's calls, in spend order.
type Plan struct {
	Shares    []Share
	Calls     int       // calls planned
	Uncovered int       // calls no source can pay for (the run stops for credits: exit 3)
	NextRun   time.Time // the next scheduled run (zero: unknown)
}

// Order sorts allowances into spend order: quotas that reset before nextRun first (soonest
// reset first), then the other quotas (by reset), then long-lived credits, in config order.
func Order(allow []Allowance, nextRun time.Time) []Allowance {
	out := slices.Clone(allow)
	rank := func(a Allowance) int {
		switch {
		case a.Quota && !a.Reset.IsZero() && (nextRun.IsZero() || a.Reset.Before(nextRun)):
			return 0
		case a.Quota:
			return 1
		}
		return 2
	}
	slices.SortStableFunc(out, func(a, b Allowance) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		if rank(a) < 2 && !a.Reset.Equal(b.Reset) {
			return a.Reset.Compare(b.Reset)
		}
		return 0
	})
	return out
}

// NewPlan gives calls to the sources in spend order, each up to its usable allowance (an
// unknown allowance takes whatever is left).
func NewPlan(allow []Allowance, calls int, nextRun time.Time) *Plan {
	p := &Plan{Calls: calls, NextRun: nextRun}
	left := calls
	for _, a := range Order(allow, nextRun) {
		take := left
		if a.Usable >= 0 {
			take = min(left, int(a.Usable))
		}
		left -= take
		s := Share{Allowance: a, Calls: take}
		s.Expiring = a.Quota && !a.Reset.IsZero() && (nextRun.IsZero() || a.Reset.Before(nextRun))
		if s.Expiring && a.Usable >= 0 {
			s.Unused = a.Usable - int64(take)
		}
		p.Shares = append(p.Shares, s)
	}
	p.Uncovered = left
	return p
}

// Ideal is the shortest time the plan can take with every source working at once: its
// longest share at its own rate.
func (p *Plan) Ideal() time.Duration {
	var longest time.Duration
	for _, s := range p.Shares {
		if s.Calls > 0 && s.Rate > 0 {
			longest = max(longest, time.Duration(float64(s.Calls)/s.Rate*float64(time.Second)))
		}
	}
	return longest
}

// Expiring is the quota the plan leaves to expire unused before the next run.
func (p *Plan) Expiring() int64 {
	var n int64
	for _, s := range p.Shares {
		n += s.Unused
	}
	return n
}

// String is the plan in one line, e.g. "marketplace pays 1,800 of its 2,000 before
// 2026-12-01; direct pays 201; 200 quota credits would expire unused".
func (p *Plan) String() string {
	var parts []string
	for _, s := range p.Shares {
		part := fmt.Sprintf("%s pays %s", s.Name, textout.Thousands(int64(s.Calls)))
		if s.Usable >= 0 && (s.Quota || s.Calls > 0) {
			part += " of its " + textout.Thousands(s.Usable)
		}
		if s.Quota && !s.Reset.IsZero() {
			part += " before " + s.Reset.UTC().Format(time.DateOnly)
		}
		parts = append(parts, part)
	}
	if p.Uncovered > 0 {
		parts = append(parts, fmt.Sprintf("%s calls have no source to pay for them (the run would stop for credits)", textout.Thousands(int64(p.Uncovered))))
	}
	if n := p.Expiring(); n > 0 {
		parts = append(parts, fmt.Sprintf("%s quota %s would expire unused", textout.Thousands(n), plural(n, "credit", "credits")))
	}
	return strings.Join(parts, "; ")
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
