package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"strings"

	"sitewatch/pipeline/config"
	"sitewatch/pipeline/discover"
	"sitewatch/pipeline/textout"
)

// discoverJSON is sections.discover of `status`: the watchlist lines `discover --add` or
// `schedule` (config discover:) added, found by their comment; null when there are none.
type discoverJSON struct {
	Added          []discoverAddedJSON `json:"added"`
	CreditsAMonth  int64               `json:"credits_a_month"` // what they cost together
	MonthlyBudget  int64               `json:"monthly_budget"`  // discover.monthly_budget (0 = schedule adds none)
	AddPerMonth    int64               `json:"add_per_month"`   // discover.add_per_month
	PendingFetches int                 `json:"pending"`         // added but not loaded in any month yet
}

type discoverAddedJSON struct {
	Domain  string `json:"domain"`
	Date    string `json:"date"`           // YYYY-MM-DD of the addition
	From    string `json:"from,omitempty"` // the month whose candidates it came from
	Line    int    `json:"line"`
	Fetched bool   `json:"fetched"` // loaded in some month since
}

func collectDiscover(ctx context.Context, db *sql.DB, cfg *config.Config) (any, error) {
	data, err := os.ReadFile(cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", cfg.Path, err)
	}
	lines := discover.AddedLines(data)
	if len(lines) == 0 {
		return (*discoverJSON)(nil), nil
	}
	j := &discoverJSON{CreditsAMonth: int64(len(lines)) * discover.CreditsPerDomain,
		MonthlyBudget: cfg.Discover.MonthlyBudget, AddPerMonth: cfg.Discover.AddPerMonth}
	for _, a := range lines {
		domain, err := config.NormalizeDomain(a.Domain)
		if err != nil {
			domain = a.Domain
		}
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sites WHERE domain = ?`, domain).Scan(&n); err != nil {
			return nil, fmt.Errorf("read sites: %w", err)
		}
		j.Added = append(j.Added, discoverAddedJSON{Domain: a.Domain, Date: a.Date, From: a.From, Line: a.Line, Fetched: n > 0})
		if n == 0 {
			j.PendingFetches++
		}
	}
	return j, nil
}

func printDiscoverStatus(w io.Writer, v any) error {
	j, _ := v.(*discoverJSON)
	if j == nil {
		return nil
	}
	items := make([]string, len(j.Added))
	for i, a := range j.Added {
		items[i] = a.Domain + " (" + a.Date
		if !a.Fetched {
			items[i] += ", not fetched yet"
		}
		items[i] += ")"
	}
	budget := "schedule adds none (discover: not set)"
	if j.AddPerMonth > 0 && j.MonthlyBudget > 0 {
		budget = fmt.Sprintf("schedule adds up to %s a month within %s credits a month", thousands(j.AddPerMonth), thousands(j.MonthlyBudget))
	}
	_, err := fmt.Fprintf(w, "discover: %s added to the watchlist, %s credits a month; %s: %s\n",
		textout.Plural(len(j.Added), "domain", "domains"), thousands(j.CreditsAMonth), budget, strings.Join(items, ", "))
	return err
}
