package changes

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"sitewatch/pipeline/warehouse"
)

// ErrUnknownDomain reports a domain the warehouse holds no month of.
var ErrUnknownDomain = errors.New("not in the warehouse")

// DomainMonth is one calendar month of a domain's history: visits with their month-over-month
// and year-over-year change (traffic_monthly), and, for a month the warehouse holds a snapshot
// of, its rank, AI-referred visits and channel shares.
type DomainMonth struct {
	Month     string   `json:"month"` // YYYY-MM
	Visits    *float64 `json:"visits"`
	MoMPct    *float64 `json:"mom_pct"` // percent
	YoYPct    *float64 `json:"yoy_pct"`
	Rank      *int64   `json:"global_rank"`
	AIVisits  *float64 `json:"ai_visits"`
	Channels  []Share  `json:"channels"` // largest first; empty when the month has no snapshot
	Snapshot  bool     `json:"snapshot"` // the warehouse holds a snapshot of this month
	Estimated bool     `json:"is_estimate"`
}

// Share is one channel's share of a domain's visits, in percent.
type Share struct {
	Channel string  `json:"channel"`
	Pct     float64 `json:"pct"`
}

// Competitor is one similar site of the domain's latest snapshot.
type Competitor struct {
	Position    int      `json:"position"`
	Domain      string   `json:"domain"`
	Visits      *float64 `json:"visits"`
	Rank        *int64   `json:"global_rank"`
	OnWatchlist bool     `json:"on_watchlist"`
}

// DomainView is what `sitewatch show DOMAIN` shows: the domain's whole history, its
// needs-attention rows of the latest complete month and its competitors.
type DomainView struct {
	Domain    string        `json:"domain"`
	Title     string        `json:"title"`
	Latest    string        `json:"latest_snapshot"` // the newest snapshot holding the domain
	Months    []DomainMonth `json:"months"`          // oldest first
	Attention *Attention    `json:"-"`               // the latest complete month's list, limited to the domain
	// Flagged holds every complete month the domain was flagged in, newest first, each
	// limited to the domain (domainattention.go); Attention is Flagged[0] when the latest
	// month flagged it.
	Flagged     []*Attention `json:"-"`
	Competitors []Competitor `json:"competitors"`
}

// ReadDomain reads domain's view with the needs-attention settings s. It returns an error
// wrapping ErrUnknownDomain, saying what to do, when no snapshot holds the domain.
func ReadDomain(ctx context.Context, db *sql.DB, domain string, s AttentionSettings) (*DomainView, error) {
	v := &DomainView{Domain: domain}
	var title sql.NullString
	err := db.QueryRowContext(ctx, `SELECT snapshot_month, title FROM sites WHERE domain = ? ORDER BY snapshot_month DESC LIMIT 1`, domain).Scan(&v.Latest, &title)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, unknownDomain(ctx, db, domain)
	}
	if err != nil {
		return nil, fmt.Errorf("show %s: %w", domain, err)
	}
	v.Title = title.String
	for _, step := range []func(context.Context, *sql.DB) error{v.readMonths, v.readChannels, v.readCompetitors} {
		if err := step(ctx, db); err != nil {
			return nil, fmt.Errorf("show %s: %w", domain, err)
		}
	}
	var latest string
	if err := db.QueryRowContext(ctx, `SELECT coalesce(max(snapshot_month), '') FROM complete_months`).Scan(&latest); err != nil {
		return nil, fmt.Errorf("show %s: %w", domain, err)
	}
	if latest != "" {
		if err := v.readAttention(ctx, db, latest, s); err != nil && !errors.Is(err, ErrNoAttentionView) {
			return nil, fmt.Errorf("show %s: %w", domain, err)
		}
	}
	return v, nil
}

