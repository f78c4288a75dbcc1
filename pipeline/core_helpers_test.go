package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/fetchtest"
	"sitewatch/pipeline/model"
	"sitewatch/pipeline/storetest"
	"sitewatch/schema"
)

// The fakes implement the core's ports (checked at compile time).
var (
	_ QueueFetcher  = (*fetchtest.Fetcher)(nil)
	_ SourceCounter = (*fetchtest.Fetcher)(nil)
	_ Store         = (*storetest.Store)(nil)
)

// Data months of the core tests: the API serves jun unless a test turns it.
const (
	may = "2026-05"
	jun = "2026-06"
	jul = "2026-07"
)

// core is one run of the core against the fakes: a config, an in-memory store holding what
// earlier runs left, and a scripted API.
type core struct {
	t     *testing.T
	cfg   *config.Config
	opts  RunOptions
	store *storetest.Store
	api   *fetchtest.Fetcher
	obs   Observer // nil: nothing watches the run
}

// newCore is a run of domains against an API serving served with credits to spare, and an
// empty store. Tests change c.cfg, c.opts, c.store or c.api (c.useAPI) before c.run.
func newCore(t *testing.T, served string, domains ...string) *core {
	t.Helper()
	dir := memDir(t)
	cfg := &config.Config{Domains: domains, API: config.APIConfig{Mode: "direct"},
		Warehouse: config.WarehouseConfig{DuckDB: filepath.Join(dir, "sitewatch.duckdb"), Parquet: filepath.Join(dir, "parquet")}}
	c := &core{t: t, cfg: cfg, store: storetest.New()}
	c.useAPI(fetchtest.Options{Month: served, Balance: 1000})
	return c
}

