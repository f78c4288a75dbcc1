package main

import (
	"context"
	"fmt"
	"io"

	"sitewatch/pipeline"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/discover"
	"sitewatch/pipeline/textout"
)

var discoverHelp = help{
	summary: "the competitors your watchlist points at but does not track, new and rising first (0 credits); --add appends them",
	usage:   "[--config F] [--snapshot YYYY-MM] [--top N] [--format table|csv|json] [--add N [--budget CREDITS] [--dry-run]]",
	examples: []string{
		"sitewatch discover",
		"sitewatch discover --top 50 --format csv > candidates.csv",
		"sitewatch discover --add 5 --budget 10 --dry-run   # the diff of domains.yaml, nothing written",
		"sitewatch discover --add 5 --budget 10             # at most 5 domains, 10 credits a month",
	},
}

// discoverFlags are the command's own flags.
type discoverFlags struct {
	top    int
	format string
	add    int
	budget int64
	dryRun bool
}

func cmdDiscover(ctx context.Context, args []string, env pipeline.Env) error {
	f := newFlags("discover", env, true, true)
	f.fs.Lookup("snapshot").Usage = "the `month` whose similar sites are counted, YYYY-MM (default: the latest complete month)"
	var d discoverFlags
	f.fs.IntVar(&d.top, "top", 20, "list the best `N` candidates (0: all)")
	f.fs.StringVar(&d.format, "format", "table", "output `format`: table, csv or json")
	f.fs.IntVar(&d.add, "add", 0, "append the best `N` candidates to the config's domains list")
	f.fs.Int64Var(&d.budget, "budget", -1, "with --add: the monthly `credits` the added domains may cost, 2 each (-1: no limit)")
	f.fs.BoolVar(&d.dryRun, "dry-run", false, "with --add: print the diff of the config file, write nothing")
	f.check = func() error { return d.check(f) }
	if err := f.parseArgs(args, 0, 0); err != nil {
		return err
	}
	wf, err := discover.ReadWatchfile(f.config)
	if err != nil {
		if _, loadErr := config.Load(f.config, env.Getenv); loadErr != nil {
			return loadErr // its message for a missing or unreadable file
		}
		return &config.Error{Path: f.config, Msg: err.Error()}
	}
	// The config is parsed from the very bytes --add edits, so the check before the write
	// compares against what the watchlist was computed from.
	cfg, err := config.Parse(f.config, wf.Data, env.Getenv)
	if err != nil {
		return err
	}
	top := d.top
	if d.add > 0 {
		top = discover.Affordable(d.add, d.budget)
		if top == 0 {
			return writeNothingAffordable(env.Stdout, d)
		}
	}
	month, cands, err := readCandidates(ctx, cfg, env, f.snapshot, top)
	if err != nil {
		return err
	}
	if d.add > 0 {
		return addCandidates(env.Stdout, wf, month, cands, d, env)
	}
	return writeCandidates(env.Stdout, d.format, month, cands)
}

func (d *discoverFlags) check(f *commandFlags) error {
	if _, err := newFormatter(d.format, io.Discard, false); err != nil {
		return err
	}
	if err := atLeast("top", d.top, 0); err != nil {
		return err
	}
	if f.set("add") {
		if err := atLeast("add", d.add, 1); err != nil {
			return err
		}
	}
	if f.set("budget") && d.budget < 0 {
		return &UsageError{Msg: fmt.Sprintf("--budget %d is out of range: use 0 or more credits a month", d.budget)}
	}
	for _, name := range []string{"budget", "dry-run"} {
		if f.set(name) && !f.set("add") {
			return &UsageError{Msg: fmt.Sprintf("--%s goes with --add N", name)}
		}
	}
	return nil
}

// readCandidates opens the warehouse read-only (a run may hold it: DuckDB then says so) and
// reads the month's best candidates.
func readCandidates(ctx context.Context, cfg *config.Config, env pipeline.Env, month string, top int) (_ string, _ []discover.Candidate, err error) {
	wh, err := openWarehouse(ctx, cfg, env, true)
	if err != nil {
		return "", nil, err
	}
	defer closeInto(&err, wh)
	wl := config.NewWatchlist(cfg)
	return discover.Candidates(ctx, wh.DB(), discover.Query{Snapshot: month, Top: top, Watchlist: wl.Domains})
}

