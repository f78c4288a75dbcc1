// Package fencesim holds the in-process fault simulation of the bucket lease and the answer
// log (issue 42): its tests run the real lease.Lease and answerlog.Writer of three machines
// against a fake bucket, with a model payer standing in for a run, under testing/synctest's
// fake clock, so thousands of seeded fault schedules run in seconds. The package has no code
// of its own: everything is in its tests (docs/sharing.md, "How it is tested").
package fencesim