// memDir is a temporary directory in memory (/dev/shm) when the machine has one, else
// t.TempDir(): a run writes its live-status file beside the warehouse and fsyncs it at start
// and end, which on a busy disk took most of a core test's time (40 ms of 50).
func memDir(t *testing.T) string {
	t.Helper()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "sitewatch-coretest-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}

// useAPI replaces the API with one made of opts (its credit source named as the config's).
func (c *core) useAPI(opts fetchtest.Options) *fetchtest.Fetcher {
	opts.Source = c.cfg.API.Mode
	c.api = fetchtest.New(opts)
	return c.api
}

// outcome is what a run returned.
type outcome struct {
	sum  *Summary
	err  error
	exit int
}

// run executes the run (everything Run does between opening the warehouse and closing it).
func (c *core) run() outcome {
	c.t.Helper()
	env := Env{}.WithDefaults()
	r := newRunState(c.cfg, c.opts, env, c.store, c.api, config.NewWatchlist(c.cfg))
	if c.obs != nil {
		r.obs = c.obs
	}
	err := r.execute(context.Background())
	return outcome{sum: r.sum, err: err, exit: exitOf(err)}
}

// exitOf is the exit code cmd/sitewatch's ExitCode gives a run's error, from the same core
// predicates (the core cannot import cmd; usage errors, exit 2, never reach a run).
func exitOf(err error) int {
	switch {
	case err == nil:
		return 0
	case IsCreditStop(err):
		return 3
	case errors.Is(err, model.ErrUnauthorized):
		return 4
	case errors.As(err, new(*MonthMismatchError)):
		return 5
	}
	return 1
}

// inBubble runs f in a synctest bubble: time.Now and the run's tickers are a fake clock that
// starts at 2000-01-01 00:00 UTC and moves only when every goroutine waits (time.Sleep of a
// day returns at once).
func inBubble(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	synctest.Test(t, f)
}

// call is a compact name of one call for comparing call logs: "o:a.com", "s:a.com", "c".
func callName(r model.Request) string {
	switch r.Endpoint {
	case schema.EndpointOverview:
		return "o:" + r.Domain
	case schema.EndpointSimilar:
		return "s:" + r.Domain
	}
	return "c"
}

// callNames names the calls the API answered, in order.
func (c *core) callNames() []string {
	var out []string
	for _, r := range c.api.Calls() {
		out = append(out, callName(r))
	}
	return out
}

// ledgerCredits sums the ledger's credits by outcome.
func (c *core) ledgerCredits() map[string]int64 {
	out := map[string]int64{}
	for _, row := range c.store.Ledger() {
		out[row.Outcome] += row.Credits
	}
	return out
}

// checkLedger asserts the ledger holds what the API charged but short, each row of the run.
func (c *core) checkLedger(o outcome, short int64) {
	c.t.Helper()
	for _, row := range c.store.Ledger() {
		if row.RunID != o.sum.RunID {
			c.t.Errorf("ledger row %+v: run %q, want %q", row, row.RunID, o.sum.RunID)
		}
	}
	if got, want := c.store.Credits(), c.api.Stats().CreditsSpent-short; got != want {
		c.t.Errorf("ledger credits %d, want %d (the API's charges)", got, want)
	}
	if got, want := int64(o.sum.CreditsSpent), c.api.Stats().CreditsSpent; got != want {
		c.t.Errorf("summary credits %d, want %d", got, want)
	}
}

// lastRun is the runs row the run left.
func (c *core) lastRun() (status string, credits int) {
	c.t.Helper()
	runs := c.store.Runs()
	if len(runs) == 0 {
		c.t.Fatal("no runs row")
	}
	r := runs[len(runs)-1]
	return r.Status, r.CreditsSpent
}

// undatedOverview returns an overview body of domain without the fields that name its
// month (traffic.period, meta.snapshot_date).
func undatedOverview(t *testing.T, domain string) []byte {
	t.Helper()
	var body map[string]any
	if err := json.Unmarshal(atlastest.NewGenerator(1, jun).OverviewBody(domain), &body); err != nil {
		t.Fatal(err)
	}
	delete(body["traffic"].(map[string]any), "period")
	delete(body["meta"].(map[string]any), "snapshot_date")
	out, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// hours ago is the bubble's now minus h hours.
func hoursAgo(h float64) time.Time { return time.Now().Add(-time.Duration(h * float64(time.Hour))) }

func sameCalls(got, want []string) bool { return slices.Equal(got, want) }

// coreCase is one run of a table-driven core test: what the store holds and the API answers
// (setup), and what the run must end with. The ledger always equals the API's charges.
type coreCase struct {
	name       string
	domains    []string // nil: a.com, b.com, c.com
	setup      func(c *core)
	wantExit   int
	wantStatus string
	wantCalls  []string // the calls the API answered, in order (nil: not checked)
	// ledgerShort is the charged credits a storage failure kept off the ledger (0: none).
	ledgerShort int64
	check       func(t *testing.T, c *core, o outcome)
}

// runCases runs each case in its own bubble against fresh fakes.
func runCases(t *testing.T, cases []coreCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				domains := tc.domains
				if domains == nil {
					domains = []string{"a.com", "b.com", "c.com"}
				}
				c := newCore(t, jun, domains...)
				if tc.setup != nil {
					tc.setup(c)
				}
				o := c.run()
				if got, want := o.exit, tc.wantExit; got != want {
					t.Errorf("exit %d, want %d (error: %v)", got, want, o.err)
				}
				if got, want := o.sum.Status, tc.wantStatus; got != want {
					t.Errorf("status %q, want %q (error: %v)", got, want, o.err)
				}
				if status, _ := c.lastRun(); status != o.sum.Status {
					t.Errorf("runs row status %q, want the summary's %q", status, o.sum.Status)
				}
				if tc.wantCalls != nil && !sameCalls(c.callNames(), tc.wantCalls) {
					t.Errorf("calls\n got %v\nwant %v", c.callNames(), tc.wantCalls)
				}
				c.checkLedger(o, tc.ledgerShort)
				if tc.check != nil {
					tc.check(t, c, o)
				}
			})
		})
	}
}

// wantLoaded asserts the domains loaded in month.
func wantLoaded(t *testing.T, c *core, month string, want ...string) {
	t.Helper()
	if got := c.store.Loaded(month); !slices.Equal(got, want) {
		t.Errorf("loaded in %s: %v, want %v", month, got, want)
	}
}

func requestOf(e model.FetchError) model.Request {
	return model.Request{Endpoint: e.Endpoint, Domain: e.Domain}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestFakesNameTheCoreStatuses keeps storetest's copy of the complete status (it cannot
// import the core) equal to the core's.
func TestFakesNameTheCoreStatuses(t *testing.T) {
	if got, want := storetest.StatusComplete, StatusComplete; got != want {
		t.Errorf("storetest.StatusComplete %q, want %q", got, want)
	}
}
