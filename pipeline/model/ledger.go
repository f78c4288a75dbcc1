package model

import (
	"time"

	"sitewatch/schema"
)

// Outcomes of a charged answer in the run_calls ledger.
const (
	OutcomeStored     = "stored"     // body stored (its domain loaded once both bodies are in)
	OutcomeUnloadable = "unloadable" // body stored; the domain's rows cannot be derived from it
	OutcomeRefused    = "refused"    // body not stored: it did not decode (legacy v1, drift, not JSON)
)

// Charge is one charged answer that Store did not receive (a body the caller refused itself,
// e.g. one that contained a secret), for the run_calls ledger.
type Charge struct {
	RunID, SnapshotMonth, Domain string
	Endpoint                     schema.Endpoint
	HTTPStatus                   int   // 0 = 200
	Credits                      int64 // credits the server charged
	FetchedAt                    time.Time
	Outcome                      string // "" = OutcomeRefused; a short reason word otherwise
	Source                       string // the credit source that paid ("" = not named: NULL)
}

// DisplayDomain names a raw row's domain in messages: "(countries)" for country-metadata.
func DisplayDomain(d string) string {
	if d == "" {
		return "(countries)"
	}
	return d
}
