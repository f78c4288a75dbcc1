package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strconv"

	"sitewatch/pipeline/config"
	"sitewatch/pipeline/discover"
	"sitewatch/pipeline/numfmt"
	"sitewatch/pipeline/textout"
	"sitewatch/pipeline/warehouse"
)

var discoverHelp = help{
	summary: "the competitors your watchlist points at but does not track, above a size floor, new and rising first (0 credits); --add appends them",
	usage:   "[--config F] [--snapshot YYYY-MM] [--top N] [--min-visits V] [--format table|csv|json] [--add N [--budget CREDITS] [--dry-run]]",
	examples: []string{
		"sitewatch discover",
		"sitewatch discover --min-visits 0   # every size, the floor off",
		"sitewatch discover --top 50 --format csv > candidates.csv",
		"sitewatch discover --add 5 --budget 10 --dry-run   # the diff of domains.yaml, nothing written",
		"sitewatch discover --add 5 --budget 10             # at most 5 domains, 10 credits a month",
		"# the floor: discover.min_visits, default 5,000 visits a month (a domain costs 24 credits a year)",
		"# --add adds at most 25 without --budget; it exits 3 when the budget allows none, 1 when no candidate is left",
	},
}

// discoverFlags are the command's own flags.
type discoverFlags struct {
	top       int
	minVisits int64
	format    string
	add       int
	budget    int64
	dryRun    bool
}

