package changes

import (
	"context"
	"database/sql"
	"fmt"
)

// domainFlaggedSQL lists the complete months that flag one domain, newest first, reading
// only that domain's history (only_domain): the history step over every domain of every
// month is most of the list's cost, and a domain is flagged in few months, if any.
const domainFlaggedSQL = `SELECT DISTINCT snapshot_month FROM needs_attention_all(?, ?, only_domain := ?) ORDER BY snapshot_month DESC`

// readAttention sets v.Flagged to every complete month that flagged the domain with settings
// s, and v.Attention to the latest complete month's list (empty when that month did not flag
// it). Months whose whole list is stored (attention_lists, as of the data now) give the
// domain's rows and place from there in one read; any other month is computed as before (the
// domain's own rows first, the whole list only for its place when it is listed). It returns
// ErrNoAttentionView on a warehouse older than the view.
func (v *DomainView) readAttention(ctx context.Context, db *sql.DB, latest string, s AttentionSettings) error {
	s = s.withDefaults()
	months, err := storedAttentionMonths(ctx, db, "", s)
	if err != nil { // views older than the stored lists: compute every month
		if err := requireAttentionView(ctx, db, latest); err != nil {
			return err
		}
		return v.readComputedAttention(ctx, db, latest, s)
	}
	lists := map[string]*Attention{}
	for _, m := range months {
		if m.Stored {
			lists[m.Month] = &Attention{Month: m.Month, PreviousMonth: m.Previous, Settings: s}
		}
	}
	if err := readStoredAttention(ctx, db, lists, v.Domain, s); err != nil {
		return fmt.Errorf("needs attention of %s: %w", v.Domain, err)
	}
	for _, m := range months { // newest first
		a := lists[m.Month]
		if a == nil {
			if a, err = readAttentionAs(ctx, db, m.Month, v.Domain, s, askDomainFirst); err != nil {
				return err
			}
		}
		v.setMonth(a, latest)
	}
	v.setLatestQuiet(latest, s)
	return nil
}

// readComputedAttention is readAttention computing every month: the months that flag the
// domain from its own rows (only_domain), then each of those months' whole list for its place.
func (v *DomainView) readComputedAttention(ctx context.Context, db *sql.DB, latest string, s AttentionSettings) error {
	months, err := flaggedMonths(ctx, db, v.Domain, s)
	if err != nil {
		return fmt.Errorf("needs attention of %s: %w", v.Domain, err)
	}
	for _, m := range months {
		a, err := readAttentionAs(ctx, db, m, v.Domain, s, knownListed) // flaggedMonths asked only_domain
		if err != nil {
			return err
		}
		v.setMonth(a, latest)
	}
	v.setLatestQuiet(latest, s)
	return nil
}

// setMonth records a month's list of the domain: in Flagged when it names the domain, and as
// Attention when it is the latest complete month.
func (v *DomainView) setMonth(a *Attention, latest string) {
	if len(a.Domains) > 0 {
		v.Flagged = append(v.Flagged, a)
	}
	if a.Month == latest {
		v.Attention = a
	}
}

// setLatestQuiet makes Attention the latest month's empty list when no list was read for it.
func (v *DomainView) setLatestQuiet(latest string, s AttentionSettings) {
	if v.Attention == nil {
		v.Attention = &Attention{Month: latest, Settings: s}
	}
}

// flaggedMonths lists the complete months whose list names domain, newest first.
func flaggedMonths(ctx context.Context, db *sql.DB, domain string, s AttentionSettings) ([]string, error) {
	rows, err := db.QueryContext(ctx, domainFlaggedSQL, s.MinVisits, s.Threshold, domain)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	var months []string
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			return nil, err
		}
		months = append(months, m)
	}
	return months, rows.Err()
}
