package warehouse

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"sitewatch/pipeline/model"
	"sitewatch/schema"
	"sitewatch/schema/flatten"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

const snap = "2026-11"

// TestGolden loads the fixtures both ways rows reach DuckDB — every record through an Arrow
// view, and every record as INSERT … VALUES (insertValues) — and compares each with the golden
// dump, so the two paths store the same values.
func TestGolden(t *testing.T) {
	var ledgers []string
	for _, path := range []struct {
		name    string
		minRows int64
	}{{"arrow views", 1}, {"insert values", 1 << 40}} {
		t.Run(path.name, func(t *testing.T) {
			defer func(prev int64) { arrowViewMinRows = prev }(arrowViewMinRows)
			arrowViewMinRows = path.minRows
			w := testWarehouse(t, "")
			checkGolden(t, w)
			ledgers = append(ledgers, rawAndLedger(t, w))
		})
	}
	if len(ledgers) == 2 && ledgers[0] != ledgers[1] {
		t.Errorf("raw_responses and run_calls differ between the paths:\n arrow views:\n%s\n insert values:\n%s", ledgers[0], ledgers[1])
	}
}

// rawAndLedger stores one more answer with a run (a ledger row, a run_id, a NULL-free
// body) and renders raw_responses and run_calls, which the golden dump does not cover.
func rawAndLedger(t *testing.T, w *Warehouse) string {
	t.Helper()
	f := fixtureDomains[0]
	raw := model.Raw{Endpoint: schema.EndpointOverview, Domain: f.domain, Body: fixture(t, "overview_"+f.name+".json"),
		FetchedAt: fetchedAt.Add(time.Hour), RunID: "run-golden", Credits: 1}
	if err := w.Store(context.Background(), snap, raw); err != nil {
		t.Fatal(err)
	}
	rows := queryRows(t, w.DB(), `SELECT snapshot_month, domain, endpoint, fetched_at, md5(body), octet_length(body), body_encoding, run_id
		FROM raw_responses ORDER BY ALL`)
	rows = append(rows, queryRows(t, w.DB(), `SELECT * FROM run_calls ORDER BY ALL`)...)
	if len(rows) < 2 {
		t.Fatalf("only %d raw and ledger rows", len(rows))
	}
	return strings.Join(rows, "\n")
}

func checkGolden(t *testing.T, w *Warehouse) {
	storeFixtures(t, w, snap)
	got := dumpTables(t, w.DB(), "")
	golden := filepath.Join("testdata", "golden_tables.txt")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run TestGolden -update to create it)", err)
	}
	gotLines, wantLines := strings.Split(got, "\n"), strings.Split(string(want), "\n")
	for i := 0; i < max(len(gotLines), len(wantLines)); i++ {
		var g, w string
		if i < len(gotLines) {
			g = gotLines[i]
		}
		if i < len(wantLines) {
			w = wantLines[i]
		}
		if g != w {
			t.Errorf("line %d:\n got %s\nwant %s", i+1, g, w)
		}
	}
}

