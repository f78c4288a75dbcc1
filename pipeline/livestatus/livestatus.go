// Package livestatus keeps a small JSON progress file beside the warehouse while a run holds
// it, so `sitewatch status` (or any script) can watch the run from outside: DuckDB lets no
// other process open the warehouse while a run writes to it.
package livestatus

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"sitewatch/pipeline/atomicfile"
)

// States of the file.
const (
	StateRunning = "running" // the run is in progress; refreshed about every second
	StateFinal   = "final"   // the run ended; Outcome says how
)

// Status is the content of the progress file. Field names are part of the output of
// `sitewatch status --format json`; add fields, never rename one.
type Status struct {
	RunID        string    `json:"run_id"`
	Month        string    `json:"month"`             // the snapshot month, YYYY-MM
	State        string    `json:"state"`             // running | final
	Outcome      string    `json:"outcome,omitempty"` // the run's status when final
	Message      string    `json:"message,omitempty"` // the first error, or why it stopped
	Loaded       int       `json:"loaded"`            // domains of the month loaded so far
	Total        int       `json:"total"`             // domains on the watchlist
	Requests     int64     `json:"requests"`          // HTTP attempts of this run
	RateLimited  int64     `json:"rate_limited"`      // 429 answers of this run
	CreditsSpent int64     `json:"credits_spent"`     // by this run
	CreditsLeft  *int64    `json:"credits_left"`      // last known wallet; null unknown
	Rate         float64   `json:"rate_per_second"`   // requests per second since the start
	ETASeconds   *float64  `json:"eta_seconds"`       // null when unknown or final
	StartedAt    time.Time `json:"started_at"`
	UpdatedAt    time.Time `json:"updated_at"`
	PID          int       `json:"pid"`
	Host         string    `json:"host"`
}

// Path is the progress file of the warehouse at duckdbPath: "<duckdbPath>.run.json".
func Path(duckdbPath string) string { return duckdbPath + ".run.json" }

// Write replaces the file at path with s atomically (a temporary sibling renamed over it), so
// a reader sees the old or the new content, never a mix. It fills PID and Host when they are
// zero.
func Write(path string, s Status) error {
	if s.PID == 0 {
		s.PID = os.Getpid()
	}
	if s.Host == "" {
		s.Host, _ = os.Hostname()
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("live status: encode run %s: %w", s.RunID, err)
	}
	b = append(b, '\n')
	err = atomicfile.WriteFile(path, b, 0o644)
	if err != nil {
		return fmt.Errorf("live status: %w", err)
	}
	return nil
}

// ErrNoRun is returned by Read when no progress file exists: no run has started since the
// warehouse was created, or the file was removed.
var ErrNoRun = errors.New("no run progress file")

// Read reads the progress file at path. A missing file is ErrNoRun.
func Read(path string) (*Status, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("live status %s: %w", path, ErrNoRun)
	}
	if err != nil {
		return nil, fmt.Errorf("live status: %w", err)
	}
	var s Status
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("live status %s is not a sitewatch progress file (%v); remove it, the next run writes a new one", path, err)
	}
	return &s, nil
}

// Alive reports whether the process that wrote s may still be running: true when its PID
// exists on this host and the machine has not rebooted since the file's last update (after a
// power cut the PID may belong to another process). On another host the PID cannot be
// checked, so Alive reports true when the file was updated within StaleAfter. A final status
// is never alive.
func (s *Status) Alive() bool {
	if s == nil || s.State != StateRunning {
		return false
	}
	if !s.OnThisHost() {
		return !s.Stale(time.Now())
	}
	if boot, ok := bootTime(); ok && boot.After(s.UpdatedAt) {
		return false
	}
	return pidAlive(s.PID)
}

// OnThisHost reports whether s was written on this machine, where its PID can be checked.
func (s *Status) OnThisHost() bool {
	host, _ := os.Hostname()
	return s.Host == "" || s.Host == host
}

// Stale reports whether a running file has gone unrefreshed for StaleAfter at now: its run is
// stopped (SIGSTOP), hung, or dead. A final file is never stale.
func (s *Status) Stale(now time.Time) bool {
	return s != nil && s.State == StateRunning && now.Sub(s.UpdatedAt) > StaleAfter
}

// StaleAfter is how old a running file may be before a reader calls it stale: the run
// refreshes it about every second.
const StaleAfter = 30 * time.Second
