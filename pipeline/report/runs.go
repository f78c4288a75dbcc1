package report

import (
	"database/sql"
	"fmt"

	"sitewatch/pipeline/numfmt"
)

// runSection is the bookkeeping behind the numbers: runs, credits, unloaded domains, quality.
type runSection struct {
	Runs            []runLine
	Errors          []errorLine
	QualityRecorded bool // the warehouse has a quality_checks table
	QualitySummary  []qualityLine
	Findings        []findingLine
	MoreFindings    int
	MoreErrors      int // fetch errors beyond topN, in the table fetch_errors
}

type qualityLine struct {
	Check, Verdict, Tone     string
	Tables, Errors, Warnings int
}

type findingLine struct{ Check, Table, Domain, Observed, Expected, Severity string }

type runLine struct {
	Started, Finished, Status, Loaded, Requests, Credits, Remaining, RateLimited, Message string
	Bad                                                                                   bool
}

type errorLine struct{ Domain, Endpoint, Status, Code, Message string }

const maxFindings = topN

func buildRuns(d *data) *runSection {
	r := &runSection{QualityRecorded: d.QualityRecorded}
	for _, x := range d.Runs {
		l := runLine{Started: x.Started.UTC().Format("2006-01-02 15:04"), Finished: "—", Status: x.Status,
			Loaded: fmt.Sprintf("%s of %s", intOr(x.Loaded), intOr(x.Total)), Requests: intOr(x.Requests),
			Credits: intOr(x.Credits), Remaining: intOr(x.Remaining), RateLimited: intOr(x.RateLimited),
			Message: x.Message, Bad: x.Status != "complete" && x.Status != "up_to_date"}
		if x.Remaining.Valid && x.Remaining.Int64 < 0 {
			l.Remaining = "unknown"
		}
		if x.Rejected.Int64 > 0 {
			l.Loaded += fmt.Sprintf(" (%d rejected)", x.Rejected.Int64)
		}
		if x.Finished.Valid {
			l.Finished = x.Finished.Time.UTC().Format("2006-01-02 15:04")
		}
		r.Runs = append(r.Runs, l)
	}
	for i, e := range d.FetchErrors {
		if i == topN {
			r.MoreErrors = len(d.FetchErrors) - topN
			break
		}
		st := "—"
		if e.Status.Valid {
			st = fmt.Sprint(e.Status.Int64)
		}
		r.Errors = append(r.Errors, errorLine{Domain: e.Domain, Endpoint: e.Endpoint, Status: st, Code: orDash(e.Code), Message: orDash(e.Message)})
	}
	for _, q := range d.QualitySummary {
		l := qualityLine{Check: q.Check, Tables: q.Tables, Errors: q.Errors, Warnings: q.Warnings, Verdict: q.Severity}
		switch q.Severity {
		case "error":
			l.Tone = "down"
		case "ok":
			l.Verdict, l.Tone = "passed", "up"
		}
		r.QualitySummary = append(r.QualitySummary, l)
	}
	for i, f := range d.Quality {
		if i == maxFindings {
			r.MoreFindings = len(d.Quality) - maxFindings
			break
		}
		r.Findings = append(r.Findings, findingLine{Check: f.Check, Table: f.Table, Domain: orDash(f.Domain),
			Observed: f.Observed, Expected: f.Expected, Severity: f.Severity})
	}
	return r
}

// intOr formats a nullable count with thousands separators, "—" when NULL.
func intOr(n sql.NullInt64) string {
	if !n.Valid {
		return "—"
	}
	return numfmt.Thousands(n.Int64)
}

// duration formats seconds as 2m 05s.
func duration(sec float64) string {
	s := int(sec + 0.5)
	if s < 60 {
		return fmt.Sprintf("%ds", s)
	}
	return fmt.Sprintf("%dm %02ds", s/60, s%60)
}
