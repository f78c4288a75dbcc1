package months

import (
	"fmt"
	"time"
)

// Fetchable reports whether the API may still serve month at now. The API's month turns some
// days into the next calendar month, so in November it serves October or November: a month
// before the previous calendar month is past, and so is one older than newest, a month the
// warehouse already holds data or runs of ("" when unknown).
func Fetchable(month, newest string, now time.Time) bool {
	if newest != "" && month < newest {
		return false
	}
	y, m, _ := now.UTC().Date()
	previous := time.Date(y, m-1, 1, 0, 0, 0, 0, time.UTC).Format("2006-01")
	return month >= previous
}

// FinishAdvice says what to do about month when it lacks data: `sitewatch run` while the API
// may still serve it, else that what it lacks cannot be fetched any more.
func FinishAdvice(month, newest string, now time.Time) string {
	if Fetchable(month, newest, now) {
		return fmt.Sprintf("run `sitewatch run` while the API still serves %s (it fetches only what is missing; nothing loaded is paid for twice)", month)
	}
	return fmt.Sprintf("%s is past: the API serves only its current month, so what %s lacks can no longer be fetched", month, month)
}
