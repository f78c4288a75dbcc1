package model

// Outcome is what a month holds for a watchlist, as a run's summary reports it.
type Outcome struct {
	Loaded     int               // watchlist domains whose rows are in the derived tables
	Rejected   map[string]string // watchlist domains not loaded whose latest answer was a 400 -> its code
	Unloadable int               // watchlist domains with both bodies stored that did not load
	// AnyStored says whether the month holds any answer (of any domain, or country-metadata).
	AnyStored       bool
	CountriesLoaded bool
}
