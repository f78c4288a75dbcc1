// Package discover finds the domains worth tracking next: the similar sites the watchlist
// points at most that are not on it yet (the view discover_candidates, sql/views), and appends
// chosen ones to domains.yaml without disturbing a byte the user wrote (watchfile.go). It
// spends no credits: it reads the warehouse only.
package discover

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"sitewatch/pipeline/config"
)

// Candidate is one row of discover_candidates that can be added to the watchlist.
type Candidate struct {
	Rank              int     // 1 = the domain the watchlist points at most (after the filters of Candidates)
	Domain            string  // normalized as the watchlist normalizes it
	Title             string  // "" when not returned
	Category          string  // category path as returned, "" when not returned
	GlobalRank        int64   // 0 when not ranked
	TotalVisits       float64 // -1 when not returned
	Country           string  // ISO alpha-2 of its country rank
	WatchedBy         int     // watched domains that list it this month
	WatchedTotal      int     // watched domains loaded this month
	PreviousWatchedBy int     // watched domains that listed it the previous month held
	ListedBy          string  // those watched domains, comma-separated
	Reach             float64 // weighted count of the watched domains that list it
	Score             float64 // the ranking key: reach with the new/rising bonus
	New               bool    // listed this month and in no earlier month held
	Rising            bool    // more watched domains list it than last month, or its rank improved
	Reason            string  // why, in words
}

// Query selects the candidates of one month.
type Query struct {
	// Snapshot is the month (YYYY-MM); "" takes DefaultMonth.
	Snapshot string
	// Top bounds the rows returned; 0 returns every candidate.
	Top int
	// Watchlist holds the normalized domains of the config's watchlist. Candidates on it are
	// left out, so a domain added but not fetched yet is not proposed again.
	Watchlist []string
	// MinVisits is the size floor in visits a month: 0 takes DefaultMinVisits, NoFloor lists
	// candidates of every size (and those without a visits figure).
	MinVisits int64
}

// DefaultMinVisits is the size floor of a candidate when the config sets none (discover.min_visits):
// a watched domain costs 24 credits a year, and below a few thousand visits a month its estimate
// is coarse and its moves stay under needs attention's 10,000-visit floor.
const DefaultMinVisits = 5000

// NoFloor as Query.MinVisits lists candidates of every size (`discover --min-visits 0`).
const NoFloor = -1

// Floor is the floor q reads with: MinVisits, its default, or 0 for NoFloor.
func (q Query) Floor() int64 {
	switch {
	case q.MinVisits == 0:
		return DefaultMinVisits
	case q.MinVisits < 0:
		return 0
	}
	return q.MinVisits
}

// ErrNoData is returned when the warehouse holds no similar sites for the month asked.
var ErrNoData = errors.New("no similar sites in the warehouse")

// DefaultMonth is the month discover describes when none is given: the latest complete month,
// or the newest month holding similar sites when no month is complete yet; "" when the
// warehouse holds none.
func DefaultMonth(ctx context.Context, db *sql.DB) (string, error) {
	var month sql.NullString
	err := db.QueryRowContext(ctx, `SELECT coalesce(
		(SELECT max(snapshot_month) FROM complete_months WHERE snapshot_month IN (SELECT snapshot_month FROM similar_sites)),
		(SELECT max(snapshot_month) FROM similar_sites))`).Scan(&month)
	if err != nil {
		return "", fmt.Errorf("discover: find the latest month: %w", err)
	}
	return month.String, nil
}

// Candidates returns the month described and its candidates, best first, renumbered after
// leaving out what the watchlist already holds and what the watchlist normalizer refuses (the
// view's host-name pattern is conservative, the normalizer is the rule). It returns an error
// wrapping ErrNoData when the month has no similar sites, or the warehouse's error.
func Candidates(ctx context.Context, db *sql.DB, q Query) (string, []Candidate, error) {
	month := q.Snapshot
	if month == "" {
		var err error
		if month, err = DefaultMonth(ctx, db); err != nil {
			return "", nil, err
		}
		if month == "" {
			return "", nil, fmt.Errorf("discover: %w yet: run `sitewatch run` first", ErrNoData)
		}
	} else if err := checkMonthHeld(ctx, db, month); err != nil {
		return "", nil, err
	}
	out, _, err := pick(ctx, db, q, candidatesSQL, q.Floor(), month)
	if err != nil {
		return "", nil, fmt.Errorf("discover: read discover_candidates for %s: %w", month, err)
	}
	return month, out, nil
}

