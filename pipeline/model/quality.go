package model

import (
	"time"
)

// Severities of quality_checks rows.
const (
	SeverityError = "error" // a hard rule is broken: values out of range, duplicate keys
	SeverityWarn  = "warn"  // suspicious: a share sum off, a history gap, a visits jump
	SeverityOK    = "ok"    // the check ran on the table and found nothing
)

// QualityFinding is one row of quality_checks.
type QualityFinding struct {
	SnapshotMonth string
	Check         string
	Table         string
	Domain        string // "" on an ok row: the whole snapshot passed
	Observed      string
	Expected      string
	Severity      string   // SeverityError, SeverityWarn or SeverityOK
	ObservedValue *float64 // nil when the finding is not one number
	CheckedAt     time.Time
}
