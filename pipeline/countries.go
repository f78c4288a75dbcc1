package pipeline

// countriesAlone says country-metadata should go alone before the other calls of the plan:
// when the credits known now may not cover every call, a credit stop could otherwise leave the
// month without the countries every report joins to (calls in flight are admitted in any
// order, so being first in the list does not make it first paid). When they cover the plan,
// it goes out with the rest and the run saves a round trip.
func (r *runState) countriesAlone() bool {
	if !r.plan.Countries || r.plan.Credits() < 2 {
		return false
	}
	return r.mayNotCover(int64(r.plan.Credits()))
}

// mayNotCover says whether the credits known now may not cover need more calls: the run's
// cap, or every source's usable balance (balance minus reserve; unknown counts as short).
func (r *runState) mayNotCover(need int64) bool {
	if lim := r.cfg.API.MaxCreditsPerRun; lim > 0 && r.client.Stats().CreditsSpent+need > lim {
		return true
	}
	reserve := map[string]int64{}
	for _, sc := range r.cfg.Sources() {
		reserve[sc.Name] = sc.MinCredits
	}
	spend := spendBySource(r.client)
	var usable int64
	for _, s := range spend {
		if s.Remaining < 0 {
			return true // not told yet: be safe
		}
		usable += max(s.Remaining-reserve[s.Name], 0)
	}
	return len(spend) == 0 || usable < need
}