// TestColumnsMatchDDL checks that every column of every DuckDB table is fed by the Arrow
// schema (a column missing there would silently stay NULL) with a matching type.
func TestColumnsMatchDDL(t *testing.T) {
	w := testWarehouse(t, "")
	wantType := map[string]string{"utf8": "VARCHAR", "date32": "DATE", "timestamp[us]": "TIMESTAMP",
		"int64": "BIGINT", "int32": "INTEGER", "float64": "DOUBLE", "bool": "BOOLEAN"}
	for _, tab := range allTables() {
		t.Run(tab.Name, func(t *testing.T) {
			rows := queryRows(t, w.DB(), `SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = ? ORDER BY column_index`, tab.Name)
			got := rows
			var want []string
			for _, f := range tab.Schema.Fields() {
				want = append(want, fmt.Sprintf("%q | %q", f.Name, wantType[f.Type.String()]))
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("DuckDB columns\n%s\nArrow schema\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

func TestStoreVerbatimStrings(t *testing.T) {
	w := testWarehouse(t, "")
	storeFixtures(t, w, snap)
	ov, err := schema.DecodeOverview(fixture(t, "overview_full.json"))
	if err != nil {
		t.Fatal(err)
	}
	var title, desc string
	if err := w.DB().QueryRow(`SELECT title, description FROM sites WHERE domain = 'example.com'`).Scan(&title, &desc); err != nil {
		t.Fatal(err)
	}
	if title != *ov.Website.Title || desc != *ov.Website.Description {
		t.Errorf("got %q / %q, want %q / %q", title, desc, *ov.Website.Title, *ov.Website.Description)
	}
	for _, tt := range []struct {
		domain   string
		endpoint schema.Endpoint
		fixture  string
	}{
		{"example.com", schema.EndpointOverview, "overview_full.json"},
		{"nulls.example", schema.EndpointSimilar, "similar_nulls.json"},
		{"", schema.EndpointCountries, "countries.json"},
	} {
		body, err := w.RawBody(context.Background(), snap, tt.domain, tt.endpoint)
		if err != nil {
			t.Fatal(err)
		}
		if string(body) != string(fixture(t, tt.fixture)) {
			t.Errorf("stored %s body of %q differs from the response body", tt.endpoint, tt.domain)
		}
	}
	if _, err := w.RawBody(context.Background(), snap, "nope.example", schema.EndpointOverview); !errors.Is(err, sql.ErrNoRows) {
		t.Errorf("RawBody of a domain never stored: %v, want sql.ErrNoRows", err)
	}
}

func TestStoreIdempotent(t *testing.T) {
	w := testWarehouse(t, "")
	storeFixtures(t, w, snap)
	want := dumpTables(t, w.DB(), "")
	wantRaw := count(t, w.DB(), `SELECT count(*) FROM raw_responses`)

	t.Run("StoreAgain", func(t *testing.T) {
		storeFixtures(t, w, snap)
		if got := dumpTables(t, w.DB(), ""); got != want {
			t.Errorf("storing the same responses again changed the tables:\n%s", got)
		}
		if got := count(t, w.DB(), `SELECT count(*) FROM raw_responses`); got != wantRaw {
			t.Errorf("raw_responses has %d rows, want %d", got, wantRaw)
		}
	})
	t.Run("ReplaceOneEndpoint", func(t *testing.T) {
		// The similar response of example.com changes: its similar sites are replaced whole.
		err := w.Store(context.Background(), snap, model.Raw{Endpoint: schema.EndpointSimilar, Domain: "example.com",
			Body: fixture(t, "similar_nulls.json"), FetchedAt: fetchedAt})
		if err != nil {
			t.Fatal(err)
		}
		if got := count(t, w.DB(), `SELECT count(*) FROM similar_sites WHERE domain = 'example.com'`); got != 0 {
			t.Errorf("similar_sites of example.com: %d rows, want 0", got)
		}
		if got := count(t, w.DB(), `SELECT count(*) FROM keywords WHERE domain = 'example.com'`); got != 3 {
			t.Errorf("keywords of example.com: %d rows, want 3 (reloaded once)", got)
		}
		if got := count(t, w.DB(), `SELECT count(*) FROM sites WHERE domain = 'example.com'`); got != 1 {
			t.Errorf("sites of example.com: %d rows, want 1", got)
		}
	})
	t.Run("OtherSnapshotUntouched", func(t *testing.T) {
		storeFixtures(t, w, "2026-10")
		if got, want := count(t, w.DB(), `SELECT count(*) FROM sites`), 2*len(fixtureDomains); got != want {
			t.Errorf("sites: %d rows, want %d", got, want)
		}
	})
}

func TestStoreOneEndpointLoadsNothing(t *testing.T) {
	w := testWarehouse(t, "")
	ctx := context.Background()
	if err := w.Store(ctx, snap, model.Raw{Endpoint: schema.EndpointOverview, Domain: "example.com", Body: fixture(t, "overview_full.json"), FetchedAt: fetchedAt}); err != nil {
		t.Fatal(err)
	}
	st, err := w.State(ctx, snap)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Stored("example.com").Has(schema.EndpointOverview) || st.Stored("example.com").Has(schema.EndpointSimilar) {
		t.Errorf("Stored = %v, want only the overview", st.Stored("example.com"))
	}
	if st.Loaded("example.com") || st.CountriesLoaded {
		t.Errorf("Loaded = %v, CountriesLoaded = %v, want nothing", st.Loaded("example.com"), st.CountriesLoaded)
	}
	if got := count(t, w.DB(), `SELECT count(*) FROM sites`); got != 0 {
		t.Errorf("sites has %d rows before the similar response, want 0", got)
	}
}

// TestStoreKeepsUnloadable: a pair that decodes but cannot be flattened keeps its paid-for
// bodies, has no derived rows, and loads once a good body replaces the bad one.
func TestStoreKeepsUnloadable(t *testing.T) {
	w := testWarehouse(t, "")
	ctx := context.Background()
	if err := w.Store(ctx, snap, model.Raw{Endpoint: schema.EndpointSimilar, Domain: "example.com", Body: fixture(t, "similar_full.json"), FetchedAt: fetchedAt}); err != nil {
		t.Fatal(err)
	}
	err := w.Store(ctx, snap, model.Raw{Endpoint: schema.EndpointOverview, Domain: "example.com", Body: fixture(t, "overview_baddate.json"), FetchedAt: fetchedAt})
	var ue *UnloadableError
	var fe *flatten.FlattenError
	if !errors.As(err, &ue) || !errors.As(err, &fe) || !strings.Contains(err.Error(), `traffic.history[1].month is "2026-13-01"`) {
		t.Fatalf("Store error = %v, want an *UnloadableError naming the bad month", err)
	}
	st, err := w.State(ctx, snap)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Stored("example.com").Has(schema.EndpointOverview) || !st.Stored("example.com").Has(schema.EndpointSimilar) || st.Loaded("example.com") {
		t.Errorf("Stored = %v, Loaded = %v: want both bodies kept and the domain not loaded", st.Stored("example.com"), st.Loaded("example.com"))
	}
	if got := count(t, w.DB(), `SELECT count(*) FROM sites`); got != 0 {
		t.Errorf("sites has %d rows for an unloadable domain, want 0", got)
	}
	if err := w.Store(ctx, snap, model.Raw{Endpoint: schema.EndpointOverview, Domain: "example.com", Body: fixture(t, "overview_full.json"), FetchedAt: fetchedAt}); err != nil {
		t.Fatal(err)
	}
	if got := count(t, w.DB(), `SELECT count(*) FROM sites`); got != 1 {
		t.Errorf("sites has %d rows after a good body, want 1", got)
	}
}

func TestStoreRefuses(t *testing.T) {
	tests := []struct {
		name    string
		raw     model.Raw
		wantErr string
	}{
		{"LegacyV1", model.Raw{Endpoint: schema.EndpointSimilar, Domain: "example.com",
			Body: []byte(`{"success": true, "sourceSite": "example.com", "similarSites": []}`)}, "legacy v1"},
		{"NotJSON", model.Raw{Endpoint: schema.EndpointSimilar, Domain: "example.com", Body: []byte(`<html>`)}, "not a JSON object"},
		{"NoDomain", model.Raw{Endpoint: schema.EndpointSimilar, Body: []byte(`{}`)}, "domain is empty"},
		{"UnknownEndpoint", model.Raw{Endpoint: "site-bogus", Domain: "example.com", Body: []byte(`{}`)}, "unknown endpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := testWarehouse(t, "")
			ctx := context.Background()
			if err := w.Store(ctx, snap, model.Raw{Endpoint: schema.EndpointSimilar, Domain: "example.com", Body: fixture(t, "similar_full.json"), FetchedAt: fetchedAt}); err != nil {
				t.Fatal(err)
			}
			before := dumpTables(t, w.DB(), "") + fmt.Sprint(queryRows(t, w.DB(), `SELECT * FROM raw_responses ORDER BY ALL`))
			err := w.Store(ctx, snap, tt.raw)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Store error = %v, want one containing %q", err, tt.wantErr)
			}
			after := dumpTables(t, w.DB(), "") + fmt.Sprint(queryRows(t, w.DB(), `SELECT * FROM raw_responses ORDER BY ALL`))
			if after != before {
				t.Error("a refused Store changed the database")
			}
		})
	}
	t.Run("BadSnapshot", func(t *testing.T) {
		w := testWarehouse(t, "")
		for _, s := range []string{"", "2026-13", "2026-1", "2026-11'; DROP TABLE sites; --"} {
			if err := w.Store(context.Background(), s, model.Raw{Endpoint: schema.EndpointCountries, Body: fixture(t, "countries.json")}); err == nil {
				t.Errorf("Store accepted snapshot %q", s)
			}
		}
	})
	t.Run("CancelledContext", func(t *testing.T) {
		w := testWarehouse(t, "")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := w.Store(ctx, snap, model.Raw{Endpoint: schema.EndpointOverview, Domain: "example.com", Body: fixture(t, "overview_full.json")})
		if err == nil {
			t.Fatal("Store with a cancelled context succeeded")
		}
		if got := count(t, w.DB(), `SELECT count(*) FROM raw_responses`); got != 0 {
			t.Errorf("raw_responses has %d rows, want 0", got)
		}
		// The load connection is usable afterwards.
		storeFixtures(t, w, snap)
	})
}

func TestStateAndRuns(t *testing.T) {
	w := testWarehouse(t, "")
	ctx := context.Background()
	storeFixtures(t, w, snap)
	started := time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC)
	for i, id := range []string{"run-a", "run-b"} {
		if err := w.StartRun(ctx, model.RunRecord{RunID: id, SnapshotMonth: snap, StartedAt: started.Add(time.Duration(i) * time.Hour), Status: "running", DomainsTotal: 5}); err != nil {
			t.Fatal(err)
		}
	}
	fin := started.Add(90 * time.Minute)
	left := int64(42)
	done := model.RunRecord{RunID: "run-b", SnapshotMonth: snap, StartedAt: started.Add(time.Hour), FinishedAt: &fin, Status: "complete",
		DomainsTotal: 5, DomainsLoaded: 4, DomainsRejected: 1, Requests: 9, CreditsSpent: 9, RateLimited: 2, CreditsRemaining: &left, Message: "it's done; ok"}
	if err := w.FinishRun(ctx, done); err != nil {
		t.Fatal(err)
	}
	if err := w.FinishRun(ctx, model.RunRecord{RunID: "nope"}); err == nil {
		t.Error("FinishRun of an unknown run succeeded")
	}
	for _, fe := range []model.FetchError{
		{RunID: "run-b", SnapshotMonth: snap, Domain: "bad..example", Endpoint: schema.EndpointOverview, HTTPStatus: 400, Code: "INVALID_DOMAIN", Message: "bad", OccurredAt: fin},
		{RunID: "run-b", SnapshotMonth: snap, Domain: "flaky.example", Endpoint: schema.EndpointSimilar, HTTPStatus: 500, Code: "Internal Server Error", Message: "boom"},
	} {
		if err := w.RecordFetchError(ctx, fe); err != nil {
			t.Fatal(err)
		}
	}
	runs, err := w.Runs(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].RunID != "run-b" || runs[1].RunID != "run-a" {
		t.Fatalf("Runs = %+v, want run-b then run-a", runs)
	}
	got := runs[0]
	if got.FinishedAt == nil || !got.FinishedAt.Equal(fin) || got.CreditsRemaining == nil || *got.CreditsRemaining != 42 ||
		got.Status != "complete" || got.DomainsLoaded != 4 || got.RateLimited != 2 || got.Message != done.Message || !got.StartedAt.Equal(done.StartedAt) {
		t.Errorf("run-b = %+v, want %+v", got, done)
	}
	if runs[1].FinishedAt != nil || runs[1].CreditsRemaining != nil {
		t.Errorf("run-a = %+v, want no finish time and no credits", runs[1])
	}
	if one, _ := w.Runs(ctx, 1); len(one) != 1 {
		t.Errorf("Runs(1) returned %d runs", len(one))
	}

	st, err := w.State(ctx, snap)
	if err != nil {
		t.Fatal(err)
	}
	if st.LoadedCount() != len(fixtureDomains) || !st.CountriesLoaded || storedCount(st) != len(fixtureDomains) {
		t.Errorf("State = %+v", st)
	}
	if got, want := fmt.Sprint(st.Rejected), "map[bad..example:INVALID_DOMAIN]"; got != want {
		t.Errorf("Rejected = %s, want %s", got, want)
	}
	if other, _ := w.State(ctx, "2026-10"); storedCount(other)+other.LoadedCount() != 0 || other.CountriesLoaded {
		t.Errorf("State of another snapshot = %+v, want empty", other)
	}

	// Outcome: State's summary for a watchlist, from a merge instead of maps. The watchlist
	// leaves one loaded domain out and adds the rejected one and one never fetched.
	var watchlist []string
	for _, f := range fixtureDomains[1:] {
		watchlist = append(watchlist, f.domain)
	}
	watchlist = append(watchlist, "bad..example", "never.example")
	out, err := w.Outcome(ctx, snap, watchlist)
	if err != nil {
		t.Fatal(err)
	}
	if out.Loaded != len(fixtureDomains)-1 || out.Unloadable != 0 || !out.AnyStored || !out.CountriesLoaded ||
		fmt.Sprint(out.Rejected) != "map[bad..example:INVALID_DOMAIN]" {
		t.Errorf("model.Outcome = %+v, want %d loaded, bad..example rejected, countries and answers stored", out, len(fixtureDomains)-1)
	}
	if other, _ := w.Outcome(ctx, "2026-10", watchlist); other.Loaded != 0 || other.AnyStored || other.CountriesLoaded || len(other.Rejected) != 0 {
		t.Errorf("model.Outcome of another snapshot = %+v, want empty", other)
	}
}

// parquetEqualsTable checks that the Parquet tree holds exactly the rows of the table.
func parquetEqualsTable(t *testing.T, w *Warehouse, tab flatten.Table) {
	t.Helper()
	var src string
	cols := quotedColumns(tab)
	if tab.Name == flatten.TableCountries {
		src = fmt.Sprintf(`read_parquet('%s/countries/*.parquet')`, w.opts.ParquetDir)
	} else {
		src = fmt.Sprintf(`read_parquet('%s/%s/*/*.parquet', hive_partitioning = true)`, w.opts.ParquetDir, tab.Name)
	}
	got := queryRows(t, w.DB(), fmt.Sprintf(`SELECT %s FROM %s ORDER BY ALL`, cols, src))
	want := queryRows(t, w.DB(), fmt.Sprintf(`SELECT %s FROM %s ORDER BY ALL`, cols, tab.Name))
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s: Parquet rows differ from the table\nparquet:\n%s\ntable:\n%s", tab.Name, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestParquet(t *testing.T) {
	w := testWarehouse(t, "")
	ctx := context.Background()
	storeFixtures(t, w, "2026-10")
	storeFixtures(t, w, snap)
	for _, s := range []string{"2026-10", snap} {
		if err := w.ExportParquet(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("EqualsTables", func(t *testing.T) {
		for _, tab := range allTables() {
			parquetEqualsTable(t, w, tab)
		}
	})
	t.Run("Layout", func(t *testing.T) {
		files, _ := filepath.Glob(filepath.Join(w.opts.ParquetDir, "*", "*", "*"))
		countries, _ := filepath.Glob(filepath.Join(w.opts.ParquetDir, "countries", "*"))
		var got []string
		for _, f := range append(files, countries...) {
			rel, _ := filepath.Rel(w.opts.ParquetDir, f)
			got = append(got, rel)
		}
		if len(got) != 2*(len(flatten.SnapshotTables)+len(model.RunHealthTables)+len(model.ArchiveTables))+1 {
			t.Errorf("files: %v", got)
		}
		for _, f := range got {
			if !strings.HasSuffix(f, "/data_0.parquet") || (!strings.HasPrefix(f, "countries/") && !strings.Contains(f, "/snapshot_month=20")) {
				t.Errorf("unexpected file %s", f)
			}
		}
		var codec string
		q := fmt.Sprintf(`SELECT DISTINCT compression FROM parquet_metadata('%s/sites/snapshot_month=2026-11/data_0.parquet')`, w.opts.ParquetDir)
		if err := w.DB().QueryRow(q).Scan(&codec); err != nil || codec != "ZSTD" {
			t.Errorf("compression %q (%v), want ZSTD", codec, err)
		}
	})
	t.Run("ReexportReplacesPartitionKeepsOthers", func(t *testing.T) {
		old := filepath.Join(w.opts.ParquetDir, "keywords", "snapshot_month=2026-10", "data_0.parquet")
		before, err := os.ReadFile(old)
		if err != nil {
			t.Fatal(err)
		}
		beforeInfo, _ := os.Stat(old)
		// example.com loses its keywords in 2026-11.
		if err := w.Store(ctx, snap, model.Raw{Endpoint: schema.EndpointOverview, Domain: "example.com", Body: fixture(t, "overview_missing.json"), FetchedAt: fetchedAt}); err != nil {
			t.Fatal(err)
		}
		if err := w.ExportParquet(ctx, snap); err != nil {
			t.Fatal(err)
		}
		for _, tab := range allTables() {
			parquetEqualsTable(t, w, tab)
		}
		after, _ := os.ReadFile(old)
		afterInfo, _ := os.Stat(old)
		if string(after) != string(before) || !afterInfo.ModTime().Equal(beforeInfo.ModTime()) {
			t.Error("re-exporting 2026-11 rewrote the 2026-10 partition")
		}
		n := count(t, w.DB(), fmt.Sprintf(`SELECT count(*) FROM read_parquet('%s/keywords/*/*.parquet', hive_partitioning = true) WHERE snapshot_month = '2026-11'`, w.opts.ParquetDir))
		if n != 0 {
			t.Errorf("keywords 2026-11 in Parquet: %d rows, want 0", n)
		}
		leftovers, _ := filepath.Glob(filepath.Join(w.opts.ParquetDir, "*", "*", ".*"))
		if len(leftovers) != 0 {
			t.Errorf("staging files left: %v", leftovers)
		}
	})
}

func TestOpenCleansStaging(t *testing.T) {
	dir := t.TempDir()
	part := filepath.Join(dir, "parquet", "sites", "snapshot_month=2026-11")
	if err := os.MkdirAll(part, 0o755); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(part, ".data_0.parquet.0123456789abcdef.tmp")
	keep := filepath.Join(part, "data_0.parquet")
	for _, f := range []string{stale, keep} {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	testWarehouse(t, dir)
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("staging leftover %s survived Open (%v)", stale, err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("published file removed: %v", err)
	}
}

func TestRebuildEqualsLoad(t *testing.T) {
	w := testWarehouse(t, "")
	ctx := context.Background()
	storeFixtures(t, w, "2026-10")
	storeFixtures(t, w, snap)
	// A domain with only its overview stored is not loaded by either path.
	if err := w.Store(ctx, snap, model.Raw{Endpoint: schema.EndpointOverview, Domain: "half.example", Body: fixture(t, "overview_full.json"), FetchedAt: fetchedAt}); err != nil {
		t.Fatal(err)
	}
	want := dumpTables(t, w.DB(), "")
	tests := []struct {
		name     string
		snapshot string
		wantN    int
	}{
		{"One", snap, len(fixtureDomains)},
		{"All", "", 2 * len(fixtureDomains)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Damage the derived tables first: rebuild must restore them from raw alone.
			for _, tab := range allTables() {
				if _, err := w.DB().Exec(`DELETE FROM ` + tab.Name); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := w.DB().Exec(`INSERT INTO keywords VALUES ('2026-11', 'stale.example', 1, 'stale', 1, 1, 1)`); err != nil {
				t.Fatal(err)
			}
			if tt.snapshot != "" {
				if _, err := w.Rebuild(ctx, "2026-10"); err != nil {
					t.Fatal(err)
				}
			}
			n, err := w.Rebuild(ctx, tt.snapshot)
			if err != nil {
				t.Fatal(err)
			}
			if n != tt.wantN {
				t.Errorf("Rebuild loaded %d domains, want %d", n, tt.wantN)
			}
			if got := dumpTables(t, w.DB(), ""); got != want {
				t.Errorf("rebuilt tables differ from the original load:\n%s", got)
			}
			for _, tab := range allTables() {
				parquetEqualsTable(t, w, tab)
			}
		})
	}
	t.Run("SmallBatches", func(t *testing.T) {
		w.opts.BatchDomains = 1
		defer func() { w.opts.BatchDomains = 1000 }()
		if _, err := w.Rebuild(ctx, ""); err != nil {
			t.Fatal(err)
		}
		if got := dumpTables(t, w.DB(), ""); got != want {
			t.Errorf("rebuilt tables (batches of 1 domain) differ from the original load:\n%s", got)
		}
	})
}

// TestReopen checks that a warehouse written here opens again (no leftover Arrow view that
// would crash a later query) with the same rows, read-write and read-only.
func TestReopen(t *testing.T) {
	dir := t.TempDir()
	w := testWarehouse(t, dir)
	storeFixtures(t, w, snap)
	if _, err := w.Rebuild(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	want := dumpTables(t, w.DB(), "")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, ro := range []bool{false, true} {
		t.Run(fmt.Sprintf("ReadOnly=%v", ro), func(t *testing.T) {
			w2, err := Open(context.Background(), Options{DuckDBPath: filepath.Join(dir, "db", "sitewatch.duckdb"), ParquetDir: filepath.Join(dir, "parquet"), ReadOnly: ro})
			if err != nil {
				t.Fatal(err)
			}
			defer w2.Close()
			if n := count(t, w2.DB(), `SELECT count(*) FROM duckdb_views() WHERE view_name LIKE 'sitewatch_arrow%'`); n != 0 {
				t.Errorf("%d Arrow views persisted", n)
			}
			if got := dumpTables(t, w2.DB(), ""); got != want {
				t.Errorf("reopened tables differ:\n%s", got)
			}
			if ro {
				if err := w2.Store(context.Background(), snap, model.Raw{Endpoint: schema.EndpointCountries, Body: fixture(t, "countries.json")}); err == nil {
					t.Error("Store on a read-only warehouse succeeded")
				}
			}
		})
	}
}

// TestLockHolder is not a test: it is the child process of TestLocked, which holds the
// warehouse open until its stdin closes.
func TestLockHolder(t *testing.T) {
	path := os.Getenv("SITEWATCH_LOCK_HOLDER")
	if path == "" {
		t.Skip("child process of TestLocked")
	}
	w, err := Open(context.Background(), Options{DuckDBPath: path})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("ready")
	bufio.NewReader(os.Stdin).ReadString('\n')
	w.Close()
	os.Exit(0)
}

func TestLocked(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sitewatch.duckdb")
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHolder$")
	cmd.Env = append(os.Environ(), "SITEWATCH_LOCK_HOLDER="+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("child: %q %v", line, err)
	}
	for _, ro := range []bool{false, true} {
		t.Run(fmt.Sprintf("ReadOnly=%v", ro), func(t *testing.T) {
			_, err := Open(context.Background(), Options{DuckDBPath: path, ReadOnly: ro})
			if !errors.Is(err, ErrLocked) {
				t.Fatalf("Open error = %v, want ErrLocked", err)
			}
			msg := err.Error()
			for _, want := range []string{"PID " + strconv.Itoa(cmd.Process.Pid), path, "another sitewatch run", "kill " + strconv.Itoa(cmd.Process.Pid)} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not contain %q", msg, want)
				}
			}
		})
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	w, err := Open(context.Background(), Options{DuckDBPath: path})
	if err != nil {
		t.Fatalf("Open after the holder exited: %v", err)
	}
	w.Close()
}

func TestLockErrorForeignTool(t *testing.T) {
	err := lockError("/data/sitewatch.duckdb", errors.New(`IO Error: Could not set lock on file "/data/sitewatch.duckdb": Conflicting lock is held in /usr/bin/dbeaver (PID 999999) by user ana. See also https://duckdb.org/docs/connect/concurrency`))
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("not ErrLocked: %v", err)
	}
	for _, want := range []string{"/usr/bin/dbeaver (PID 999999)", "a tool holding the file open", "Parquet tree"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	other := errors.New("IO Error: disk full")
	if got := lockError("/x", other); got != other {
		t.Errorf("a non-lock error was rewritten: %v", got)
	}
}

func TestEndpoints(t *testing.T) {
	var e model.Endpoints
	if e.Has(schema.EndpointOverview) || e.Both() || e.String() != "{}" {
		t.Fatalf("empty set: %v", e)
	}
	e = e.With(schema.EndpointSimilar)
	if !e.Has(schema.EndpointSimilar) || e.Has(schema.EndpointOverview) || e.Both() {
		t.Fatalf("similar only: %v", e)
	}
	e = e.With(schema.EndpointOverview).With(schema.EndpointCountries) // countries is no domain endpoint
	if !e.Both() || e.Has(schema.EndpointCountries) {
		t.Fatalf("both: %v", e)
	}
	if got, want := e.String(), "{"+string(schema.EndpointOverview)+" "+string(schema.EndpointSimilar)+"}"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// TestSmallBatchesRegisterNoView: answers committed a few at a time (a slow run) load without
// registering a single Arrow view (a view costs more than a few parameterized rows); with the
// bound lowered, the same answers do register views (so the count is live).
func TestSmallBatchesRegisterNoView(t *testing.T) {
	stored := func() {
		w := testWarehouse(t, "")
		storeFixtures(t, w, snap)
		if err := w.Flush(context.Background()); err != nil { // Store commits in the background
			t.Fatal(err)
		}
	}
	before := viewRegistrations.Load()
	stored()
	if n := viewRegistrations.Load() - before; n != 0 {
		t.Errorf("storing %d small answers registered %d Arrow views, want 0", 2*len(fixtureDomains)+1, n)
	}
	defer func(prev int64) { arrowViewMinRows = prev }(arrowViewMinRows)
	arrowViewMinRows = 1
	before = viewRegistrations.Load()
	stored()
	if viewRegistrations.Load() == before {
		t.Error("with arrowViewMinRows 1 no Arrow view was registered: the count is not live")
	}
}
