package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"sitewatch/pipeline"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/livestatus"
	"sitewatch/pipeline/model"
	"sitewatch/pipeline/numfmt"
	"sitewatch/pipeline/textout"
	"sitewatch/pipeline/warehouse"
)

// statusReport is what `sitewatch status` shows; its JSON form (--format json) is for
// scripts: field names are stable, fields are only ever added.
type statusReport struct {
	Warehouse string `json:"warehouse"` // the DuckDB file
	// WarehouseState is "ok" (read), "locked" (held by a run or a tool: runs not shown),
	// "missing" (no run yet) or "error"; WarehouseNote says more when not "ok".
	WarehouseState string         `json:"warehouse_state"`
	WarehouseNote  string         `json:"warehouse_note,omitempty"`
	Live           *liveRun       `json:"live"` // null when no run has left a progress file
	Runs           []runJSON      `json:"runs"` // newest first; empty unless warehouse_state is "ok"
	Credits        *creditsJSON   `json:"credits"`
	Sections       map[string]any `json:"sections"` // statusSections by name
}

// liveRun is the progress file plus what the reader concluded about its process.
type liveRun struct {
	*livestatus.Status
	// Process is "running" (the run's PID is alive), "gone" (the file says running but the
	// process died: the next run records it as abandoned), "stale" (not refreshed for 30 s:
	// the run is hung or stopped, or it runs on another host that stopped writing) or
	// "finished" (a final file).
	Process string `json:"process"`
}

type runJSON struct {
	RunID            string     `json:"run_id"`
	SnapshotMonth    string     `json:"snapshot_month"`
	Status           string     `json:"status"`
	StartedAt        time.Time  `json:"started_at"`
	FinishedAt       *time.Time `json:"finished_at"`
	DurationSeconds  *float64   `json:"duration_seconds"`
	DomainsTotal     int        `json:"domains_total"`
	DomainsLoaded    int        `json:"domains_loaded"`
	DomainsRejected  int        `json:"domains_rejected"`
	Requests         int        `json:"requests"`
	RateLimited      int        `json:"rate_limited"`
	CreditsSpent     int        `json:"credits_spent"`
	CreditsRemaining *int64     `json:"credits_remaining"`
	Message          string     `json:"message,omitempty"`
}

// creditsJSON is read from the runs table, so it is null while the warehouse is locked (the
// live run's own figures are in "live" then).
type creditsJSON struct {
	Remaining      *int64     `json:"remaining"`        // the newest known wallet, null unknown
	RemainingAsOf  *time.Time `json:"remaining_as_of"`  // when a run saw it
	SpentThisMonth int64      `json:"spent_this_month"` // by runs started this calendar month (UTC)
	CalendarMonth  string     `json:"calendar_month"`   // that month, YYYY-MM
}

// statusSection is a part of `status` that another feature contributes (unpublished months,
// a quality summary). Collect reads the open warehouse; Text prints the value Collect
// returned. Its JSON goes under "sections"."<Name>".
type statusSection struct {
	Name    string
	Collect func(ctx context.Context, db *sql.DB, cfg *config.Config) (any, error)
	Text    func(w io.Writer, v any) error
}

// statusSections run in order after the recent runs; add one entry per feature.
var statusSections = []statusSection{
	{Name: "quality", Collect: collectQuality, Text: printQuality},
	{Name: "publish", Collect: collectPublish, Text: printPublishStatus},
	{Name: "watchlist", Collect: collectWatchlist, Text: printWatchlist},
	{Name: "discover", Collect: collectDiscover, Text: printDiscoverStatus},
	{Name: "sources", Collect: collectSources, Text: printSourcesStatus}, // sources_status.go
}

// qualityJSON is sections.quality: the data-quality checks of the newest month they ran on,
// null when they never ran.
type qualityJSON struct {
	Month    string             `json:"month"`
	Errors   int                `json:"errors"`   // error findings over all checks
	Warnings int                `json:"warnings"` // warn findings over all checks
	Checks   []qualityCheckJSON `json:"checks"`   // worst first
}

type qualityCheckJSON struct {
	Check    string `json:"check"`
	Severity string `json:"severity"` // error | warn | ok
	Errors   int    `json:"errors"`
	Warnings int    `json:"warnings"`
	Tables   int    `json:"tables"`
}

