package report

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"sitewatch/pipeline/changes"
	"sitewatch/pipeline/discover"
	"sitewatch/pipeline/numfmt"
)

// maxCandidates is how many of discover's candidates the competitors section lists.
const maxCandidates = 8

// candidateRow is a domain the watchlist points at but does not track (sitewatch discover).
type candidateRow struct {
	Rank            int
	Domain, Reason  string
	IsNew, IsRising bool
}

// settings are the config's knobs a page is read with; zero fields are the defaults.
type settings struct {
	Attention changes.AttentionSettings // attention.min_visits, attention.threshold
	// DiscoverMinVisits is discover.min_visits: the size floor of the candidates, the same
	// for `sitewatch discover`, the worth-tracking list of `changes` and this page.
	DiscoverMinVisits int64
}

// digestOptions are what the page's digest is built with: the same list of needs attention,
// largest falls and candidates as `sitewatch changes` with the same config.
func (s settings) digestOptions() changes.Options {
	return changes.Options{Attention: s.Attention, DiscoverMinVisits: s.DiscoverMinVisits, WorthTracking: maxCandidates}
}

// candidateFloor is the candidates' size floor as the page prints it: "5.00k", "none".
func (s settings) candidateFloor() string {
	f := discover.Query{MinVisits: s.DiscoverMinVisits}.Floor()
	if f <= 0 {
		return "none"
	}
	return numfmt.Count(float64(f))
}

// loadCandidates reads the snapshot's best candidates at or above the configured size floor
// (discover.min_visits) from the view discover_candidates: discover's own list. The digest's
// worth-tracking list is that list (read with maxCandidates lines, digestOptions), so when the
// digest describes the snapshot the page takes it: at 100,000 domains the query costs about
// 4 s of CPU, and it ran twice.
func (d *data) loadCandidates(ctx context.Context, db *sql.DB) error {
	if d.Digest != nil && d.Digest.Month == d.Snapshot {
		d.Candidates = d.Digest.WorthTracking
		return nil
	}
	q := discover.Query{Snapshot: d.Snapshot, Top: maxCandidates, MinVisits: d.settings.DiscoverMinVisits}
	_, cs, err := discover.Candidates(ctx, db, q)
	if errors.Is(err, discover.ErrNoData) {
		return nil // no similar sites this month: the section says so already
	}
	if err != nil {
		return fmt.Errorf("report %s: %w", d.Snapshot, err)
	}
	d.Candidates = cs
	return nil
}

func candidateRows(cs []discover.Candidate) []candidateRow {
	rows := make([]candidateRow, len(cs))
	for i, c := range cs {
		rows[i] = candidateRow{Rank: c.Rank, Domain: c.Domain, Reason: c.Reason, IsNew: c.New, IsRising: c.Rising}
	}
	return rows
}