func cmdDiscover(ctx context.Context, args []string, env Env) error {
	f := newFlags("discover", env, true, true)
	f.fs.Lookup("snapshot").Usage = "the `month` whose similar sites are counted, YYYY-MM (default: the latest complete month)"
	var d discoverFlags
	f.fs.IntVar(&d.top, "top", 20, "list the best `N` candidates (0: all)")
	f.fs.Int64Var(&d.minVisits, "min-visits", -1, "the size floor: leave out candidates with fewer `visits` a month (default: discover.min_visits, else 5000; 0: no floor)")
	f.fs.StringVar(&d.format, "format", "table", "output `format`: table, csv or json")
	f.fs.IntVar(&d.add, "add", 0, fmt.Sprintf("append the best `N` candidates to the config's domains list (at most %d without --budget)", defaultAddCap))
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
		top = d.addable()
		if top == 0 {
			return nothingAffordable(d)
		}
	}
	month, cands, err := readCandidates(ctx, cfg, env, f.snapshot, top, d.floor(cfg))
	if err != nil {
		return err
	}
	if d.add > 0 {
		return toTerminal(env.Stdout, func(w io.Writer) error { return addCandidates(w, wf, month, cands, d, env) })
	}
	return writeCandidates(env.Stdout, d.format, month, cands, discover.Query{MinVisits: d.floor(cfg)}.Floor())
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
	if f.set("min-visits") && d.minVisits < 0 {
		return &UsageError{Msg: fmt.Sprintf("--min-visits %d is out of range: use 0 (no floor) or more visits a month", d.minVisits)}
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

// discoverMemoryLimit is DuckDB's memory_limit for discover's one query, below the readers'
// warehouse.DefaultReadMemoryLimit: at 100,000 domains the process peaked at 585–627 MB
// under 384 MB (issue 44 asks ≤ 600 MB) and at 527–556 MB under 300 MB.
const discoverMemoryLimit = "300MB"

// readCandidates opens the warehouse read-only (a run may hold it: DuckDB then says so) and
// reads the month's best candidates.
func readCandidates(ctx context.Context, cfg *config.Config, env Env, month string, top int, floor int64) (_ string, _ []discover.Candidate, err error) {
	wh, err := openWarehouseWith(ctx, cfg, env, warehouse.Options{ReadOnly: true, MemoryLimit: discoverMemoryLimit})
	if err != nil {
		return "", nil, err
	}
	defer closeInto(&err, wh)
	wl := config.NewWatchlist(cfg)
	return discover.Candidates(ctx, wh.DB(), discover.Query{Snapshot: month, Top: top, Watchlist: wl.Domains, MinVisits: floor})
}

// discoverColumns are the columns of the output, in every format.
var discoverColumns = []column{
	{"rank", parseType("BIGINT")}, {"domain", parseType("VARCHAR")}, {"reason", parseType("VARCHAR")},
	{"watched_by", parseType("BIGINT")}, {"total_visits", parseType("BIGINT")}, {"global_rank", parseType("BIGINT")},
	{"category", parseType("VARCHAR")}, {"is_new", parseType("BOOLEAN")}, {"is_rising", parseType("BOOLEAN")},
	{"score", parseType("DOUBLE")}, {"listed_by", parseType("VARCHAR")},
}

func candidateRow(c discover.Candidate) []any {
	var visits, rank, category any
	if c.TotalVisits >= 0 {
		visits = int64(math.Round(c.TotalVisits)) // whole visits
	}
	if c.GlobalRank > 0 {
		rank = c.GlobalRank
	}
	if c.Category != "" {
		category = c.Category
	}
	return []any{int64(c.Rank), c.Domain, c.Reason, int64(c.WatchedBy), visits, rank, category, c.New, c.Rising, c.Score, c.ListedBy}
}

func writeCandidates(w io.Writer, format, month string, cands []discover.Candidate, floor int64) error {
	if format == "table" {
		return toTerminal(w, func(w io.Writer) error { return writeCandidateTable(w, month, cands, floor) })
	}
	out, err := newFormatter(format, w, false)
	if err != nil {
		return err
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

// writeCandidateTable is the terminal's form: figures in the report's number style (visits
// 21.5k, ranks #314,815), a dash for what the API did not return, never NULL.
func writeCandidateTable(w io.Writer, month string, cands []discover.Candidate, floor int64) error {
	o := textout.New(w)
	o.Printf("discover %s: domains your watchlist's similar sites point at that it does not track, %s (0 credits)\n",
		month, floorText(floor))
	if len(cands) == 0 {
		o.Printf("no candidate: `sitewatch discover --min-visits 0` lists every size\n")
		return o.Err()
	}
	tab := textout.Table{Header: []string{"rank", "domain", "visits", "global rank", "category", "watched by", "reason"},
		Right: []bool{true, false, true, true, false, true}}
	for _, c := range cands {
		visits, rank, category := numfmt.Dash, numfmt.Dash, numfmt.Dash
		if c.TotalVisits >= 0 {
			visits = numfmt.Count(c.TotalVisits)
		}
		if c.GlobalRank > 0 {
			rank = numfmt.Rank(c.GlobalRank)
		}
		if c.Category != "" {
			category = c.Category
		}
		tab.Add(strconv.Itoa(c.Rank), c.Domain, visits, rank, category, strconv.Itoa(c.WatchedBy), c.Reason)
	}
	if err := o.Err(); err != nil {
		return err
	}
	return tab.Write(w, "")
}

func floorText(floor int64) string {
	if floor <= 0 {
		return "every size"
	}
	return "with at least " + numfmt.Thousands(floor) + " visits a month"
}

// defaultAddCap bounds --add without --budget: a typo (--add 1000) never appends hundreds of
// domains; a budget is the user's own cap and replaces it.
const defaultAddCap = 25

// addable is how many domains --add may append: N within the budget, at most defaultAddCap
// when no budget is given.
func (d discoverFlags) addable() int {
	if d.budget < 0 {
		return min(d.add, defaultAddCap)
	}
	return discover.Affordable(d.add, d.budget)
}

// floor is the size floor of the candidates: --min-visits (0: none), else the config's.
func (d discoverFlags) floor(cfg *config.Config) int64 {
	switch {
	case d.minVisits == 0:
		return discover.NoFloor
	case d.minVisits > 0:
		return d.minVisits
	}
	return cfg.Discover.MinVisits // 0: the default
}

// NothingAddedError is `discover --add` that appended nothing: exit 3 when the budget allows
// no domain (as a run stopped for credits), 1 when no candidate is left; a cron job can tell.
type NothingAddedError struct {
	Msg    string
	Budget bool
}

func (e *NothingAddedError) Error() string { return e.Msg }

func (e *NothingAddedError) exitCode() int {
	if e.Budget {
		return ExitCredits
	}
	return ExitFailed
}

func nothingAffordable(d discoverFlags) error {
	return &NothingAddedError{Budget: true, Msg: fmt.Sprintf("discover: --budget %d credits a month allows no domain (each costs %d credits a month): nothing added",
		d.budget, discover.CreditsPerDomain)}
}

// addCandidates appends the candidates to the config file (or prints the diff with --dry-run).
// A file edited meanwhile or not writable is refused with exit 2, nothing written.
func addCandidates(w io.Writer, wf *discover.Watchfile, month string, cands []discover.Candidate, d discoverFlags, env Env) error {
	o := textout.New(w)
	if len(cands) == 0 {
		return &NothingAddedError{Msg: fmt.Sprintf("discover: no candidate outside the watchlist in %s at or above the size floor: nothing added "+
			"(`sitewatch discover --min-visits 0` lists every size)", month)}
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
	o.Printf("%s %s from %s: %s credits a month, %s a year", verb, textout.Plural(len(cands), "domain", "domains"), month,
		thousands(int64(len(cands))*discover.CreditsPerDomain), thousands(discover.YearlyCost(len(cands))))
	if d.add > len(cands) {
		o.Printf(" (%d asked", d.add)
		switch {
		case d.budget >= 0:
			o.Printf(", --budget %d", d.budget)
		case d.add > defaultAddCap:
			o.Printf("; at most %d without --budget", defaultAddCap)
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
