package report

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"sitewatch/pipeline/discover"
)

// maxCandidates is how many of discover's candidates the competitors section lists.
const maxCandidates = 8

// candidateRow is a domain the watchlist points at but does not track (sitewatch discover).
type candidateRow struct {
	Rank            int
	Domain, Reason  string
	IsNew, IsRising bool
}

// loadCandidates reads the snapshot's best candidates from the view discover_candidates.
func (d *data) loadCandidates(ctx context.Context, db *sql.DB) error {
	_, cs, err := discover.Candidates(ctx, db, discover.Query{Snapshot: d.Snapshot, Top: maxCandidates})
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