// unknownDomain says why domain has no view and what to do.
func unknownDomain(ctx context.Context, db *sql.DB, domain string) error {
	var listed int
	_ = db.QueryRowContext(ctx, `SELECT count(*) FROM discover_candidates WHERE candidate = ?`, domain).Scan(&listed) // advice only
	if listed > 0 {
		return fmt.Errorf("show %s: %w: it is not on the watchlist, but its similar sites point at it (`sitewatch discover` lists it; `sitewatch discover --add` tracks it)", domain, ErrUnknownDomain)
	}
	return fmt.Errorf("show %s: %w: no loaded month holds it; check the spelling (`sitewatch query \"SELECT DISTINCT domain FROM sites\"` lists the domains held), "+
		"or add it to domains.yaml and run `sitewatch run`", domain, ErrUnknownDomain)
}

func (v *DomainView) readMonths(ctx context.Context, db *sql.DB) error {
	return warehouse.QueryEach(ctx, db, `SELECT strftime(t.month, '%Y-%m'), round(t.visits), 100 * t.mom_change, 100 * t.yoy_change,
			s.global_rank, s.ai_total_visits, s.domain IS NOT NULL, t.is_estimate
		FROM traffic_monthly t
		LEFT JOIN sites s ON s.domain = t.domain AND s.snapshot_month = strftime(t.month, '%Y-%m')
		WHERE t.domain = ? ORDER BY t.month`, []any{v.Domain}, func(rows *sql.Rows) error {
		var m DomainMonth
		var visits, mom, yoy, ai sql.NullFloat64
		var rank sql.NullInt64
		if err := rows.Scan(&m.Month, &visits, &mom, &yoy, &rank, &ai, &m.Snapshot, &m.Estimated); err != nil {
			return err
		}
		m.Visits, m.MoMPct, m.YoYPct, m.Rank, m.AIVisits = floatPtr(visits), floatPtr(mom), floatPtr(yoy), intPtr(rank), floatPtr(ai)
		v.Months = append(v.Months, m)
		return nil
	})
}

func (v *DomainView) readChannels(ctx context.Context, db *sql.DB) error {
	at := map[string]int{}
	for i, m := range v.Months {
		at[m.Month] = i
	}
	return warehouse.QueryEach(ctx, db, `SELECT snapshot_month, channel, 100 * share FROM sources_share
		WHERE domain = ? AND share IS NOT NULL ORDER BY snapshot_month, share DESC, channel`, []any{v.Domain}, func(rows *sql.Rows) error {
		var month string
		var s Share
		if err := rows.Scan(&month, &s.Channel, &s.Pct); err != nil {
			return err
		}
		if i, ok := at[month]; ok {
			v.Months[i].Channels = append(v.Months[i].Channels, s)
		}
		return nil
	})
}

func (v *DomainView) readCompetitors(ctx context.Context, db *sql.DB) error {
	return warehouse.QueryEach(ctx, db, `SELECT c.position, c.similar_domain, round(c.total_visits), c.global_rank,
			EXISTS (SELECT 1 FROM sites w WHERE w.snapshot_month = c.snapshot_month AND w.domain = lower(c.similar_domain))
		FROM similar_sites c WHERE c.domain = ? AND c.snapshot_month = ? ORDER BY c.position`, []any{v.Domain, v.Latest}, func(rows *sql.Rows) error {
		var c Competitor
		var visits sql.NullFloat64
		var rank sql.NullInt64
		if err := rows.Scan(&c.Position, &c.Domain, &visits, &rank, &c.OnWatchlist); err != nil {
			return err
		}
		c.Visits, c.Rank = floatPtr(visits), intPtr(rank)
		v.Competitors = append(v.Competitors, c)
		return nil
	})
}

// ChannelsText names the month's three largest channels with their shares, e.g.
// "organic_search 45.0%, direct 30.0%, referral 12.0%".
func (m DomainMonth) ChannelsText(share func(float64) string) string {
	var parts []string
	for i, s := range m.Channels {
		if i == 3 {
			break
		}
		parts = append(parts, s.Channel+" "+share(s.Pct/100))
	}
	return strings.Join(parts, ", ")
}
