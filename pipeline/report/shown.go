package report

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"sitewatch/pipeline/changes"
)

// shownDomains are the domains the page draws one by one: the topN most visited (the
// per-domain sections) and every domain with a panel (needs attention, largest falls),
// in that order, each once.
func shownDomains(d *data) []string {
	seen := map[string]bool{}
	var out []string
	add := func(dom string) {
		if !seen[dom] {
			seen[dom] = true
			out = append(out, dom)
		}
	}
	for _, s := range topSites(d) {
		add(s.Domain)
	}
	for _, dom := range panelDomains(d) {
		add(dom)
	}
	return out
}

// flaggedInPage is how many domains of the needs-attention list the page draws one by one (a
// line, a panel, a row of All domains): the list grows with the watchlist (1,128 domains at
// 100,000, 11,151 at 1,000,000, whose panels alone made 46.6 MB of a 59 MB page), the page must
// not. The rest are counted, with the query listing every row, and carry their place in the
// CSV beside the page.
const flaggedInPage = 1200

// flaggedDomains are the domains of the needs-attention list the page draws, in its order: the
// first flaggedInPage.
func flaggedDomains(d *data) []string {
	if d.Attention == nil {
		return nil
	}
	n := min(len(d.Attention.Domains), flaggedInPage)
	out := make([]string, 0, n)
	for _, a := range d.Attention.Domains[:n] {
		out = append(out, a.Domain)
	}
	return out
}

// flaggedOmitted is how many domains needs attention names that the page does not draw.
func flaggedOmitted(d *data) int {
	if d.Attention == nil {
		return 0
	}
	return max(len(d.Attention.Domains)-flaggedInPage, 0)
}

// shownIn is an IN list of placeholders for the shown domains and its arguments, the snapshot
// first: "?, ?, ?" and [snapshot, a.com, b.com, c.com]. With no shown domain the list is
// NULL, which matches nothing.
func (d *data) shownIn() (string, []any) {
	if len(d.Shown) == 0 {
		return "NULL", []any{d.Snapshot}
	}
	args := make([]any, 0, len(d.Shown)+1)
	args = append(args, d.Snapshot)
	for _, dom := range d.Shown {
		args = append(args, dom)
	}
	return strings.TrimSuffix(strings.Repeat("?, ", len(d.Shown)), ", "), args
}

// loadCountryWeights sums every domain's country shares per country in DuckDB and keeps the
// maxGeoColumns heaviest: the geography table's columns.
func (d *data) loadCountryWeights(ctx context.Context, db *sql.DB) error {
	err := each(ctx, db, `
		SELECT country_code, any_value(coalesce(country_name, country_code)), sum(share) AS weight
		FROM top_countries WHERE snapshot_month = ? AND share IS NOT NULL
		GROUP BY country_code ORDER BY weight DESC, country_code LIMIT ?`, []any{d.Snapshot, maxGeoColumns}, func(r *sql.Rows) error {
		var c countryShare
		if err := r.Scan(&c.Code, &c.Name, &c.Share); err != nil {
			return err
		}
		d.CountryWeight = append(d.CountryWeight, c)
		return nil
	})
	if err != nil {
		return fmt.Errorf("sum top_countries per country: %w", err)
	}
	return nil
}

// loadAITotals sums every domain's AI platform shares per platform in DuckDB: the order of
// the AI referrals chart's series.
func (d *data) loadAITotals(ctx context.Context, db *sql.DB) error {
	d.AITotals = map[string]float64{}
	err := each(ctx, db, `
		SELECT platform, sum(share_pct) FROM ai_platforms
		WHERE snapshot_month = ? AND share_pct IS NOT NULL GROUP BY platform`, []any{d.Snapshot}, func(r *sql.Rows) error {
		var p string
		var total float64
		if err := r.Scan(&p, &total); err != nil {
			return err
		}
		d.AITotals[p] = total
		return nil
	})
	if err != nil {
		return fmt.Errorf("sum ai_platforms per platform: %w", err)
	}
	return nil
}

// attentionLoader reads the needs-attention list with the config's settings, reusing the one
// the digest read with the same settings (the view costs seconds). A warehouse without the
// view gets a note instead of the list.
func (d *data) attentionLoader(s changes.AttentionSettings) func(context.Context, *sql.DB) error {
	return func(ctx context.Context, db *sql.DB) error {
		if dg := d.Digest; dg != nil && dg.Attention != nil && dg.Attention.Month == d.Snapshot && dg.Attention.Settings == s.Resolved() {
			d.Attention = dg.Attention
			return nil
		}
		a, err := changes.ReadAttention(ctx, db, d.Snapshot, s)
		switch {
		case errors.Is(err, changes.ErrNoAttentionView):
			d.AttentionNote = err.Error()
			return nil
		case err != nil:
			return err
		}
		d.Attention = a
		return nil
	}
}