// StoredCandidates is Candidates of month (q.Snapshot is not read) from the ranking a writer
// stored (changes_cached_candidates, its first StoredPerFloor rows per floor): ok is false when
// none is stored for month and q's floor, or when it holds fewer than q.Top after the watchlist
// and the normalizer left rows out (then call Candidates). The caller knows the stored ranking
// is current (warehouse.StoredListsCurrent): nothing here checks it against the tables.
func StoredCandidates(ctx context.Context, db *sql.DB, q Query, month string) (_ []Candidate, ok bool, err error) {
	var held int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM changes_cached_candidates WHERE snapshot_month = ? AND floor_visits = ?`,
		month, q.Floor()).Scan(&held); err != nil {
		return nil, false, fmt.Errorf("discover: read the stored candidates of %s: %w", month, err)
	}
	if held == 0 {
		return nil, false, nil
	}
	out, whole, err := pick(ctx, db, q, storedCandidatesSQL, q.Floor(), month)
	if err != nil {
		return nil, false, fmt.Errorf("discover: read the stored candidates of %s: %w", month, err)
	}
	// The stored rows end at StoredCandidates: a list that reached them may have lost some.
	return out, whole || held < StoredPerFloor, nil
}

// StoredPerFloor is how many candidates a writer stores per size floor (changes_cached_candidates,
// pipeline/warehouse): more than any worth-tracking list shows (changes --top, the report's 3).
const StoredPerFloor = 100

// pick runs query (candidates of args, in rank order) and keeps q's: renumbered after leaving
// out what the watchlist holds and what the normalizer refuses, at most q.Top (whole: it
// reached q.Top).
func pick(ctx context.Context, db *sql.DB, q Query, query string, args ...any) (out []Candidate, whole bool, err error) {
	watched := make(map[string]bool, len(q.Watchlist))
	for _, d := range q.Watchlist {
		watched[d] = true
	}
	err = eachCandidate(ctx, db, query, args, func(c Candidate) bool {
		domain, err := config.NormalizeDomain(c.Domain)
		if err != nil || watched[domain] {
			return true
		}
		c.Domain, c.Rank = domain, len(out)+1
		watched[domain] = true // two spellings of one domain: the better-ranked one stays
		out = append(out, c)
		whole = q.Top > 0 && len(out) >= q.Top
		return !whole
	})
	return out, whole, err
}

func checkMonthHeld(ctx context.Context, db *sql.DB, month string) error {
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM similar_sites WHERE snapshot_month = ?`, month).Scan(&n); err != nil {
		return fmt.Errorf("discover: read similar_sites for %s: %w", month, err)
	}
	if n == 0 {
		return fmt.Errorf("discover: %w for %s: `sitewatch status` lists the months held", ErrNoData, month)
	}
	return nil
}

const candidatesSQL = `SELECT candidate, coalesce(title, ''), coalesce(category_slug, ''), coalesce(global_rank, 0),
	coalesce(total_visits, -1), coalesce(country_code, ''), watched_by, coalesce(watched_total, 0), previous_watched_by,
	listed_by, reach, score, is_new, is_rising, reason
FROM discover_candidates_in(min_visits := ?) WHERE snapshot_month = ? ORDER BY discover_rank`

// storedCandidatesSQL reads what candidatesSQL reads from the rows a writer stored.
const storedCandidatesSQL = `SELECT candidate, coalesce(title, ''), coalesce(category_slug, ''), coalesce(global_rank, 0),
	coalesce(total_visits, -1), coalesce(country_code, ''), watched_by, coalesce(watched_total, 0), previous_watched_by,
	listed_by, reach, score, is_new, is_rising, reason
FROM changes_cached_candidates WHERE floor_visits = ? AND snapshot_month = ? ORDER BY discover_rank`

// eachCandidate calls fn for each candidate query returns (candidatesSQL's columns), in rank
// order, until fn returns false.
func eachCandidate(ctx context.Context, db *sql.DB, query string, args []any, fn func(Candidate) bool) error {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var c Candidate
		if err := rows.Scan(&c.Domain, &c.Title, &c.Category, &c.GlobalRank, &c.TotalVisits, &c.Country,
			&c.WatchedBy, &c.WatchedTotal, &c.PreviousWatchedBy, &c.ListedBy, &c.Reach, &c.Score, &c.New, &c.Rising, &c.Reason); err != nil {
			return err
		}
		if !fn(c) {
			break
		}
	}
	return rows.Err()
}
