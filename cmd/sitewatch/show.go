package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"sitewatch/pipeline/changes"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/numfmt"
	"sitewatch/pipeline/textout"
	"sitewatch/pipeline/wire"
)

var showHelp = help{
	summary: "one domain: its months (visits, rank, channels, AI visits) with MoM and YoY, its needs-attention rows, its competitors (0 credits)",
	usage:   "DOMAIN [--config F] [--format table|json]",
	examples: []string{
		"sitewatch show nytimes.com",
		"sitewatch show https://www.example.com/pricing   # normalized as the watchlist is",
		"sitewatch show example.com --format json | jq '.months[-1]'",
	},
}

func cmdShow(ctx context.Context, args []string, env Env) error {
	f := newFlags("show", env, true, false)
	format := f.fs.String("format", "table", "output `format`: table or json")
	f.check = func() error {
		if *format != "table" && *format != "json" {
			return &UsageError{Msg: fmt.Sprintf("--format %q: use table or json", *format)}
		}
		return nil
	}
	cfg, wh, err := f.parseAndOpen(ctx, args, env, 1, 1, true)
	if err != nil {
		return err
	}
	defer func() { _ = wh.Close() }() // read-only
	domain, err := config.NormalizeDomain(f.args[0])
	if err != nil {
		return &UsageError{Msg: fmt.Sprintf("show %q: %v; give a domain such as example.com", f.args[0], err)}
	}
	v, err := changes.ReadDomain(ctx, wh.DB(), domain, wire.ReaderAttentionSettings(cfg, wh))
	if err != nil {
		return err
	}
	if *format == "json" {
		return writeShowJSON(env.Stdout, v)
	}
	return toTerminal(env.Stdout, func(w io.Writer) error { return writeShowText(w, v) })
}

func writeShowJSON(w io.Writer, v *changes.DomainView) error {
	out := struct {
		*changes.DomainView
		Attention []attentionRow `json:"needs_attention"`
	}{v, flaggedRows(v)}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// writeShowText is the terminal's form, figures in the report's number style.
func writeShowText(w io.Writer, v *changes.DomainView) error {
	o := textout.New(w)
	o.Printf("%s", v.Domain)
	if v.Title != "" {
		o.Printf(" — %s", v.Title)
	}
	o.Printf(" (latest snapshot %s)\n\n", v.Latest)
	writeShowAttention(o, v)
	o.Printf("Months (visits are estimates; MoM against the month before, YoY against the same month a year before)\n")
	tab := textout.Table{Header: []string{"month", "visits", "MoM", "YoY", "global rank", "AI visits", "top channels"},
		Right: []bool{false, true, true, true, true, true}}
	for _, m := range v.Months {
		tab.Add(m.Month, figCount(m.Visits), figChange(m.MoMPct), figChange(m.YoYPct), figRank(m.Rank), figCount(m.AIVisits), figOrDash(m.ChannelsText(numfmt.Share)))
	}
	o.Keep(tab.Write(o, "  "))
	o.Printf("\nCompetitors (similar sites in %s)\n", v.Latest)
	if len(v.Competitors) == 0 {
		o.Printf("  none listed\n")
		return o.Err()
	}
	comp := textout.Table{Header: []string{"#", "domain", "visits", "global rank", "on the watchlist"}, Right: []bool{true, false, true, true}}
	for _, c := range v.Competitors {
		comp.Add(strconv.Itoa(c.Position), c.Domain, figCount(c.Visits), figRank(c.Rank), map[bool]string{true: "yes", false: ""}[c.OnWatchlist])
	}
	o.Keep(comp.Write(o, "  "))
	return o.Err()
}

// flaggedRows are the domain's needs-attention rows of every month it was flagged in, newest
// month first ([] when never).
func flaggedRows(v *changes.DomainView) []attentionRow {
	rows := []attentionRow{}
	for _, a := range v.Flagged {
		rows = append(rows, attentionRows(a)...)
	}
	return rows
}

// writeShowAttention names every month that flagged the domain, newest first, with its reasons;
// the latest complete month says "nothing unusual" when it did not flag it.
func writeShowAttention(o *textout.Writer, v *changes.DomainView) {
	if v.Attention == nil {
		return
	}
	if len(v.Attention.Domains) == 0 {
		o.Printf("Needs attention in %s: nothing unusual\n", v.Attention.Month)
	}
	for _, a := range v.Flagged {
		o.Printf("Needs attention in %s (#%d of the list)\n", a.Month, a.Domains[0].Rank)
		for _, r := range a.Domains[0].Reasons {
			o.Printf("  %s  %s: %s\n", r.Severity, r.Kind, r.Text)
		}
	}
	o.Printf("\n")
}

func figCount(v *float64) string {
	if v == nil {
		return numfmt.Dash
	}
	return numfmt.Count(*v)
}

func figChange(pct *float64) string {
	if pct == nil {
		return numfmt.Dash
	}
	return numfmt.Change(*pct / 100)
}

func figRank(r *int64) string {
	if r == nil {
		return numfmt.Dash
	}
	return numfmt.Rank(*r)
}

func figOrDash(s string) string {
	if s == "" {
		return numfmt.Dash
	}
	return s
}
