// Package model is the vocabulary the core (package pipeline) owns and its adapters speak: an
// answer to land (Raw), what a month holds (SnapshotState, Outcome), the credit ledger
// (Charge, the Outcome* words), the runs and fetch_errors rows (RunRecord, FetchError), the
// quality findings and the tables a month is published and restored as; and the API's words
// (api.go): a call (Request), its answer (Result), a fetcher's counters (Stats), how a call
// fails (Error, the sentinels) and which failures stop a run (IsStop). The core declares its
// Store and Fetcher ports in these words; the warehouse, the client (pipeline/atlas), the
// credit sources, the bucket sync, publish and the fakes implement or read them. It imports
// nothing of the project but schema.
//
// It is not named "domain", the usual name for such a package: here a domain is a web site
// (a `domain` variable is on every other line), and the two would shadow each other.
package model
