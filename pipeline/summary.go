package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"sitewatch/pipeline/config"
	"sitewatch/pipeline/model"
)

// Run statuses recorded in the runs table.
const (
	StatusRunning        = "running"
	StatusComplete       = "complete"
	StatusUpToDate       = "up_to_date"
	StatusStoppedCredits = "stopped_credits"
	StatusUnauthorized   = "unauthorized"
	StatusFailed         = "failed"
	StatusInterrupted    = "interrupted"
	StatusMonthMismatch  = "month_mismatch"
	StatusMonthTurned    = "month_turned"
	StatusAbandoned      = "abandoned" // set by the warehouse for a run whose process died
)

// ErrIncomplete reports a run that attempted everything but left domains unloaded.
var ErrIncomplete = errors.New("snapshot incomplete")

// ErrNothingToFetch reports a watchlist with no domain that can be sent.
var ErrNothingToFetch = errors.New("no watchlist entry is a host name that can be sent")

// MonthMismatchError is `run --snapshot M` against an API that serves another month: the
// API serves only its current month, so M cannot be fetched. Nothing was stored.
type MonthMismatchError struct {
	Want, Served string
}

func (e *MonthMismatchError) Error() string {
	return fmt.Sprintf("the API serves %s, not %s: nothing was stored under %s (past months cannot be fetched; the API serves only its current month); run without --snapshot to load %s",
		e.Served, e.Want, e.Want, e.Served)
}

// MonthTurnedError reports that the API moved to a new month during the run: answers were
// stored under their own months, From stays incomplete, and a rerun completes To.
type MonthTurnedError struct {
	From, To string
}

func (e *MonthTurnedError) Error() string {
	return fmt.Sprintf("the API turned from %s to %s during the run: answers are stored under their own months, %s stays incomplete; rerun `sitewatch run` to complete %s",
		e.From, e.To, e.From, e.To)
}

// Summary is what one run did.
type Summary struct {
	RunID            string
	Snapshot         string // the month the API's data is for ("" when no answer told it)
	Status           string
	DomainsTotal     int
	DomainsLoaded    int
	DomainsRejected  int // by the API (400), in this snapshot
	Requests         int
	RateLimited      int
	CreditsSpent     int
	CreditsRemaining int64 // -1 unknown
	Duration         time.Duration
	Watchlist        *config.Watchlist
	// CompleteSince is when Snapshot was first complete, for an up-to-date run.
	CompleteSince time.Time
	// TurnedTo is the month the API moved to during the run ("" if it did not),
	// TurnedLoaded how many domains of it are loaded, and TurnedAnswers how many of its
	// answers are stored (paid, kept: a domain is loaded only with both of its answers).
	TurnedTo      string
	TurnedLoaded  int
	TurnedAnswers int
	// Published says what the run uploaded to publish.url; PublishError why it could not.
	Published, PublishError string
	APIRejections           map[string]string // domain -> code
	Failures                []model.FetchError
	// Sources is what each credit source paid, in spend order (spend.go).
	Sources []SourceSpend
}

// statusOf maps the client's stop reason to a run status.
func statusOf(stopErr error) string {
	var turned *MonthTurnedError
	switch {
	case stopErr == nil:
		return StatusComplete
	case errors.As(stopErr, &turned):
		return StatusMonthTurned
	case IsCreditStop(stopErr):
		return StatusStoppedCredits
	case errors.Is(stopErr, model.ErrUnauthorized):
		return StatusUnauthorized
	case errors.Is(stopErr, context.Canceled):
		return StatusInterrupted
	default:
		return StatusFailed
	}
}

// IsCreditStop says whether err stops a run (or a check) for credits: exit 3.
func IsCreditStop(err error) bool {
	return errors.Is(err, model.ErrOutOfCredits) || errors.Is(err, model.ErrCreditReserve) || errors.Is(err, model.ErrRunBudget) ||
		errors.Is(err, ErrNotEnoughCredits)
}

// The run writes its Summary only through the methods below, each named for what happened.

// settle sets the run's status.
func (s *Summary) settle(status string) { s.Status = status }

// noteMonth names the month the run's data is for (or the --snapshot a mismatch named).
func (s *Summary) noteMonth(month string) { s.Snapshot = month }

// noteCompleteSince records when the month an up-to-date run found was first complete.
func (s *Summary) noteCompleteSince(since time.Time) { s.CompleteSince = since }

// noteTurn records the month the API turned to and reports whether it is the first turn.
func (s *Summary) noteTurn(to string) bool {
	if s.TurnedTo != "" {
		return false
	}
	s.TurnedTo = to
	return true
}

// noteTurnedMonth counts what the month the API turned to holds.
func (s *Summary) noteTurnedMonth(st *model.SnapshotState) {
	s.TurnedLoaded, s.TurnedAnswers = st.LoadedCount(), storedAnswers(st)
}

// noteFailure adds a call that failed after its retries.
func (s *Summary) noteFailure(fe model.FetchError) { s.Failures = append(s.Failures, fe) }

// noteSpend records what the fetcher made and spent, in all and per credit source.
func (s *Summary) noteSpend(stats model.Stats, sources []SourceSpend) {
	s.Requests, s.RateLimited = int(stats.Requests), int(stats.RateLimited)
	s.CreditsSpent, s.CreditsRemaining = int(stats.CreditsSpent), stats.CreditsRemaining
	s.Sources = sources
}

// noteOutcome records what the run's month holds for the watchlist.
func (s *Summary) noteOutcome(out *model.Outcome) {
	s.APIRejections = out.Rejected
	s.DomainsLoaded, s.DomainsRejected = out.Loaded, len(out.Rejected)
}

// noteDuration records how long the run took.
func (s *Summary) noteDuration(d time.Duration) { s.Duration = d }

// notePublished records what the run's publish uploaded and, when not "", why it failed.
func (s *Summary) notePublished(published, failure string) {
	s.Published = published
	if failure != "" {
		s.PublishError = failure
	}
}

// redactPublishError removes the run's secrets from the publish error.
func (s *Summary) redactPublishError(redact func(string) string) {
	s.PublishError = redact(s.PublishError)
}
