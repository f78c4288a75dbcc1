package pipeline

import (
	"context"
	"database/sql"
	"fmt"

	"sitewatch/pipeline/notify"
	"sitewatch/pipeline/textout"
	"sitewatch/pipeline/warehouse"
	"sitewatch/schema"
)

// describeMonth gives ev, an outcome that did not complete a month, the month and what it holds
// now. A run that failed before any answer named the month (a refused connection, a 404 from
// a wrong base URL) reports the newest month held, with its own loaded count: "failed … 0/6
// domains" without a month would read as data lost although that month may be complete.
func describeMonth(ctx context.Context, db *sql.DB, ev *notify.Event) {
	if db == nil || ev.Outcome == notify.OutcomeComplete || ev.Outcome == notify.OutcomeUpToDate {
		return
	}
	if ev.Month == "" {
		var newest sql.NullString
		if err := db.QueryRowContext(ctx, `SELECT max(snapshot_month) FROM sites`).Scan(&newest); err != nil || !newest.Valid {
			ev.MonthState = "no month loaded yet"
			return
		}
		ev.Month = newest.String
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sites WHERE snapshot_month = ?`, ev.Month).Scan(&ev.Loaded); err != nil {
			return
		}
	}
	var complete bool
	if err := db.QueryRowContext(ctx, `SELECT count(*) > 0 FROM complete_months WHERE snapshot_month = ?`, ev.Month).Scan(&complete); err != nil {
		return
	}
	if complete {
		ev.MonthState = ev.Month + " stays complete"
		return
	}
	ev.MonthState = fmt.Sprintf("%s incomplete: %d of %s loaded", ev.Month, ev.Loaded, textout.Plural(ev.Total, "domain", "domains"))
}

// storedAnswers counts the answers state holds: every stored site-overview and site-similar
// answer, and country-metadata.
func storedAnswers(state *warehouse.SnapshotState) int {
	n := 0
	if state.CountriesLoaded {
		n++
	}
	for _, eps := range state.Stored {
		for _, ep := range schema.DomainEndpoints {
			if eps.Has(ep) {
				n++
			}
		}
	}
	return n
}
