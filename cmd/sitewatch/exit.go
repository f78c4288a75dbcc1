package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"time"

	"sitewatch/pipeline"
	"sitewatch/pipeline/atlas"
	"sitewatch/pipeline/config"
)

// Exit codes of `sitewatch run` (shared/CONTRACT.md).
const (
	ExitOK           = 0
	ExitFailed       = 1
	ExitUsage        = 2
	ExitCredits      = 3
	ExitUnauthorized = 4
)

// UsageError is a bad command line; nothing was called.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// ExitCode maps a command's error to its exit code.
func ExitCode(err error) int {
	var ce *config.Error
	var ue *UsageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ce), errors.As(err, &ue):
		return ExitUsage
	case pipeline.IsCreditStop(err):
		return ExitCredits
	case errors.Is(err, atlas.ErrUnauthorized):
		return ExitUnauthorized
	default:
		return ExitFailed
	}
}

// advice says what the user does next, per outcome.
func advice(err error, snapshot string) string {
	switch ExitCode(err) {
	case ExitCredits:
		return fmt.Sprintf("stopped for credits: top up the wallet (or raise max_credits_per_run / lower min_credits), then rerun `sitewatch run --snapshot %s`; loaded domains are not fetched again", snapshot)
	case ExitUnauthorized:
		return "the API rejected the key: check ATLAS_API_KEY (and, in marketplace mode, ATLAS_MARKETPLACE_KEY and api.marketplace_host)"
	case ExitFailed:
		return fmt.Sprintf("what was loaded stays loaded; rerun `sitewatch run --snapshot %s` to fetch only what is missing", snapshot)
	}
	return ""
}

// PrintSummary writes the end-of-run table.
func PrintSummary(w io.Writer, s *pipeline.Summary, runErr error) {
	credits := "unknown"
	if s.CreditsRemaining >= 0 {
		credits = fmt.Sprint(s.CreditsRemaining)
	}
	fmt.Fprintf(w, "snapshot %s — run %s: %s\n", s.Snapshot, s.RunID, s.Status)
	printRows(w, [][2]string{
		{"domains loaded", fmt.Sprintf("%d of %d", s.DomainsLoaded, s.DomainsTotal)},
		{"rejected by the API (400)", fmt.Sprint(s.DomainsRejected)},
		{"rejected before sending", fmt.Sprint(len(s.Watchlist.Rejected))},
		{"requests", fmt.Sprint(s.Requests)},
		{"answered 429", fmt.Sprint(s.RateLimited)},
		{"credits spent", fmt.Sprint(s.CreditsSpent)},
		{"credits left", credits},
		{"duration", s.Duration.Round(100 * time.Millisecond).String()},
	})
	if s.DataMonth != "" {
		fmt.Fprintf(w, "  note: the API's data is for %s (meta.snapshot_date) but is stored as snapshot %s; "+
			"the API serves only its current month, so pass --snapshot %s unless this is intended\n", s.DataMonth, s.Snapshot, s.DataMonth)
	}
	for _, r := range s.Watchlist.Rejected {
		fmt.Fprintf(w, "  not sent: %q (line %d): %s\n", r.Input, r.Line, r.Reason)
	}
	for _, d := range slices.Sorted(maps.Keys(s.APIRejections)) {
		fmt.Fprintf(w, "  rejected by the API: %s (%s)\n", d, s.APIRejections[d])
	}
	failures := s.Failures
	sort.SliceStable(failures, func(i, j int) bool { return failures[i].Domain < failures[j].Domain })
	for i, f := range failures {
		if i == 10 {
			fmt.Fprintf(w, "  … and %d more failures (SELECT * FROM fetch_errors WHERE run_id = '%s')\n", len(failures)-10, s.RunID)
			break
		}
		fmt.Fprintf(w, "  failed: %s %s: %s\n", pipeline.DisplayDomain(f.Domain), f.Endpoint, f.Message)
	}
	if runErr != nil {
		fmt.Fprintf(w, "error: %v\n", runErr)
		if a := advice(runErr, s.Snapshot); a != "" {
			fmt.Fprintf(w, "next: %s\n", a)
		}
	}
}

// LogLevel reads SITEWATCH_LOG (debug, info, warn, error; default info).
func LogLevel(getenv func(string) string) slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(getenv("SITEWATCH_LOG"))); err != nil {
		return slog.LevelInfo
	}
	return l
}
