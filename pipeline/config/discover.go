package config

// DiscoverConfig is the optional discover section of domains.yaml: `schedule` grows the
// watchlist after each complete month with the candidates of `sitewatch discover`
// (pipeline/discover), within a monthly budget. Off unless both keys are above 0.
type DiscoverConfig struct {
	// AddPerMonth bounds the domains added after one complete month (0 = off).
	AddPerMonth int64
	// MonthlyBudget bounds what every domain discover added (the lines carrying its comment)
	// may cost together each month, in credits (2 a domain; 0 = off).
	MonthlyBudget int64
	// MinVisits is the size floor of a candidate, in visits a month (0 = the default of
	// pipeline/discover, 5,000): `discover`, its --add, the growth of `schedule` and the
	// "worth tracking" lists leave smaller candidates out.
	MinVisits int64
}

// discoverKeys are the keys of the discover section.
var discoverKeys = []string{"add_per_month", "monthly_budget", "min_visits"}

// maxAddPerMonth catches a typo (500 instead of 5) before it grows the watchlist by hundreds.
const maxAddPerMonth = 100

// On says whether `schedule` grows the watchlist.
func (d DiscoverConfig) On() bool { return d.AddPerMonth > 0 && d.MonthlyBudget > 0 }

func (c *Config) validateDiscover(bad func(key, format string, args ...any)) {
	if n := c.Discover.AddPerMonth; n < 0 || n > maxAddPerMonth {
		bad("discover.add_per_month", "%d is out of range: use 0 (off) to %d domains a month", n, maxAddPerMonth)
	}
	if c.Discover.MonthlyBudget < 0 {
		bad("discover.monthly_budget", "%d is out of range: use 0 (off) or more credits a month (2 a domain)", c.Discover.MonthlyBudget)
	}
	if c.Discover.MinVisits < 0 {
		bad("discover.min_visits", "%d is negative; give a number of visits a month (0 = the default, 5000)", c.Discover.MinVisits)
	}
}