func collectQuality(ctx context.Context, db *sql.DB, _ *config.Config) (any, error) {
	var month sql.NullString
	if err := db.QueryRowContext(ctx, `SELECT max(snapshot_month) FROM quality_checks`).Scan(&month); err != nil {
		return nil, err
	}
	if !month.Valid {
		return (*qualityJSON)(nil), nil
	}
	sums, err := warehouse.QualitySummary(ctx, db, month.String)
	if err != nil {
		return nil, err
	}
	q := &qualityJSON{Month: month.String, Checks: []qualityCheckJSON{}}
	for _, c := range sums {
		q.Errors += c.Errors
		q.Warnings += c.Warnings
		q.Checks = append(q.Checks, qualityCheckJSON{Check: c.Check, Severity: c.Severity, Errors: c.Errors, Warnings: c.Warnings, Tables: c.Tables})
	}
	return q, nil
}

func printQuality(w io.Writer, v any) error {
	q, _ := v.(*qualityJSON)
	if q == nil {
		return nil
	}
	var found []string
	for _, c := range q.Checks {
		if c.Severity != model.SeverityOK {
			found = append(found, fmt.Sprintf("%s (%s errors, %s warnings)", c.Check, thousands(c.Errors), thousands(c.Warnings)))
		}
	}
	if len(found) == 0 {
		_, err := fmt.Fprintf(w, "quality %s: all %d checks ok\n", q.Month, len(q.Checks))
		return err
	}
	_, err := fmt.Fprintf(w, "quality %s: %s errors, %s warnings in %s; details: sitewatch query "+
		"\"SELECT * FROM quality_checks WHERE snapshot_month = '%s' AND severity <> 'ok'\"\n",
		q.Month, thousands(q.Errors), thousands(q.Warnings), strings.Join(found, ", "), q.Month)
	return err
}

func cmdStatus(ctx context.Context, args []string, env Env) error {
	f := newFlags("status", env, true, false)
	limit := f.fs.Int("limit", 10, "how many recent runs to show (at least 1)")
	format := f.fs.String("format", "text", "output format: text or json")
	f.check = func() error {
		if err := atLeast("limit", *limit, 1); err != nil {
			return err
		}
		if *format != "text" && *format != "json" {
			return &UsageError{Msg: fmt.Sprintf("--format %q: use text or json", *format)}
		}
		return nil
	}
	cfg, err := f.parse(args, env, 0, 0)
	if err != nil {
		return err
	}
	env.Env = pipeline.RedactingEnv(env.Env, cfg) // the bucket's answers are untrusted
	rep, err := collectStatus(ctx, cfg, env, *limit)
	if err != nil {
		return err
	}
	if *format == "json" {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return toTerminal(env.Stdout, func(w io.Writer) error { return printStatus(w, rep, env.Now()) })
}

// collectStatus reads the progress file and, when it can be opened read-only, the warehouse.
// It fails only when it has nothing to show.
func collectStatus(ctx context.Context, cfg *config.Config, env Env, limit int) (*statusReport, error) {
	rep := &statusReport{Warehouse: cfg.Warehouse.DuckDB, Runs: []runJSON{}, Sections: map[string]any{}}
	live, liveErr := livestatus.Read(livestatus.Path(cfg.Warehouse.DuckDB))
	if live != nil {
		rep.Live = &liveRun{Status: live, Process: processState(live, env.Now())}
	}
	whErr := readWarehouse(ctx, cfg, env, limit, rep)
	if whErr == nil {
		return rep, nil
	}
	rep.WarehouseNote = whErr.Error()
	switch {
	case rep.Live != nil:
		return rep, nil // the live run is worth showing even without the runs table
	case liveErr != nil && !errors.Is(liveErr, livestatus.ErrNoRun):
		return nil, errors.Join(whErr, liveErr)
	}
	return nil, whErr
}

func processState(s *livestatus.Status, now time.Time) string {
	switch {
	case s.State != livestatus.StateRunning:
		return "finished"
	case s.OnThisHost() && !s.Alive():
		return "gone"
	case s.Stale(now):
		return "stale"
	}
	return "running"
}

// readWarehouse fills the runs, credits and sections of rep from the warehouse, opened
// read-only; it sets WarehouseState whatever happens.
func readWarehouse(ctx context.Context, cfg *config.Config, env Env, limit int, rep *statusReport) error {
	if _, err := os.Stat(cfg.Warehouse.DuckDB); errors.Is(err, os.ErrNotExist) {
		rep.WarehouseState = "missing"
		return fmt.Errorf("no warehouse at %s yet: run `sitewatch run` first", cfg.Warehouse.DuckDB)
	}
	wh, err := warehouse.Open(ctx, warehouse.Options{DuckDBPath: cfg.Warehouse.DuckDB, Logger: env.Logger, ReadOnly: true})
	if err != nil {
		rep.WarehouseState = "error"
		if errors.Is(err, warehouse.ErrLocked) {
			rep.WarehouseState = "locked"
		}
		return err
	}
	defer func() { _ = wh.Close() }()
	runs, err := wh.Runs(ctx, limit)
	if err != nil {
		rep.WarehouseState = "error"
		return fmt.Errorf("read runs of %s: %w", cfg.Warehouse.DuckDB, err)
	}
	rep.WarehouseState = "ok"
	for _, r := range runs {
		rep.Runs = append(rep.Runs, toRunJSON(r))
	}
	if rep.Credits, err = readCredits(ctx, wh.DB(), env.Now(), rep.Live); err != nil {
		return fmt.Errorf("read credits of %s: %w", cfg.Warehouse.DuckDB, err)
	}
	for _, s := range statusSections {
		v, err := collectBounded(ctx, s, wh.DB(), cfg)
		if err != nil {
			return fmt.Errorf("status %s: %w", s.Name, err)
		}
		rep.Sections[s.Name] = v
	}
	return nil
}

// productStatusBound bounds each section of `status`: one that asks the network (the bucket,
// for "publish") reports a hung peer as its error instead of holding the command.
const productStatusBound = 10 * time.Second

// statusSectionBound is productStatusBound, except in this package's tests (TestMain): there the
// race detector and a busy CI machine made an Iceberg bucket's comparison outlast 10 s, and a
// test of what status says then saw the bound's error instead; TestStatusWithHungBucket holds
// the product's bound.
var statusSectionBound = productStatusBound

func collectBounded(ctx context.Context, s statusSection, db *sql.DB, cfg *config.Config) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, statusSectionBound)
	defer cancel()
	return s.Collect(ctx, db, cfg)
}

