package pipeline

import (
	"context"
	"database/sql"

	"sitewatch/pipeline/discover"
	"sitewatch/pipeline/notify"
)

// growWatchlist grows the watchlist after a complete month when the caller asked for it
// (`schedule`, RunOptions.GrowWatchlist) and the config's discover: block is on: the month's
// best candidates (pipeline/discover), within the budget, appended to the config file. It runs
// once the run has loaded everything and before its digest is posted, so the run's own plan
// never changes and the digest names what was added; the next month's run fetches them. A
// failure is logged, never the run's failure.
func (r *runState) growWatchlist(ctx context.Context, db *sql.DB, runErr error) {
	d := r.cfg.Discover
	if !r.opts.GrowWatchlist || !d.On() || runErr != nil || r.sum.Snapshot == "" ||
		(r.sum.Status != StatusComplete && r.sum.Status != StatusUpToDate) {
		return
	}
	g, err := discover.Grow(ctx, db, discover.GrowOptions{
		ConfigPath: r.cfg.Path, Watchlist: r.wl.Domains, Month: r.sum.Snapshot,
		AddPerMonth: int(d.AddPerMonth), MonthlyBudget: d.MonthlyBudget, MinVisits: d.MinVisits, Now: r.env.Now(), Getenv: r.env.Getenv,
	})
	if err != nil {
		r.env.Logger.Error("discover: could not grow the watchlist; the next complete month tries again", "err", err)
		return
	}
	if len(g.Added) == 0 {
		r.env.Logger.Info("discover: watchlist not grown", "snapshot", g.Month, "why", g.Why)
		return
	}
	r.sum.noteGrowth(g)
	r.env.Logger.Info("discover: watchlist grown; the next month's run fetches them", "snapshot", g.Month,
		"added", g.Added, "credits_a_month", g.Monthly, "config", r.cfg.Path)
}

// growthEvent puts the run's watchlist growth into its webhook event.
func growthEvent(ev *notify.Event, sum *Summary) {
	if sum.Growth != nil {
		ev.Added, ev.AddedMonthly = sum.Growth.Added, sum.Growth.Monthly
	}
}
