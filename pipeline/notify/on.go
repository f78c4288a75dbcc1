package notify

import (
	"sitewatch/pipeline/config"
	"slices"
)

// The kinds of outcome notify.on selects (several outcomes share one kind): the config's
// vocabulary (pipeline/config validates notify.on with it), named here as the notifier uses it.
const (
	OnComplete    = config.NotifyOnComplete
	OnUpToDate    = config.NotifyOnUpToDate
	OnFailed      = config.NotifyOnFailed
	OnCredits     = config.NotifyOnCredits
	OnMonthTurned = config.NotifyOnMonthTurned
)

// Kinds are the values notify.on accepts, in the order messages list them.
var Kinds = config.NotifyKinds

// DefaultOn is notify.on when the config leaves it out (config.NotifyDefaultOn).
var DefaultOn = config.NotifyDefaultOn

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
func CheckOn(on []string) error { return config.CheckNotifyOn(on) }

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