func toRunJSON(r model.RunRecord) runJSON {
	j := runJSON{RunID: r.RunID, SnapshotMonth: r.SnapshotMonth, Status: r.Status, StartedAt: r.StartedAt,
		FinishedAt: r.FinishedAt, DomainsTotal: r.DomainsTotal, DomainsLoaded: r.DomainsLoaded,
		DomainsRejected: r.DomainsRejected, Requests: r.Requests, RateLimited: r.RateLimited,
		CreditsSpent: r.CreditsSpent, CreditsRemaining: r.CreditsRemaining, Message: r.Message}
	if r.FinishedAt != nil {
		d := r.FinishedAt.Sub(r.StartedAt).Seconds()
		j.DurationSeconds = &d
	}
	return j
}

// readCredits sums what runs started this calendar month spent and finds the newest known
// wallet (the progress file's, when it is newer than every run's).
func readCredits(ctx context.Context, db *sql.DB, now time.Time, live *liveRun) (*creditsJSON, error) {
	now = now.UTC()
	monthStart := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	c := &creditsJSON{CalendarMonth: monthStart.Format("2006-01")}
	if err := db.QueryRowContext(ctx, `SELECT coalesce(sum(credits_spent), 0) FROM runs WHERE started_at >= ?`, monthStart).Scan(&c.SpentThisMonth); err != nil {
		return nil, err
	}
	var left sql.NullInt64
	var at sql.NullTime
	err := db.QueryRowContext(ctx, `SELECT credits_remaining, coalesce(finished_at, started_at) FROM runs
		WHERE credits_remaining IS NOT NULL ORDER BY started_at DESC, run_id DESC LIMIT 1`).Scan(&left, &at)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	if left.Valid {
		c.Remaining = &left.Int64
		t := at.Time.UTC()
		c.RemainingAsOf = &t
	}
	if live != nil && live.CreditsLeft != nil && (c.RemainingAsOf == nil || live.UpdatedAt.After(*c.RemainingAsOf)) {
		updated := live.UpdatedAt.UTC()
		c.Remaining, c.RemainingAsOf = live.CreditsLeft, &updated
	}
	return c, nil
}

// printStatus writes rep as text: the live run, then the recent runs, credits and sections.
func printStatus(w io.Writer, rep *statusReport, now time.Time) error {
	ew := textout.New(w)
	showLive := rep.Live != nil && (rep.Live.Process != "finished" || rep.WarehouseState != "ok")
	if showLive {
		printLive(ew, rep.Live, now)
		ew.Println()
	}
	switch rep.WarehouseState {
	case "ok":
		if err := printRuns(ew, rep.Runs); err != nil {
			return err
		}
	case "locked":
		if rep.Live != nil && rep.Live.Process == "running" {
			ew.Printf("recent runs: not shown while run %s holds the warehouse; they are back when it ends\n", rep.Live.RunID)
		} else {
			ew.Printf("recent runs: not shown while the warehouse is held by another process: %s\n", rep.WarehouseNote)
		}
	default:
		ew.Printf("recent runs: not shown: %s\n", rep.WarehouseNote)
	}
	if c := rep.Credits; c != nil {
		left := "unknown"
		if c.Remaining != nil {
			left = fmt.Sprintf("%s left (as of %s)", thousands(*c.Remaining), c.RemainingAsOf.Format("2006-01-02 15:04 UTC"))
		}
		ew.Printf("credits: %s; %s spent by runs started in %s (UTC)\n", left, thousands(c.SpentThisMonth), c.CalendarMonth)
	}
	for _, s := range statusSections {
		if v, ok := rep.Sections[s.Name]; ok {
			if err := s.Text(ew, v); err != nil {
				return err
			}
		}
	}
	return ew.Err()
}

