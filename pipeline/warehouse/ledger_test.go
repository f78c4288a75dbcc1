package warehouse

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/model"
	"sitewatch/schema"
)

func storePair(t *testing.T, w *Warehouse, snapshot, domain, runID string, refresh bool, gen *atlastest.Generator) {
	t.Helper()
	for _, ep := range schema.DomainEndpoints {
		storeOne(t, w, snapshot, domain, runID, refresh, ep, generate(gen, ep, domain))
	}
}

func storeOne(t *testing.T, w *Warehouse, snapshot, domain, runID string, refresh bool, ep schema.Endpoint, body []byte) {
	t.Helper()
	raw := model.Raw{Endpoint: ep, Domain: domain, Body: body, FetchedAt: fetchedAt, RunID: runID, Credits: 1, Refresh: refresh}
	if err := w.Store(context.Background(), snapshot, raw); err != nil {
		t.Fatal(err)
	}
}

// TestLedgerWithBody: every answer Store receives with a run ID has its ledger row, committed
// with the body, including refused and unloadable ones; RecordCharge adds the others.
func TestLedgerWithBody(t *testing.T) {
	w := testWarehouse(t, "")
	ctx := context.Background()
	gen := atlastest.NewGenerator(1, snap)
	storePair(t, w, snap, "a.example", "run1", false, gen)
	bad := model.Raw{Endpoint: schema.EndpointOverview, Domain: "b.example", Body: []byte(`{"success": true}`), RunID: "run1", Credits: 1}
	if err := w.Store(ctx, snap, bad); !errors.Is(err, schema.ErrLegacyV1) {
		t.Fatalf("legacy body: %v, want ErrLegacyV1", err)
	}
	if err := w.RecordCharge(ctx, model.Charge{RunID: "run1", SnapshotMonth: snap, Domain: "c.example", Endpoint: schema.EndpointSimilar, Credits: 2, Outcome: "secret_in_body"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got := queryRows(t, w.DB(), `SELECT domain, endpoint, http_status, credits, outcome FROM run_calls ORDER BY domain, endpoint`)
	want := []string{
		`"a.example" | "site-overview" | 200 | 1 | "stored"`,
		`"a.example" | "site-similar" | 200 | 1 | "stored"`,
		`"b.example" | "site-overview" | 200 | 1 | "refused"`,
		`"c.example" | "site-similar" | 200 | 2 | "secret_in_body"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("run_calls:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := count(t, w.DB(), `SELECT count(*) FROM raw_responses WHERE run_id = 'run1'`); n != 2 {
		t.Errorf("raw_responses with run_id: %d, want 2", n)
	}
}

// TestRefreshPairsOneRun: a refresh stopped between a domain's two calls does not load the new
// body beside the old partner; the domain loads once both bodies of one run are in.
func TestRefreshPairsOneRun(t *testing.T) {
	w := testWarehouse(t, "")
	ctx := context.Background()
	old := atlastest.NewGenerator(1, snap)
	storePair(t, w, snap, "a.example", "run1", false, old)
	fresh := atlastest.NewGenerator(2, snap)
	storeOne(t, w, snap, "a.example", "run2", true, schema.EndpointOverview, generate(fresh, schema.EndpointOverview, "a.example"))
	st, err := w.State(ctx, snap)
	if err != nil {
		t.Fatal(err)
	}
	if st.Loaded("a.example") {
		t.Fatal("a refreshed overview was loaded beside the previous run's similar-sites answer")
	}
	if st.Stored("a.example").Has(schema.EndpointSimilar) || !st.Stored("a.example").Has(schema.EndpointOverview) {
		t.Fatalf("stored after a half refresh: %v, want only the new overview (the next run fetches its partner)", st.Stored("a.example"))
	}
	// The next run (not a refresh) fetches the missing partner and the pair loads.
	storeOne(t, w, snap, "a.example", "run3", false, schema.EndpointSimilar, generate(fresh, schema.EndpointSimilar, "a.example"))
	if st, err = w.State(ctx, snap); err != nil || !st.Loaded("a.example") {
		t.Fatalf("after the partner arrived: loaded %v, %v", st.Loaded("a.example"), err)
	}
	ref := testWarehouse(t, "")
	storePair(t, ref, snap, "a.example", "r", false, fresh)
	if got, want := dumpTables(t, w.DB(), ""), dumpTables(t, ref.DB(), ""); got != want {
		t.Error("the refreshed domain's rows differ from a load of the fresh pair alone")
	}
}

// TestResumePairsAcrossOpens: a pair completed by another process (a resumed run) loads from
// the stored partner, as one loaded in a single process.
func TestResumePairsAcrossOpens(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	gen := atlastest.NewGenerator(1, snap)
	w, err := Open(ctx, Options{DuckDBPath: filepath.Join(dir, "w.duckdb")})
	if err != nil {
		t.Fatal(err)
	}
	storeOne(t, w, snap, "a.example", "run1", false, schema.EndpointSimilar, generate(gen, schema.EndpointSimilar, "a.example"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w = testWarehouse(t, "")
	w2, err := Open(ctx, Options{DuckDBPath: filepath.Join(dir, "w.duckdb")})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	storeOne(t, w2, snap, "a.example", "run2", false, schema.EndpointOverview, generate(gen, schema.EndpointOverview, "a.example"))
	storePair(t, w, snap, "a.example", "x", false, gen)
	if got, want := dumpTables(t, w2.DB(), ""), dumpTables(t, w.DB(), ""); got != want {
		t.Error("a pair completed across processes differs from one loaded in one process")
	}
}

// TestPairsBeyondTheHalvesBound: at the bound of decoded halves the longest-waiting give way
// to new ones; their partners read them back, the rows equal those of pairs loaded from
// memory, and no half stays counted.
func TestPairsBeyondTheHalvesBound(t *testing.T) {
	w := testWarehouse(t, "")
	w.maxHalves = 2
	gen := atlastest.NewGenerator(1, snap)
	domains := []string{"a.example", "b.example", "c.example", "d.example", "e.example"}
	for _, d := range domains {
		storeOne(t, w, snap, d, "run1", false, schema.EndpointOverview, generate(gen, schema.EndpointOverview, d))
	}
	if held, waiting := heldHalves(w); held != 2 || waiting != 2 {
		t.Fatalf("%d halves held by %d pairs after 5 overviews, want the bound: 2 by 2", held, waiting)
	}
	for _, d := range []string{"d.example", "e.example"} {
		if !w.waiting[domainKey{snap, d}].has(0) {
			t.Errorf("%s's overview, among the newest two, was not kept", d)
		}
	}
	for _, d := range domains {
		storeOne(t, w, snap, d, "run1", false, schema.EndpointSimilar, generate(gen, schema.EndpointSimilar, d))
	}
	if held, waiting := heldHalves(w); held != 0 || waiting != 0 {
		t.Errorf("%d halves held by %d pairs after every pair completed, want none", held, waiting)
	}
	ref := testWarehouse(t, "")
	for _, d := range domains {
		storePair(t, ref, snap, d, "run1", false, gen)
	}
	if got, want := dumpTables(t, w.DB(), ""), dumpTables(t, ref.DB(), ""); got != want {
		t.Errorf("pairs completed from bodies read back differ from pairs loaded from memory:\n%s\nwant\n%s", got, want)
	}
}

// TestWaitOrderStaysBounded: the order of waiting pairs drops the entries of pairs that
// completed, so it does not grow with the run.
func TestWaitOrderStaysBounded(t *testing.T) {
	w := testWarehouse(t, "")
	gen := atlastest.NewGenerator(1, snap)
	for i := range 300 {
		storePair(t, w, snap, fmt.Sprintf("d%d.example", i), "run1", false, gen)
	}
	w.pmu.Lock()
	order, waiting := len(w.waitOrder), len(w.waiting)
	w.pmu.Unlock()
	if waiting != 0 || order > 65 {
		t.Errorf("after 300 completed pairs: %d waiting, %d entries in their order; want 0 and at most 65", waiting, order)
	}
}

func heldHalves(w *Warehouse) (held, waiting int) {
	w.pmu.Lock()
	defer w.pmu.Unlock()
	return w.halves, len(w.waiting)
}

// TestPartnerThatNoLongerDecodes: a stored body read back for pairing that no longer decodes
// makes the pair unloadable; both paid-for bodies stay, no row loads, and the ledger says so.
func TestPartnerThatNoLongerDecodes(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "w.duckdb")
	gen := atlastest.NewGenerator(1, snap)
	w, err := Open(ctx, Options{DuckDBPath: path})
	if err != nil {
		t.Fatal(err)
	}
	storeOne(t, w, snap, "a.example", "run1", false, schema.EndpointSimilar, generate(gen, schema.EndpointSimilar, "a.example"))
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := w.DB().ExecContext(ctx, `UPDATE raw_responses SET body = ?, body_encoding = 'identity' WHERE domain = 'a.example'`, []byte(`{"success": tru`)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w, err = Open(ctx, Options{DuckDBPath: path})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	overview := model.Raw{Endpoint: schema.EndpointOverview, Domain: "a.example", Body: generate(gen, schema.EndpointOverview, "a.example"), FetchedAt: fetchedAt, RunID: "run2", Credits: 1}
	var ue *UnloadableError
	if err := w.Store(ctx, snap, overview); !errors.As(err, &ue) || ue.Domain != "a.example" {
		t.Fatalf("Store beside a partner that no longer decodes: %v, want an *UnloadableError for a.example", err)
	}
	st, err := w.State(ctx, snap)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Stored("a.example").Has(schema.EndpointOverview) || !st.Stored("a.example").Has(schema.EndpointSimilar) || st.Loaded("a.example") {
		t.Errorf("Stored = %v, Loaded = %v: want both bodies kept and the domain not loaded", st.Stored("a.example"), st.Loaded("a.example"))
	}
	if n := count(t, w.DB(), `SELECT count(*) FROM sites`); n != 0 {
		t.Errorf("sites has %d rows for an unloadable pair, want 0", n)
	}
	if got := queryRows(t, w.DB(), `SELECT outcome FROM run_calls WHERE run_id = 'run2'`); len(got) != 1 || got[0] != `"`+model.OutcomeUnloadable+`"` {
		t.Errorf("ledger of the arriving answer: %v, want [%s]", got, model.OutcomeUnloadable)
	}
	if held, waiting := heldHalves(w); held != 0 || waiting != 0 {
		t.Errorf("%d halves held by %d pairs after the pair failed, want none", held, waiting)
	}
}

// TestInTxRollsBackOnPanic: a panicking callback leaves nothing behind and the connection
// usable.
func TestInTxRollsBackOnPanic(t *testing.T) {
	w := testWarehouse(t, "")
	ctx := context.Background()
	func() {
		defer func() { _ = recover() }()
		_ = w.inTx(ctx, func(ctx context.Context) error {
			if _, err := w.load.ExecContext(ctx, `INSERT INTO countries VALUES ('XX', 'XXX', '999', 'Nowhere')`); err != nil {
				t.Fatal(err)
			}
			panic("callback panics")
		})
	}()
	if n := count(t, w.DB(), `SELECT count(*) FROM countries`); n != 0 {
		t.Errorf("%d rows survived a panicking transaction", n)
	}
	if err := w.StartRun(ctx, model.RunRecord{RunID: "after", SnapshotMonth: snap, StartedAt: fetchedAt, Status: "complete"}); err != nil {
		t.Fatalf("write after the panic: %v", err)
	}
}

func TestMonthCompleteSince(t *testing.T) {
	w := testWarehouse(t, "")
	ctx := context.Background()
	if _, ok, err := w.MonthCompleteSince(ctx, snap); ok || err != nil {
		t.Fatalf("no run yet: %v %v", ok, err)
	}
	for i, status := range []string{"failed", "complete", "up_to_date", "complete"} {
		fin := fetchedAt.Add(time.Duration(i) * time.Hour)
		if err := w.StartRun(ctx, model.RunRecord{RunID: fmt.Sprint("r", i), SnapshotMonth: snap, StartedAt: fin, FinishedAt: &fin, Status: status}); err != nil {
			t.Fatal(err)
		}
	}
	got, ok, err := w.MonthCompleteSince(ctx, snap)
	if want := fetchedAt.Add(time.Hour); !ok || err != nil || !got.Equal(want) {
		t.Errorf("MonthCompleteSince = %v %v %v, want %v", got, ok, err, want)
	}
}

// TestOpenCleansOnlyOwnStaging: hidden *.tmp files of other programs stay; ours go, also
// under a symlinked Parquet root.
func TestOpenCleansOnlyOwnStaging(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	part := filepath.Join(real, "sites", "snapshot_month=2026-11")
	if err := os.MkdirAll(part, 0o755); err != nil {
		t.Fatal(err)
	}
	ours := filepath.Join(part, ".data_0.parquet.0123456789abcdef.tmp")
	foreign := []string{filepath.Join(real, ".editor-swap.tmp"), filepath.Join(part, ".other.tmp"), filepath.Join(real, "notes", ".x.tmp")}
	for _, f := range append([]string{ours}, foreign...) {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(dir, "parquet")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	w, err := Open(context.Background(), Options{DuckDBPath: filepath.Join(dir, "w.duckdb"), ParquetDir: link})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := os.Stat(ours); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("our staging leftover under a symlinked root survived (%v)", err)
	}
	for _, f := range foreign {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("a file that is not ours was touched: %v", err)
		}
	}
}

// TestOpenChecksWritable: a Parquet root that cannot be written fails Open (before any paid
// call), naming the key. A file in the way stands in for a read-only mount, which root (as in
// CI containers) could write anyway.
func TestOpenChecksWritable(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "not-a-dir")
	if err := os.WriteFile(blocker, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), Options{DuckDBPath: filepath.Join(dir, "w.duckdb"), ParquetDir: filepath.Join(blocker, "parquet")})
	if err == nil || !strings.Contains(err.Error(), "warehouse.parquet") {
		t.Fatalf("Open with an unwritable Parquet root: %v, want an error naming warehouse.parquet", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "w.duckdb")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the DuckDB file was created before the check failed (%v)", err)
	}
}

// TestAbandonedAfterKill kills a child process that committed k charged answers of a running
// run (and had more pending but not committed), then opens the warehouse: the run is
// abandoned with exactly the committed credits and requests.
func TestAbandonedAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process and kills it; skipped in -short")
	}
	path := filepath.Join(t.TempDir(), "w.duckdb")
	const committed = 7
	cmd := exec.Command(os.Args[0], "-test.run=^TestAbandonChild$")
	cmd.Env = append(os.Environ(), "SITEWATCH_ABANDON_CHILD="+path+":"+strconv.Itoa(committed))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() && sc.Text() != "ready" {
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	w, err := Open(context.Background(), Options{DuckDBPath: path})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ab := w.Abandoned()
	if len(ab) != 1 {
		t.Fatalf("abandoned runs: %+v, want 1", ab)
	}
	r := ab[0]
	// committed answers (ceil(committed/2) domains of 2 calls) plus one fetch error.
	if r.Status != StatusAbandoned || r.CreditsSpent != committed || r.Requests != committed+1 || r.FinishedAt == nil {
		t.Errorf("abandoned run: %+v; want %d credits, %d requests, a finish time", r, committed, committed+1)
	}
	if r.DomainsLoaded != committed/2 {
		t.Errorf("domains loaded %d, want %d", r.DomainsLoaded, committed/2)
	}
	runs, err := w.Runs(context.Background(), 0)
	if err != nil || len(runs) != 1 || runs[0].Status != StatusAbandoned || runs[0].CreditsSpent != committed {
		t.Errorf("runs table after open: %+v %v", runs, err)
	}
}

// TestAbandonChild is not a test: the child of TestAbandonedAfterKill.
func TestAbandonChild(t *testing.T) {
	spec := os.Getenv("SITEWATCH_ABANDON_CHILD")
	if spec == "" {
		t.Skip("child process of TestAbandonedAfterKill")
	}
	path, nStr, _ := strings.Cut(spec, ":")
	n, _ := strconv.Atoi(nStr)
	ctx := context.Background()
	w, err := Open(ctx, Options{DuckDBPath: path, BatchWindow: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.StartRun(ctx, model.RunRecord{RunID: "dead", SnapshotMonth: snap, StartedAt: fetchedAt, Status: "running"}); err != nil {
		t.Fatal(err)
	}
	gen := atlastest.NewGenerator(1, snap)
	domains := atlastest.Domains(n)
	for i := range n {
		d := domains[i/2]
		storeOne(t, w, snap, d, "dead", false, schema.DomainEndpoints[i%2], generate(gen, schema.DomainEndpoints[i%2], d))
	}
	if err := w.RecordFetchError(ctx, model.FetchError{RunID: "dead", SnapshotMonth: snap, Domain: "x.example", Endpoint: schema.EndpointOverview, HTTPStatus: 500}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// Pending, never committed: the window is an hour and the process dies first.
	storeOne(t, w, snap, "late.example", "dead", false, schema.EndpointOverview, generate(gen, schema.EndpointOverview, "late.example"))
	fmt.Println("ready")
	time.Sleep(time.Minute)
}
