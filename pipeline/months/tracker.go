// Package months holds the rules about data months: which month each answer of a run belongs
// to (Tracker), and what can still be done about a month that lacks data (Fetchable): the API
// serves only its current month, so advice never suggests fetching a past one
// (`sitewatch run --snapshot 2026-09` in November can only exit 5).
package months

import (
	"strings"
	"time"

	"sitewatch/schema"
)

// A snapshot is the month the API's data is for, never the wall-clock month: see
// docs/design.md ("Snapshots are data months"). The rule, applied to every site-overview
// answer:
//
//  1. traffic.period (YYYY-MM), the month the traffic figures describe;
//  2. else, when meta.snapshot_date is absent or the same date as the answers that set the
//     run's month, the run's month (a missing period on one domain does not split the month);
//  3. else the month of meta.snapshot_date (the API moved on and says so only there).
//
// site-similar and country-metadata answers carry no date: they belong to the month of their
// domain's overview answered in the same run, else to the run's month.

// monthOfPeriod returns p when it is a valid YYYY-MM.
func monthOfPeriod(p *string) (string, bool) {
	if p == nil {
		return "", false
	}
	if _, err := time.Parse("2006-01", *p); err != nil || len(*p) != 7 {
		return "", false
	}
	return *p, true
}

// monthOfDate returns the YYYY-MM of a YYYY-MM-DD date.
func monthOfDate(d *string) (string, bool) {
	if d == nil {
		return "", false
	}
	t, err := time.Parse("2006-01-02", *d)
	if err != nil {
		return "", false
	}
	return t.Format("2006-01"), true
}

// Tracker decides the data month of each answer of one run.
type Tracker struct {
	month        string            // the run's month, set by the first overview answer
	snapshotDate string            // meta.snapshot_date of the answer that set month
	byDomain     map[string]string // domain -> month of its overview in this run, when not month
}

// NewTracker returns a tracker for a run that has not learned its month yet.
func NewTracker() *Tracker {
	return &Tracker{byDomain: map[string]string{}}
}

// Month is the run's month, set by its first overview answer that names one ("" before).
func (m *Tracker) Month() string { return m.month }

// Trust sets the run's month without an answer: a resumed month whose newest overview is
// recent enough that the API is known to serve it still (pipeline's dateTrust).
func (m *Tracker) Trust(month string) { m.month = month }

// Overview returns the data month of an overview answer ("" when it says nothing usable and
// the run has no month yet) and remembers it for the domain's other answers.
func (m *Tracker) Overview(domain string, ov *schema.SiteOverview) string {
	month := m.OverviewMonth(ov)
	if month == "" {
		return ""
	}
	// A decoded string shares the memory of its whole body (the JSON decoder does not copy
	// strings): keeping it for every domain kept every overview body alive until the run
	// ended. The tracker keeps copies, and the run's own month as one shared string.
	if month == m.month {
		month = m.month
	} else {
		month = strings.Clone(month)
	}
	if m.month == "" {
		m.month = month
		if ov.Meta.SnapshotDate != nil {
			m.snapshotDate = strings.Clone(*ov.Meta.SnapshotDate)
		}
	}
	// Only the exceptions are kept (an answer of another month after a turn): other falls
	// back to the run's month, which never changes once set, so a watchlist of 100,000 domains
	// does not keep 100,000 entries.
	if month == m.month {
		delete(m.byDomain, domain)
	} else {
		m.byDomain[domain] = month
	}
	return month
}

// OverviewMonth is the month an overview answer names under the rule above, remembering
// nothing (Overview remembers it).
func (m *Tracker) OverviewMonth(ov *schema.SiteOverview) string {
	if ov.Traffic != nil {
		if month, ok := monthOfPeriod(ov.Traffic.Period); ok {
			return month
		}
	}
	date := ov.Meta.SnapshotDate
	if m.month != "" && (date == nil || *date == m.snapshotDate) {
		return m.month
	}
	if month, ok := monthOfDate(date); ok {
		return month
	}
	return m.month
}

// Other returns the month of an answer that carries no date (site-similar, countries).
func (m *Tracker) Other(domain string) string {
	if month, ok := m.byDomain[domain]; ok {
		return month
	}
	return m.month
}
