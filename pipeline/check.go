package pipeline

import (
	"errors"
)

// ErrNotEnoughCredits reports a wallet (or marketplace quota) that does not cover the next
// run within the reserve and the per-run cap.
var ErrNotEnoughCredits = errors.New("not enough credits for the next run")

// NeededNow is what a run started now spends: what the month held lacks; 1 credit when it is
// complete (the answer that shows the API still serves it: up to date); a whole month when
// the warehouse holds none.
func NeededNow(plan *Plan) int {
	switch {
	case plan.Snapshot == "":
		return plan.FullCredits
	case plan.HeldComplete:
		return 1
	}
	return plan.Credits()
}
