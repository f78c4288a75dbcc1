package model

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"sitewatch/schema"
)

// RunRecord is one row of the runs table.
type RunRecord struct {
	RunID, SnapshotMonth string
	StartedAt            time.Time
	FinishedAt           *time.Time
	Status               string // running | complete | stopped_credits | failed | unauthorized | interrupted | up_to_date | abandoned

	DomainsTotal, DomainsLoaded, DomainsRejected, Requests, CreditsSpent, RateLimited int
	CreditsRemaining                                                                  *int64
	Message                                                                           string
	// CreditsBySource is runs.credits_by_source: the JSON object of what each credit source
	// was charged ("" is NULL; CreditsBySourceJSON builds it).
	CreditsBySource string
}

// FetchError is one row of fetch_errors: a domain and endpoint that failed in a run.
type FetchError struct {
	RunID, SnapshotMonth, Domain string
	Endpoint                     schema.Endpoint
	HTTPStatus                   int
	Code, Message                string
	OccurredAt                   time.Time
}

// SourceSpend is what one credit source paid in a run and what it has left.
type SourceSpend struct {
	Name      string
	Credits   int64 // credits it was charged in this run
	Remaining int64 // its last known balance or quota; -1 unknown
}

// SourceCredits is what one credit source was charged in a run (runs.credits_by_source).
type SourceCredits struct {
	Name    string
	Credits int64
}

// CreditsBySourceJSON renders the spend of a run by source as the JSON object of
// runs.credits_by_source, keys in the order given (the spend order), e.g.
// {"marketplace":100,"direct":201}; "" (NULL) for none. encoding/json would sort the keys.
func CreditsBySourceJSON(spend []SourceCredits) string {
	if len(spend) == 0 {
		return ""
	}
	parts := make([]string, len(spend))
	for i, s := range spend {
		name, _ := json.Marshal(s.Name) // a string always marshals
		parts[i] = fmt.Sprintf("%s:%d", name, s.Credits)
	}
	return "{" + strings.Join(parts, ",") + "}"
}
