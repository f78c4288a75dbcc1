package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"sitewatch/pipeline"
	"sitewatch/pipeline/atlas"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/model"
	"sitewatch/pipeline/textout"
	"sitewatch/pipeline/wire"
)

var checkHelp = help{
	summary: "preflight for 0 credits: config, reachability, key, balance, rate limit, and whether the balance covers the next run",
	usage:   "[--config F]",
	examples: []string{
		"sitewatch check && sitewatch run",
		"sitewatch check; echo $?   # 0 ready, 1 unreachable, 2 config, 3 not enough credits, 4 key rejected",
	},
}

func cmdCheck(ctx context.Context, args []string, env Env) error {
	f := newFlags("check", env, true, false)
	cfg, err := f.parse(args, env, 0, 0)
	if err != nil {
		return err
	}
	wl := config.NewWatchlist(cfg)
	what := "mode " + cfg.API.Mode
	if cfg.MultiSource() {
		what = textout.Plural(len(cfg.Sources()), "credit source", "credit sources")
		if cfg.BaseURLFromEnv() {
			what += ", every one at ATLAS_BASE_URL"
		}
	}
	fmt.Fprintf(env.Stdout, "config      ok: %s (%s, %s)\n", cfg.Path, textout.Plural(len(wl.Domains), "domain", "domains"), what)
	if line := wl.SkippedLine(); line != "" {
		fmt.Fprintf(env.Stdout, "watchlist   %s\n", line)
	}
	if err := wire.CheckCredentials(cfg, env.Getenv); err != nil {
		// The checklist says why it stops, where the reader looks; printed once.
		fmt.Fprintf(env.Stdout, "key         NOT USABLE: %v\nnot ready: nothing was called\n", err)
		return reportedError{err}
	}
	// The estimate counts what the bucket holds and this warehouse lacks as held (read-only).
	sync, err := bucketSync(ctx, cfg, env)
	bindBucket(&env, sync, nil)
	if err != nil {
		env.Logger.Warn("the bucket cannot be read: the estimate counts only what this warehouse holds", "err", err)
	}
	r, err := wire.Check(ctx, cfg, env.Env)
	if stop := printProbeFailure(env.Stdout, r, err); stop {
		return err
	}
	if r.Spend == nil {
		fmt.Fprintf(env.Stdout, "reachable   ok (%s)\nkey         accepted\n", r.Probe.Latency.Round(time.Millisecond))
	}
	if r.Plan.Snapshot != "" {
		fmt.Fprintf(env.Stdout, "warehouse   newest month %s: %d of %d domains loaded\n", r.Plan.Snapshot, r.Plan.Loaded, r.Plan.Domains)
	}
	if r.Plan.FromBucket > 0 { // counted as held above: a run pulls them first
		fmt.Fprintf(env.Stdout, "bucket      holds %s this warehouse lacks (%s); a run pulls them first (0 credits)\n",
			textout.Plural(r.Plan.FromBucket, "answer", "answers"), r.Plan.Snapshot)
	}
	printReadiness(env.Stdout, r)
	if err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout, "ready: 0 credits spent by this check")
	return nil
}

// printProbeFailure prints what a failed preflight learned, and only that: a server that
// answered something other than the API (a wrong base URL answering 404 or an HTML page)
// is named with the request and its answer, and no key, balance or rate is claimed. It
// reports whether check stops here.
func printProbeFailure(w io.Writer, r *wire.Readiness, err error) bool {
	var unreachable *atlas.UnreachableError
	switch {
	case err == nil, r != nil && pipeline.IsCreditStop(err):
		return false // the API answered: what it said is printed by the caller
	case errors.As(err, &unreachable):
		fmt.Fprintf(w, "reachable   NO: %s failed\n", unreachable.Stage)
	case errors.Is(err, model.ErrUnauthorized):
		fmt.Fprintln(w, "reachable   ok\nkey         REJECTED: check the key variables (ATLAS_API_KEY; in marketplace mode ATLAS_MARKETPLACE_KEY; with api.sources each source's key_env and marketplace_key_env)")
	case errors.Is(err, model.ErrMisconfigured):
		fmt.Fprintf(w, "reachable   yes, but it does not serve the API: %s\n", answerOf(err))
	case r != nil:
		fmt.Fprintf(w, "api         NO answer usable from the API: %s\n", answerOf(err))
	}
	return true
}

