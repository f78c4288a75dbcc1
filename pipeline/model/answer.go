package model

import (
	"time"

	"sitewatch/schema"
)

// Raw is one charged, successful API response to land. Domain is "" for country-metadata.
type Raw struct {
	Endpoint  schema.Endpoint
	Domain    string
	Body      []byte
	FetchedAt time.Time

	// RunID is the run that fetched the body. When set, Store writes the answer's run_calls
	// ledger row (Credits) in the same transaction as the body, and records the body's run in
	// raw_responses.run_id.
	RunID   string
	Credits int64
	// Source is the credit source that paid for the body (run_calls.source).
	Source string
	// Refresh marks an answer of `run --refresh`: the domain is loaded only from two bodies of
	// the same RunID, never a new one beside an older partner (see Store).
	Refresh bool

	// The decoded body, when the caller already decoded it (the client does, once); Store
	// decodes Body only when the field of its endpoint is nil (rebuild, older callers).
	Overview  *schema.SiteOverview
	Similar   *schema.SiteSimilar
	Countries *schema.CountryMetadata
}
