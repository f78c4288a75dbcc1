// Package model is the vocabulary the core (package pipeline) owns and its adapters speak: an
// answer to land (Raw), what a month holds (SnapshotState, Outcome), the credit ledger
// (Charge, the Outcome* words), the runs and fetch_errors rows (RunRecord, FetchError), the
// quality findings and the tables a month is published and restored as. The core declares its
// Store port in these words; the warehouse, the bucket sync, publish and the fakes implement
// or read them. It imports nothing of the project but schema.
//
// It is not named "domain", the usual name for such a package: here a domain is a web site
// (a `domain` variable is on every other line), and the two would shadow each other.
package model
