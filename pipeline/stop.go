package pipeline

import (
	"errors"
	"fmt"
	"log/slog"
)

// maxFailStreak is how many calls in a row may fail (after retries) before the run stops.
const maxFailStreak = 10

// ErrUpstreamFailing stops a run whose calls keep failing.
var ErrUpstreamFailing = errors.New("the API keeps failing")

// stopper holds the run's stop rules: the first cause that stopped the fetch (a storage
// failure, the upstream failing, a month turn, a first answer naming no month) and the streak
// of calls that failed after their retries. Every stop goes through fail and every reader
// through cause, so the five paths that stop a run agree on which one won.
type stopper struct {
	first  error
	streak int
	fetch  interface{ Stop(reason error) } // the fetcher each stop stops
	logger *slog.Logger
	told   func(RunStopping) // the run's observer (nil: none)
}

// fail stops the run for err (the first such error wins): no new call starts.
func (s *stopper) fail(err error) {
	if s.first != nil {
		return
	}
	s.first = err
	s.logger.Error("stopping the run", "err", err)
	if s.told != nil {
		s.told(RunStopping{Cause: err})
	}
	s.fetch.Stop(err)
}

// cause is the first error fail was given (nil: the run was not stopped by its own rules).
func (s *stopper) cause() error { return s.first }

// landed ends a streak of failed calls.
func (s *stopper) landed() { s.streak = 0 }

// callFailed counts a call that failed after its retries: many in a row means the upstream is
// down, and going on would only burn time (and, for broken 200s, credits).
func (s *stopper) callFailed(cause error) {
	if s.streak++; s.streak >= maxFailStreak {
		s.fail(fmt.Errorf("%w: %d calls in a row failed after their retries (last: %v); try again later", ErrUpstreamFailing, s.streak, cause))
	}
}