// thousands is an exact count in the report's number style (numfmt): 9,976.
func thousands[T ~int | ~int64](n T) string { return numfmt.Thousands(int64(n)) }

func printLive(w *textout.Writer, l *liveRun, now time.Time) {
	ago := func(t time.Time) string { return now.Sub(t).Round(time.Second).String() + " ago" }
	who := fmt.Sprintf("PID %d on %s", l.PID, l.Host)
	switch l.Process {
	case "running":
		w.Printf("live run %s, snapshot %s: running (%s, updated %s)\n", l.RunID, l.Month, who, ago(l.UpdatedAt))
	case "gone":
		w.Printf("live run %s, snapshot %s: its process is gone (%s, last update %s): the run died without finishing; "+
			"the next `sitewatch run` records it as abandoned and resumes where it stopped\n",
			l.RunID, l.Month, who, l.UpdatedAt.UTC().Format("2006-01-02 15:04:05 UTC"))
	case "stale":
		w.Printf("live run %s, snapshot %s: not updated for %s (%s): the run is hung or stopped (SIGSTOP), or its host "+
			"stopped writing; check that process\n", l.RunID, l.Month, now.Sub(l.UpdatedAt).Round(time.Second), who)
	default:
		w.Printf("last run %s, snapshot %s: finished, %s (%s, %s)\n", l.RunID, l.Month, l.Outcome, who,
			l.UpdatedAt.UTC().Format("2006-01-02 15:04:05 UTC"))
	}
	share := 0.0
	if l.Total > 0 {
		share = float64(l.Loaded) / float64(l.Total)
	}
	w.Printf("  domains   %s/%s loaded (%s)\n", thousands(l.Loaded), thousands(l.Total), numfmt.Share(share))
	w.Printf("  requests  %s (%s answered 429), %s req/s\n", thousands(l.Requests), thousands(l.RateLimited), numfmt.Plain(l.Rate, 1))
	left := "unknown"
	if l.CreditsLeft != nil {
		left = thousands(*l.CreditsLeft)
	}
	w.Printf("  credits   %s spent, %s left\n", thousands(l.CreditsSpent), left)
	eta := ""
	if l.ETASeconds != nil && l.Process == "running" {
		eta = ", ETA " + (time.Duration(*l.ETASeconds * float64(time.Second))).Round(time.Second).String()
	}
	w.Printf("  started   %s (%s)%s\n", l.StartedAt.UTC().Format("2006-01-02 15:04:05 UTC"), ago(l.StartedAt), eta)
	if l.Message != "" {
		w.Printf("  message   %s\n", l.Message)
	}
}

// printRuns writes the recent runs as a table, then the message of each run that did not
// complete.
func printRuns(w io.Writer, runs []runJSON) error {
	if len(runs) == 0 {
		_, err := fmt.Fprintln(w, "no runs yet: start one with `sitewatch run`")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "run_id\tsnapshot\tstarted (UTC)\tduration\tstatus\tloaded\trejected\trequests\t429s\tcredits spent\tcredits left")
	for _, r := range runs {
		dur := "-"
		if r.DurationSeconds != nil {
			dur = (time.Duration(*r.DurationSeconds * float64(time.Second))).Round(time.Second).String()
		}
		left := "?"
		if r.CreditsRemaining != nil {
			left = thousands(*r.CreditsRemaining)
		}
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s/%s\t%s\t%s\t%s\t%s\t%s\n", r.RunID, r.SnapshotMonth,
			r.StartedAt.UTC().Format("2006-01-02 15:04:05"), dur, r.Status, thousands(r.DomainsLoaded), thousands(r.DomainsTotal),
			thousands(r.DomainsRejected), thousands(r.Requests), thousands(r.RateLimited), thousands(r.CreditsSpent), left)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range runs {
		if r.Message != "" && r.Status != pipeline.StatusComplete {
			if _, err := fmt.Fprintf(w, "%s: %s\n", r.RunID, r.Message); err != nil {
				return err
			}
		}
	}
	return nil
}