// discoverColumns are the columns of the output, in every format.
var discoverColumns = []column{
	{"rank", parseType("BIGINT")}, {"domain", parseType("VARCHAR")}, {"reason", parseType("VARCHAR")},
	{"watched_by", parseType("BIGINT")}, {"total_visits", parseType("DOUBLE")}, {"global_rank", parseType("BIGINT")},
	{"category", parseType("VARCHAR")}, {"is_new", parseType("BOOLEAN")}, {"is_rising", parseType("BOOLEAN")},
	{"score", parseType("DOUBLE")}, {"listed_by", parseType("VARCHAR")},
}

func candidateRow(c discover.Candidate) []any {
	var visits, rank, category any
	if c.TotalVisits >= 0 {
		visits = c.TotalVisits
	}
	if c.GlobalRank > 0 {
		rank = c.GlobalRank
	}
	if c.Category != "" {
		category = c.Category
	}
	return []any{int64(c.Rank), c.Domain, c.Reason, int64(c.WatchedBy), visits, rank, category, c.New, c.Rising, c.Score, c.ListedBy}
}

func writeCandidates(w io.Writer, format, month string, cands []discover.Candidate) error {
	out, err := newFormatter(format, w, false)
	if err != nil {
		return err
	}
	if format == "table" {
		o := textout.New(w)
		o.Printf("discover %s: domains your watchlist's similar sites point at that it does not track (0 credits)\n", month)
		if err := o.Err(); err != nil {
			return err
		}
	}
	if err := out.header(discoverColumns); err != nil {
		return err
	}
	for _, c := range cands {
		if err := out.row(candidateRow(c)); err != nil {
			return err
		}
	}
	return out.end()
}

func writeNothingAffordable(w io.Writer, d discoverFlags) error {
	o := textout.New(w)
	o.Printf("--budget %d credits a month allows no domain (each costs %d credits a month): nothing added\n", d.budget, discover.CreditsPerDomain)
	return o.Err()
}

// addCandidates appends the candidates to the config file (or prints the diff with --dry-run).
// A file edited meanwhile or not writable is refused with exit 2, nothing written.
func addCandidates(w io.Writer, wf *discover.Watchfile, month string, cands []discover.Candidate, d discoverFlags, env pipeline.Env) error {
	o := textout.New(w)
	if len(cands) == 0 {
		o.Printf("no candidate outside the watchlist in %s: nothing added\n", month)
		return o.Err()
	}
	domains := make([]string, len(cands))
	for i, c := range cands {
		domains[i] = c.Domain
	}
	data, adds, err := wf.Append(domains, env.Now(), month)
	if err != nil {
		return &config.Error{Path: wf.Path, Msg: err.Error()}
	}
	if d.dryRun {
		if err := discover.WriteDiff(w, wf.Path, wf.Data, adds); err != nil {
			return err
		}
	} else if err := wf.Replace(data); err != nil {
		return &config.Error{Path: wf.Path, Msg: err.Error()} // exit 2: changed meanwhile or not writable
	}
	verb := "added"
	if d.dryRun {
		verb = "would add"
	}
	for i, c := range cands {
		o.Printf("%s %s (line %d): %d credits a month, %d a year — %s\n", verb, c.Domain, adds[i].Line, discover.CreditsPerDomain, discover.YearlyCost(1), c.Reason)
	}
	o.Printf("%s %s from %s: %d credits a month, %d a year", verb, textout.Plural(len(cands), "domain", "domains"), month,
		int64(len(cands))*discover.CreditsPerDomain, discover.YearlyCost(len(cands)))
	if d.add > len(cands) {
		o.Printf(" (%d asked", d.add)
		if d.budget >= 0 {
			o.Printf(", --budget %d", d.budget)
		}
		o.Printf(")")
	}
	if d.dryRun {
		o.Printf("; dry run: %s unchanged\n", wf.Path)
	} else {
		o.Printf("; previous file kept as %s; the next run fetches them (`sitewatch validate` lists them, `sitewatch check` shows the cost)\n", wf.Path+discover.PrevSuffix)
	}
	return o.Err()
}
