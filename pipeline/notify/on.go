package notify

import (
	"fmt"
	"slices"
	"strings"
)

// The kinds of outcome notify.on selects (several outcomes share one kind).
const (
	OnComplete    = "complete"     // the month is complete
	OnUpToDate    = "up_to_date"   // a retry found the month still served and complete: nothing new
	OnFailed      = "failed"       // failed, unauthorized, interrupted, abandoned, month_mismatch
	OnCredits     = "credits"      // stopped for credits (402, the reserve, the cap)
	OnMonthTurned = "month_turned" // the API turned to a new month during the run
)

// Kinds are the values notify.on accepts, in the order messages list them.
var Kinds = []string{OnComplete, OnUpToDate, OnFailed, OnCredits, OnMonthTurned}

// DefaultOn is notify.on when the config leaves it out: every outcome a person must act on or
// wants to hear of, but not up_to_date, which `schedule` produces every retry_every while the
// API has not turned (noise in a chat channel).
var DefaultOn = []string{OnComplete, OnFailed, OnCredits, OnMonthTurned}

// Kind is the notify.on value that selects outcome. An outcome without a kind of its own
// (including one added later) counts as failed, so it is never silently dropped.
func Kind(outcome string) string {
	switch outcome {
	case OutcomeComplete:
		return OnComplete
	case OutcomeUpToDate:
		return OnUpToDate
	case OutcomeStoppedCredits:
		return OnCredits
	case OutcomeMonthTurned:
		return OnMonthTurned
	}
	return OnFailed
}

// CheckOn returns an error naming the first value of on that is not one of Kinds.
func CheckOn(on []string) error {
	for _, k := range on {
		if !slices.Contains(Kinds, k) {
			return fmt.Errorf("%q is not an outcome to notify on (use %s)", k, strings.Join(Kinds, ", "))
		}
	}
	return nil
}

// Only returns n posting only the outcomes whose Kind is in on; nil on means DefaultOn. A nil
// Notifier stays nil.
func (n *Notifier) Only(on []string) *Notifier {
	if n == nil {
		return nil
	}
	if on == nil {
		on = DefaultOn
	}
	n.on = slices.Clone(on)
	return n
}

// wants reports whether notify.on selects outcome.
func (n *Notifier) wants(outcome string) bool {
	return slices.Contains(n.on, Kind(outcome))
}
