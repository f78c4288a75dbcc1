package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"sitewatch/pipeline"
	"sitewatch/pipeline/atlas"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/model"
	"sitewatch/pipeline/secret"
	"sitewatch/pipeline/sources"
	"sitewatch/pipeline/textout"
)

// Exit codes of `sitewatch run` (README.md, "Exit codes").
const (
	ExitOK           = 0
	ExitFailed       = 1
	ExitUsage        = 2
	ExitCredits      = 3
	ExitUnauthorized = 4
	ExitWrongMonth   = 5 // --snapshot M, but the API serves another month
)

// UsageError is a bad command line; nothing was called.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// ExitCode maps a command's error to its exit code.
func ExitCode(err error) int {
	var ce *config.Error
	var ue *UsageError
	var na *NothingAddedError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ce), errors.As(err, &ue), errors.As(err, new(*atlas.ConfigError)):
		return ExitUsage
	case pipeline.IsCreditStop(err):
		return ExitCredits
	case errors.Is(err, model.ErrUnauthorized):
		return ExitUnauthorized
	case errors.As(err, new(*pipeline.MonthMismatchError)):
		return ExitWrongMonth
	case errors.As(err, &na):
		return na.exitCode()
	default:
		return ExitFailed
	}
}

// advice says what the user does next, per outcome.
func advice(err error, snapshot string) string {
	if errors.As(err, new(*NothingAddedError)) {
		return "" // its message says what to change
	}
	switch ExitCode(err) {
	case ExitCredits:
		return "stopped for credits: top up the wallet (or raise max_credits_per_run / lower min_credits), then rerun `sitewatch run`; loaded domains are not fetched again"
	case ExitUnauthorized:
		return "the API rejected the key: check ATLAS_API_KEY (and, in marketplace mode, ATLAS_MARKETPLACE_KEY and api.marketplace_host)"
	case ExitFailed:
		switch {
		case errors.As(err, new(*pipeline.MonthTurnedError)):
			return "rerun `sitewatch run` to complete the new month (`sitewatch schedule` does so by itself)"
		case errors.Is(err, model.ErrMisconfigured), errors.Is(err, model.ErrBodyTooLarge), errors.Is(err, secret.ErrInsecureHTTP):
			// The same call would get the same answer: only a corrected address helps.
			return "what was loaded stays loaded; correct api.base_url (or ATLAS_BASE_URL, or api.mode) to the API's address, then `sitewatch check` shows whether it answers as the API"
		case errors.Is(err, model.ErrUntrustedCertificate):
			return "what was loaded stays loaded; correct api.base_url or install the issuing CA in the system trust store, then `sitewatch check`"
		case errors.Is(err, model.ErrServerRateLimit):
			return "what was loaded stays loaded; the key's plan allows almost no requests: check the plan with the API provider, then `sitewatch check`"
		}
		return "what was loaded stays loaded; rerun `sitewatch run` to fetch only what is missing"
	}
	return ""
}

// PrintSummary writes the end-of-run table.
func PrintSummary(w io.Writer, s *pipeline.Summary, runErr error) {
	credits := "unknown"
	if s.CreditsRemaining >= 0 {
		credits = fmt.Sprint(s.CreditsRemaining)
	}
	month := s.Snapshot
	if month == "" {
		month = "(month unknown: no answer told it)"
	}
	fmt.Fprintf(w, "snapshot %s — run %s: %s\n", month, s.RunID, s.Status)
	if s.Status == pipeline.StatusUpToDate {
		since := ""
		if !s.CompleteSince.IsZero() {
			since = " (complete since " + s.CompleteSince.UTC().Format("2006-01-02 15:04 UTC") + ")"
		}
		fmt.Fprintf(w, "  up to date: the API still serves %s%s; nothing was rewritten\n", s.Snapshot, since)
	}
	if line := s.Watchlist.SkippedLine(); line != "" {
		fmt.Fprintf(w, "  %s\n", line)
	}
	printRows(w, [][2]string{
		{"domains loaded", fmt.Sprintf("%d of %d", s.DomainsLoaded, s.DomainsTotal)},
		{"rejected by the API (400)", fmt.Sprint(s.DomainsRejected)},
		{"rejected before sending", fmt.Sprint(len(s.Watchlist.Rejected))},
		{"requests", fmt.Sprint(s.Requests)},
		{"answered 429", fmt.Sprint(s.RateLimited)},
		{"credits spent", creditsSpentText(s)},
		{"credits left", credits},
		{"duration", s.Duration.Round(100 * time.Millisecond).String()},
	})
	if s.Published != "" {
		fmt.Fprintf(w, "  published: %s\n", s.Published)
	}
	if s.PublishError != "" {
		fmt.Fprintf(w, "  publish FAILED: %s\n", s.PublishError)
	}
	if s.TurnedTo != "" {
		fmt.Fprintf(w, "  note: the API turned to %s during the run: %s stays incomplete (%d of %d loaded); %s holds %s paid for (%d of %d domains loaded), kept: a rerun pays only for what it lacks\n",
			s.TurnedTo, s.Snapshot, s.DomainsLoaded, s.DomainsTotal, s.TurnedTo, textout.Plural(s.TurnedAnswers, "answer", "answers"), s.TurnedLoaded, s.DomainsTotal)
	}
	for _, r := range s.Watchlist.Rejected {
		fmt.Fprintf(w, "  not sent: %q (line %d): %s\n", r.Input, r.Line, r.Reason)
	}
	for _, d := range slices.Sorted(maps.Keys(s.APIRejections)) {
		fmt.Fprintf(w, "  rejected by the API: %s (%s)\n", d, s.APIRejections[d])
	}
	failures := s.Failures
	sort.SliceStable(failures, func(i, j int) bool { return failures[i].Domain < failures[j].Domain })
	for i, f := range failures {
		if i == 10 {
			fmt.Fprintf(w, "  … and %d more failures (SELECT * FROM fetch_errors WHERE run_id = '%s')\n", len(failures)-10, s.RunID)
			break
		}
		fmt.Fprintf(w, "  failed: %s %s: %s\n", model.DisplayDomain(f.Domain), f.Endpoint, f.Message)
	}
	if runErr != nil {
		label := "error" // a signal is the user's request, not a failure
		if errors.Is(runErr, pipeline.ErrInterrupted) {
			label = "stopped"
		}
		fmt.Fprintf(w, "%s: %s\n", label, stopText(runErr))
		if a := advice(runErr, s.Snapshot); a != "" {
			fmt.Fprintf(w, "next: %s\n", a)
		}
	}
}

