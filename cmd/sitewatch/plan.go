package main

import (
	"fmt"
	"io"
	"strings"

	"sitewatch/pipeline"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/textout"
	"sitewatch/pipeline/wire"
	"text/tabwriter"
)

// Print writes the plan as a user reads it in --dry-run output.
func printPlan(w io.Writer, p *pipeline.Plan, cfg *config.Config, wl *config.Watchlist) {
	month := p.Snapshot
	if month == "" {
		month = "(the month the API serves; learned from its first answer)"
	}
	fmt.Fprintf(w, "snapshot %s — plan (dry run: nothing that costs credits is called)\n", month)
	rows := [][2]string{
		{"watchlist entries", fmt.Sprint(len(cfg.Domains))},
		{"valid domains", fmt.Sprint(p.Domains)},
		{"rejected before sending", fmt.Sprint(len(wl.Rejected))},
		{"duplicates collapsed", fmt.Sprint(len(wl.Duplicates))},
		{"already loaded", fmt.Sprint(p.Loaded)},
		{"rejected by the API earlier", fmt.Sprint(len(p.RejectedByAPI))},
		{"stored but not loadable", fmt.Sprint(p.Unloadable)},
		{"domains to fetch", fmt.Sprintf("%d (%d half-loaded: only the missing call)", p.PendingDomains(), p.HalfLoaded)},
		{"country-metadata", map[bool]string{true: "to fetch (1 call)", false: "already loaded"}[p.Countries]},
		{"calls", fmt.Sprint(p.Credits())},
		{"credits (at most)", fmt.Sprintf("%d (%s, plus up to api.max_wasted_credits refetches of broken answers)", wire.MaxCredits(cfg, p.Credits()), textout.Plural(p.Credits(), "call", "calls"))},
		{"min_credits reserve", reserveText(cfg)},
		{"max_credits_per_run", capText(cfg.API.MaxCreditsPerRun)},
	}
	printRows(w, rows)
	printBucketNote(w, p)
	if p.HeldComplete {
		fmt.Fprintf(w, "note: %s is held complete: if the API still serves it the run stops up to date after 1 credit; "+
			"if it serves a new month the run needs %d calls (2 per domain and country-metadata)\n", p.Snapshot, p.FullCredits)
	}
	if c := cfg.API.MaxCreditsPerRun; c > 0 && int64(p.Credits()) > c {
		fmt.Fprintf(w, "note: the run will stop after %d calls (max_credits_per_run) with exit code 3; rerun to continue\n", c)
	}
	for _, r := range wl.Rejected {
		fmt.Fprintf(w, "rejected: %q (line %d): %s\n", r.Input, r.Line, r.Reason)
	}
}

// printBucketNote says what the plan took from the bucket, or that it could not read it.
func printBucketNote(w io.Writer, p *pipeline.Plan) {
	switch {
	case p.BucketUnread != "":
		fmt.Fprintf(w, "note: the bucket could not be read (%s): the plan counts only what this warehouse holds\n", p.BucketUnread)
	case p.FromBucket > 0:
		fmt.Fprintf(w, "note: the bucket holds %s this warehouse lacks (%s, %s); a run pulls them first (0 credits) and pays only for the rest\n",
			textout.Plural(p.FromBucket, "answer", "answers"), p.Snapshot, p.BucketURL)
	}
}

// reserveText is api.min_credits, or with api.sources each source's min_credits.
func reserveText(cfg *config.Config) string {
	if !cfg.MultiSource() {
		return fmt.Sprint(cfg.API.MinCredits)
	}
	parts := make([]string, 0, len(cfg.Sources()))
	for _, sc := range cfg.Sources() {
		parts = append(parts, fmt.Sprintf("%s %d", sc.Name, sc.MinCredits))
	}
	return strings.Join(parts, ", ")
}

func capText(n int64) string {
	if n == 0 {
		return "0 (no cap)"
	}
	return fmt.Sprint(n)
}

// printRows writes label/value rows in two aligned columns.
func printRows(w io.Writer, rows [][2]string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintf(tw, "  %s\t%s\n", r[0], r[1])
	}
	_ = tw.Flush()
}
