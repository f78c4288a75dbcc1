package discover

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"sitewatch/pipeline/config"
)

// Growth is what one Grow call decided and did.
type Growth struct {
	Month   string   // the complete month whose candidates were looked at
	Added   []string // domains appended to the watchlist, best first
	Why     string   // when nothing was added: why not, in words
	Monthly int64    // credits a month the domains discover added now cost in all
}

// GrowOptions are the config's discover: block and what Grow needs around it.
type GrowOptions struct {
	ConfigPath    string
	Watchlist     []string // normalized watchlist domains (left out of the candidates)
	Month         string   // the month just completed
	AddPerMonth   int
	MonthlyBudget int64
	MinVisits     int64 // discover.min_visits (0: DefaultMinVisits)
	Now           time.Time
	Getenv        func(string) string // for parsing the config file as read
}

// Grow appends to the config file the best candidates of a complete month, at most
// AddPerMonth and no more than keep every domain discover ever added (the lines carrying
// AddedComment) within MonthlyBudget credits a month. A month already grown from (a line
// "… from MONTH") is not grown again, so a retried or repeated run adds nothing twice. The
// file is written as `discover --add` writes it (Watchfile.Replace). It returns the file
// system's or the warehouse's error; nothing is written then.
func Grow(ctx context.Context, db *sql.DB, o GrowOptions) (*Growth, error) {
	g := &Growth{Month: o.Month}
	wf, err := ReadWatchfile(o.ConfigPath)
	if err != nil {
		return nil, fmt.Errorf("discover: read %s: %w", o.ConfigPath, err)
	}
	// The watchlist as the file holds it now (the user may have edited it since the run
	// started): a domain listed meanwhile is not added twice.
	cfg, err := config.Parse(o.ConfigPath, wf.Data, o.Getenv)
	if err != nil {
		return nil, fmt.Errorf("discover: %w", err)
	}
	watchlist := append(config.NewWatchlist(cfg).Domains, o.Watchlist...)
	before := AddedLines(wf.Data)
	g.Monthly = int64(len(before)) * CreditsPerDomain
	for _, a := range before {
		if a.From == o.Month {
			g.Why = fmt.Sprintf("already grown from %s (line %d)", o.Month, a.Line)
			return g, nil
		}
	}
	room := Affordable(o.AddPerMonth, o.MonthlyBudget-g.Monthly)
	if room <= 0 {
		g.Why = fmt.Sprintf("the %d domains discover added already cost %d of the %d credits of discover.monthly_budget", len(before), g.Monthly, o.MonthlyBudget)
		return g, nil
	}
	_, cands, err := Candidates(ctx, db, Query{Snapshot: o.Month, Top: room, Watchlist: watchlist, MinVisits: o.MinVisits})
	if err != nil {
		return nil, err
	}
	if len(cands) == 0 {
		g.Why = fmt.Sprintf("no candidate outside the watchlist with at least %d visits a month (discover.min_visits)", Query{MinVisits: o.MinVisits}.Floor())
		return g, nil
	}
	domains := make([]string, len(cands))
	for i, c := range cands {
		domains[i] = c.Domain
	}
	data, _, err := wf.Append(domains, o.Now, o.Month)
	if err == nil {
		err = wf.Replace(data)
	}
	if err != nil {
		return nil, fmt.Errorf("discover: add %d domains to %s: %w", len(domains), wf.Path, err)
	}
	g.Added = domains
	g.Monthly += int64(len(domains)) * CreditsPerDomain
	return g, nil
}
