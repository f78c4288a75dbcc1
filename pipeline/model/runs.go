package model

import (
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
