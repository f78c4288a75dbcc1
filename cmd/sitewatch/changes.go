package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"

	"sitewatch/pipeline/changes"
	"sitewatch/pipeline/warehouse"
	"sitewatch/pipeline/wire"
)

var changesHelp = help{
	summary: "the domains that need attention, the largest falls, the candidates worth tracking, then what changed between the two latest complete months: movers, competitors, AI platforms, keywords, countries, quality",
	usage:   "[--config F] [--snapshot YYYY-MM] [--against YYYY-MM] [--top N] [--format table|json|csv]",
	examples: []string{
		"sitewatch changes",
		"sitewatch changes --snapshot 2026-10   # that month against the complete month before it",
		"sitewatch changes --against 2025-11    # the latest complete month against a year before (needs attention keeps its own test)",
		"sitewatch changes --top 50 --format csv > changes.csv",
		"sitewatch changes --format json | jq '.needs_attention[] | select(.severity == \"high\")'",
	},
}

func cmdChanges(ctx context.Context, args []string, env Env) error {
	f := newFlags("changes", env, true, true)
	// --month was this command's flag before --snapshot named the month everywhere.
	f.fs.StringVar(&f.snapshot, "month", "", "alias of --snapshot: the complete `month` to describe")
	f.fs.Lookup("snapshot").Usage = "the complete `month` to describe, YYYY-MM (default: the latest complete month)"
	against := f.fs.String("against", "", "compare with this complete `month`, YYYY-MM, instead of the complete month before")
	top := f.fs.Int("top", 0, fmt.Sprintf("show `N` lines of each list (default %d; the worth-tracking list %d)", changes.MaxLinesPerSection, changes.WorthTrackingLines))
	format := f.fs.String("format", "table", "output `format`: table, json or csv (json and csv carry every row the lists hold)")
	f.check = func() error {
		if f.set("month") && f.set("snapshot") {
			return &UsageError{Msg: "--month is an alias of --snapshot: pass one"}
		}
		if *format != "table" && *format != "json" && *format != "csv" {
			return &UsageError{Msg: fmt.Sprintf("--format %q: use table, json or csv", *format)}
		}
		return atLeast("top", *top, 0)
	}
	cfg, err := f.parse(args, env, 0, 0)
	if err != nil {
		return err
	}
	wh, err := openWarehouseWith(ctx, cfg, env, warehouse.Options{ReadOnly: true, MemoryLimit: changesMemoryLimit})
	if err != nil {
		return err
	}
	defer func() { _ = wh.Close() }() // read-only
	d, err := changes.BuildOptions(ctx, wh.DB(), f.snapshot, changes.Options{Attention: wire.ReaderAttentionSettings(cfg, wh), Top: *top,
		DiscoverMinVisits: cfg.Discover.MinVisits, Against: *against})
	if err != nil {
		return err
	}
	switch *format {
	case "json":
		return writeChangesJSON(env.Stdout, d)
	case "csv":
		return writeChangesCSV(env.Stdout, d)
	}
	return toTerminal(env.Stdout, d.WriteText)
}

// changesJSON is the digest for scripts: every list under a snake_case name, figures as
// numbers in their units (whole visits, percent changes), the needs-attention rows as the
// view and the webhook have them.
type changesJSON struct {
	Month          string         `json:"month"`
	PreviousMonth  *string        `json:"previous_month"`
	Domains        int            `json:"domains_compared"`
	Incomplete     []string       `json:"incomplete_months"`
	AttentionTitle string         `json:"needs_attention_title"` // "Needs attention in 2026-10: nothing unusual" for a quiet month
	Attention      []attentionRow `json:"needs_attention"`
	Falls          []changes.Fall `json:"largest_falls"`
	WorthTracking  any            `json:"worth_tracking"`
	Movers         any            `json:"movers"`
	Competitors    any            `json:"competitors"`
	AIPlatforms    any            `json:"ai_platforms"`
	Keywords       any            `json:"keywords"`
	Countries      any            `json:"countries"`
	QualityIssues  any            `json:"quality_issues"`
}

// attentionRow is one needs_attention row in the JSON and CSV forms of changes and show.
type attentionRow struct {
	Month        string   `json:"snapshot_month"`
	Rank         int      `json:"rank"`
	Domain       string   `json:"domain"`
	Kind         string   `json:"kind"`
	Metric       *string  `json:"metric"`
	Channel      *string  `json:"channel"`
	Value        *float64 `json:"value"`
	Previous     *float64 `json:"previous_value"`
	ChangePct    *float64 `json:"change_pct"`
	ChangePoints *float64 `json:"change_points"`
	Z            *float64 `json:"z"`
	Severity     string   `json:"severity"`
	Reason       string   `json:"reason"`
}

func attentionRows(a *changes.Attention) []attentionRow {
	rows := []attentionRow{}
	if a == nil {
		return rows
	}
	for _, d := range a.Domains {
		for _, r := range d.Reasons {
			rows = append(rows, attentionRow{Month: a.Month, Rank: r.Rank, Domain: d.Domain, Kind: r.Kind, Metric: orNil(r.Metric), Channel: orNil(r.Channel),
				Value: r.Value, Previous: r.Previous, ChangePct: r.ChangePct, ChangePoints: r.ChangePoints, Z: r.Z, Severity: r.Severity, Reason: r.Text})
		}
	}
	return rows
}

func orNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// changesMemoryLimit is DuckDB's memory_limit for `changes`, below discover's: its other lists
// are read stored, but the worth-tracking list is discover's ranking computed at each read, with
// the process's own ~150 MB beside it. At 100,000 domains, two months (issue 44: ≤ 600 MB): peak
// 701 MB under the readers' 384 MB, 620–634 MB under 300 MB, 577–596 MB under 256 MB, 518–528 MB
// under 200 MB (3.9–4.9 s wall at load 1).
const changesMemoryLimit = "224MB"

func writeChangesJSON(w io.Writer, d *changes.Digest) error {
	out := changesJSON{Month: d.Month, PreviousMonth: orNil(d.PreviousMonth), Domains: d.Domains, Incomplete: nonNil(d.Incomplete),
		Attention: attentionRows(d.Attention), Falls: nonNil(d.LargestFalls), WorthTracking: snakeJSON(nonNil(d.WorthTracking)),
		Movers: snakeJSON(nonNil(d.Movers)), Competitors: snakeJSON(nonNil(d.Competitors)), AIPlatforms: snakeJSON(nonNil(d.AIPlatforms)),
		Keywords: snakeJSON(nonNil(d.Keywords)), Countries: snakeJSON(nonNil(d.Countries)), QualityIssues: snakeJSON(nonNil(d.QualityIssues))}
	if d.Attention != nil {
		out.AttentionTitle = d.Attention.Title()
	} else {
		out.AttentionTitle = d.AttentionNote
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// changesCSVHeader is the one table the CSV form writes: a row per line of every list,
// the list named in section, each figure in its own unit's column.
var changesCSVHeader = []string{"snapshot_month", "section", "rank", "domain", "kind", "metric", "channel", "value", "previous_value",
	"change_pct", "change_points", "z", "severity", "reason"}

func writeChangesCSV(w io.Writer, d *changes.Digest) error {
	cw := csv.NewWriter(w)
	_ = cw.Write(changesCSVHeader)
	for _, r := range attentionRows(d.Attention) {
		_ = cw.Write([]string{d.Month, "needs_attention", strconv.Itoa(r.Rank), r.Domain, r.Kind, str(r.Metric), str(r.Channel), num(r.Value), num(r.Previous),
			num(r.ChangePct), num(r.ChangePoints), num(r.Z), r.Severity, r.Reason})
	}
	for _, f := range d.LargestFalls {
		_ = cw.Write([]string{d.Month, "largest_falls", strconv.Itoa(f.Rank), f.Domain, "fall", "visits", "", num(&f.Visits), num(&f.Previous),
			num(&f.ChangePct), "", "", "", ""})
	}
	for _, c := range d.WorthTracking {
		var visits *float64
		if c.TotalVisits >= 0 {
			v := math.Round(c.TotalVisits)
			visits = &v
		}
		_ = cw.Write([]string{d.Month, "worth_tracking", strconv.Itoa(c.Rank), c.Domain, "candidate", "visits", "", num(visits), "", "", "", "", "", c.Reason})
	}
	for _, m := range d.Movers {
		pct, points := m.ChangeRatio, (*float64)(nil)
		if m.Metric == changes.MetricChannelShare || m.Metric == changes.MetricAITrafficShare {
			pts := 100 * m.Change
			pct, points = nil, &pts
		} else if pct != nil {
			p := 100 * *pct
			pct = &p
		}
		_ = cw.Write([]string{d.Month, "movers", strconv.Itoa(m.Rank), m.Domain, "mover", m.Metric, m.Channel, num(&m.Current), num(&m.Previous),
			num(pct), num(points), "", "", ""})
	}
	for _, c := range d.Competitors {
		_ = cw.Write([]string{d.Month, "competitors", strconv.Itoa(c.Position), c.Domain, c.Change, "", "", "", "", "", "", "", "", c.Competitor})
	}
	for _, p := range d.AIPlatforms {
		_ = cw.Write([]string{d.Month, "ai_platforms", "", p.Domain, p.Change, "ai_platform_share_pct", "", num(p.SharePct), "", "", "", "", "", p.Platform})
	}
	for _, k := range d.Keywords {
		_ = cw.Write([]string{d.Month, "keywords", strconv.Itoa(k.Position), k.Domain, k.Change, "", "", "", "", "", "", "", "", k.Keyword})
	}
	for _, c := range d.Countries {
		_ = cw.Write([]string{d.Month, "countries", "", c.Domain, c.Change, "", "", "", "", "", "", "", "", c.CountryCode})
	}
	for _, q := range d.QualityIssues {
		_ = cw.Write([]string{d.Month, "quality", "", q.Domain, q.Check, "", "", "", "", "", "", "", q.Severity, q.Table + ": " + q.Observed + ", expected " + q.Expected})
	}
	cw.Flush()
	return cw.Error()
}

func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// num writes a figure exactly (shortest form that reads back the same), "" for none.
func num(f *float64) string {
	if f == nil {
		return ""
	}
	return strconv.FormatFloat(*f, 'f', -1, 64)
}
