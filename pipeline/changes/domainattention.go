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
// it). The months come from the domain's own rows; only a flagged month's whole list is then
// read, for the domain's place in it. It returns ErrNoAttentionView on a warehouse older than
// the view.
func (v *DomainView) readAttention(ctx context.Context, db *sql.DB, latest string, s AttentionSettings) error {
	if err := requireAttentionView(ctx, db, latest); err != nil {
		return err
	}
	s = s.withDefaults()
	months, err := flaggedMonths(ctx, db, v.Domain, s)
	if err != nil {
		return fmt.Errorf("needs attention of %s: %w", v.Domain, err)
	}
	for _, m := range months {
		a, err := readAttentionAs(ctx, db, m, v.Domain, s, knownListed) // flaggedMonths asked only_domain
		if err != nil {
			return err
		}
		if len(a.Domains) > 0 {
			v.Flagged = append(v.Flagged, a)
		}
		if m == latest {
			v.Attention = a
		}
	}
	if v.Attention == nil {
		v.Attention = &Attention{Month: latest, Settings: s}
	}
	return nil
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