// stopText is why a run stopped, in the user's words: a stop the client decided before a call
// ("atlas start: …") says who stopped (the wallet, or which credit source) and which setting
// holds the reserve (api.min_credits, or that source's min_credits under api.sources).
func stopText(err error) string {
	var ae *model.Error
	if !errors.As(err, &ae) || ae.Op != "start" {
		return err.Error()
	}
	who, reserve := "the wallet", "api.min_credits"
	var se *sources.SourceError
	if errors.As(err, &se) {
		who, reserve = "credit source "+se.Source, "min_credits of source "+se.Source+" (api.sources)"
	}
	if errors.Is(err, model.ErrCreditReserve) {
		return fmt.Sprintf("%s reached its reserve, %s: %s; top up %s (or lower %s) and rerun to resume",
			who, reserve, strings.TrimRight(ae.Message, ". "), who, reserve)
	}
	text := strings.TrimPrefix(ae.Error(), "atlas start: ")
	if se != nil {
		text = who + ": " + text
	}
	return text
}

// LogLevel is the level of the log lines on stderr for command name: --log-level (or
// --verbose: debug) first, then SITEWATCH_LOG (debug, info, warn, error), then the default.
// The default keeps a person at a terminal from reading every result twice (once on stdout,
// once as an INFO line): warnings and errors only, except for schedule, a daemon whose log is
// its record. Written to a file or a pipe (cron, systemd, CI), stderr keeps the INFO lines.
func LogLevel(name string, lf logFlags, getenv func(string) string, interactive bool) slog.Level {
	var l slog.Level
	switch {
	case lf.level != "":
		_ = l.UnmarshalText([]byte(lf.level)) // checked by takeLogFlags
		return l
	case lf.verbose:
		return slog.LevelDebug
	case l.UnmarshalText([]byte(getenv("SITEWATCH_LOG"))) == nil:
		return l
	case interactive && name != "schedule":
		return slog.LevelWarn
	}
	return slog.LevelInfo
}

// logFlags are the logging flags every command takes.
type logFlags struct {
	level   string // --log-level
	verbose bool   // --verbose
}

// takeLogFlags removes --log-level L (--log-level=L) and --verbose from args, wherever they stand
// before a "--", and returns the rest. Errors are *UsageError for a level that is not one.
func takeLogFlags(args []string) ([]string, logFlags, error) {
	var lf logFlags
	rest := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(rest, args[i:]...), lf, nil
		case a == "--verbose" || a == "-verbose":
			lf.verbose = true
			continue
		case a == "--log-level" || a == "-log-level":
			if i+1 >= len(args) {
				return nil, lf, &UsageError{Msg: "--log-level needs a level: debug, info, warn or error"}
			}
			i++
			lf.level = args[i]
		case strings.HasPrefix(a, "--log-level=") || strings.HasPrefix(a, "-log-level="):
			lf.level = a[strings.Index(a, "=")+1:]
		default:
			rest = append(rest, a)
			continue
		}
		var l slog.Level
		if err := l.UnmarshalText([]byte(lf.level)); err != nil {
			return nil, lf, &UsageError{Msg: fmt.Sprintf("--log-level %q: use debug, info, warn or error", lf.level)}
		}
	}
	return rest, lf, nil
}