// answerOf is the request and answer an *model.Error describes, else the error itself.
func answerOf(err error) string {
	var ae *model.Error
	if errors.As(err, &ae) && ae.Message != "" {
		return ae.Message
	}
	return err.Error()
}

// neededText is the "next run needs" line: what a run now spends, and, when the month held
// is complete, what a new month will need.
func neededText(r *wire.Readiness) string {
	text := fmt.Sprintf("%s (at most %d with refetches)", credits(r.Needed), r.MaxCredits)
	if r.NewMonth > 0 {
		text = fmt.Sprintf("%s: %s is complete, a run now only checks it is still served; %s when the API serves a new month",
			credits(r.Needed), r.Plan.Snapshot, credits(r.NewMonth))
	}
	return text
}

func credits(n int) string {
	if n == 1 {
		return "1 credit"
	}
	return textout.Thousands(int64(n)) + " credits"
}

// printSpend writes each source's probe and the spend plan (api.sources).
func printSpend(w io.Writer, r *wire.Readiness) {
	rows := [][2]string{}
	for _, p := range r.Sources {
		rows = append(rows, [2]string{"source " + p.Name, sourceText(p, pacedRate(r, p))})
	}
	covers := "yes"
	if !r.Covered {
		covers = "NO"
	}
	rows = append(rows,
		[2]string{"next run needs", neededText(r)},
		[2]string{"plan", r.Spend.String()},
		[2]string{"covered", covers},
		[2]string{"expected duration", fmt.Sprintf("%s (every source at once, each at its own rate)", r.Duration.Round(time.Second))},
	)
	printRows(w, rows)
}

// pacedRate is the rate a source really runs at: its rate_limit, lowered by the server's
// X-RateLimit-Limit (the plan's allowance); 0 when the plan does not know it.
func pacedRate(r *wire.Readiness, p wire.SourceProbe) float64 {
	for _, sh := range r.Spend.Shares {
		if sh.Name == p.Name {
			return sh.Rate
		}
	}
	return 0
}

// sourceText is one source's line: its wallet or quota and the rate it runs at (rate, the
// configured rate_limit unless the server allows less).
func sourceText(p wire.SourceProbe, rate float64) string {
	if p.Err != nil && !errors.Is(p.Err, model.ErrOutOfCredits) {
		return "NO: " + answerOf(p.Err)
	}
	var text string
	switch {
	case p.Probe.QuotaRemaining >= 0:
		text = fmt.Sprintf("%s, quota %s of %s left", p.Mode, textout.Thousands(p.Probe.QuotaRemaining), textout.Thousands(p.Probe.QuotaLimit))
		if !p.Probe.QuotaReset.IsZero() {
			text += ", resets " + p.Probe.QuotaReset.UTC().Format(time.RFC3339)
		}
	case p.Probe.Balance >= 0:
		text = fmt.Sprintf("%s, balance %s credits", p.Mode, textout.Thousands(p.Probe.Balance))
	default:
		text = p.Mode + ", balance not reported"
	}
	if rate > 0 {
		text += fmt.Sprintf(", %g requests/s", rate)
	}
	if errors.Is(p.Err, model.ErrOutOfCredits) {
		text += " (402: pays nothing)"
	}
	return text
}

// creditsSpentText is the summary's "credits spent", with what each source paid when several did.
func creditsSpentText(s *pipeline.Summary) string {
	if by := wire.PaidBy(s.Sources); by != "" {
		return fmt.Sprintf("%d (%s)", s.CreditsSpent, by)
	}
	return fmt.Sprint(s.CreditsSpent)
}
