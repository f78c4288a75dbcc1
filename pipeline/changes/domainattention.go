package changes

import (
	"context"
	"database/sql"
	"fmt"
)

// domainAttentionSQL reads one domain's rows of every complete month (needs_attention_all
// without only_month), newest month first, in list order within a month.
const domainAttentionSQL = `SELECT snapshot_month, coalesce(previous_month, ''), domain, kind, coalesce(metric, ''), coalesce(channel, ''),
		value, previous_value, change_pct, change_points, z, severity, reason, score, rank, domain_rank
	FROM needs_attention_all(?, ?)
	WHERE domain = ?
	ORDER BY snapshot_month DESC, rank`

// readAttention sets v.Flagged to every complete month that flagged the domain with settings
// s, and v.Attention to the latest complete month's list (empty when that month did not flag
// it). It returns ErrNoAttentionView on a warehouse older than the view.
func (v *DomainView) readAttention(ctx context.Context, db *sql.DB, latest string, s AttentionSettings) error {
	if err := requireAttentionView(ctx, db, latest); err != nil {
		return err
	}
	s = s.withDefaults()
	byMonth := map[string]*Attention{}
	byDomain := map[string]int{}
	err := queryRows(ctx, db, domainAttentionSQL, []any{s.MinVisits, s.Threshold, v.Domain}, func(row attentionRow) {
		a := byMonth[row.Month]
		if a == nil {
			a = &Attention{Month: row.Month, PreviousMonth: row.Previous, Settings: s}
			byMonth[row.Month] = a
			byDomain = map[string]int{}
			v.Flagged = append(v.Flagged, a)
		}
		a.add(row, byDomain)
	})
	if err != nil {
		return fmt.Errorf("needs attention of %s: %w", v.Domain, err)
	}
	v.Attention = byMonth[latest]
	if v.Attention == nil {
		v.Attention = &Attention{Month: latest, Settings: s}
	}
	return nil
}

// queryRows runs an attention query and calls each for every row.
func queryRows(ctx context.Context, db *sql.DB, query string, args []any, each func(attentionRow)) error {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		row, err := scanAttentionRow(rows)
		if err != nil {
			return err
		}
		each(row)
	}
	return rows.Err()
}
