package main

// Crash tests of issue 7: kill -9 of the built binary during a run and during a Parquet
// export. 5 kill points run in `make test`; SITEWATCH_LONG=1 (`make test-long`) runs 20.

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/model"
	"sitewatch/pipeline/warehouse"
	"sitewatch/schema"
	"sitewatch/schema/flatten"
)

// killPoints is how many kill -9 points a crash test tries.
func killPoints() int {
	if longTests() {
		return 20
	}
	return 5
}

// killSeed is the seed of a kill test's random kill points: SITEWATCH_KILL_SEED when set (to
// replay a failure), else a new one each run; it is printed either way. The points are drawn
// from it as fractions of a measured uninterrupted run, so a replay draws the same fractions (the
// moments they land on still follow that run's duration on the machine).
func killSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("SITEWATCH_KILL_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("kill points drawn from seed %d (replay with SITEWATCH_KILL_SEED=%d)", seed, seed)
	return seed
}

// TestCrashKillMinus9DuringRun kills `sitewatch run` of a 100-domain snapshot at random
// points spread over a whole run (open, fetch and load, export). After each kill the database
// opens and holds no duplicate; a rerun completes, every table equals an uninterrupted run's,
// the Parquet tree reads back whole and equal to the tables, and no staging file is left.
func TestCrashKillMinus9DuringRun(t *testing.T) {
	sitewatchBinary(t)
	const seed = 9
	domains := atlastest.Domains(100)
	want := referenceDump(t, seed, domains)
	opts := atlastest.Options{Seed: seed, LatencyMin: 2 * time.Millisecond, LatencyMax: 10 * time.Millisecond}

	// An uninterrupted run of the binary sets the time scale of the kill points.
	ref := crashHarness(t, opts, domains)
	cmd, out := ref.command("run", "--snapshot", testMonth)
	start := time.Now()
	if code := exitCodeOf(t, cmd.Run()); code != ExitOK {
		t.Fatalf("uninterrupted binary run: exit %d\n%s", code, out)
	}
	full := time.Since(start)
	ref.assertNoKey(out.String(), "binary output")
	if got := dumpTablesClosed(t, ref); got != want {
		t.Fatalf("the binary's uninterrupted run differs from the in-process reference")
	}
	t.Logf("uninterrupted run of %d domains: %v", len(domains), full.Round(10*time.Millisecond))

	n := killPoints()
	rng := rand.New(rand.NewPCG(killSeed(t), 7))
	began := time.Now()
	for i := range n {
		// Stratified: one point in each n-th of the run, so start, middle and end all get hit.
		at := time.Duration((float64(i) + rng.Float64()) / float64(n) * float64(full))
		t.Run(fmt.Sprintf("kill%02d_at_%dms", i, at.Milliseconds()), func(t *testing.T) {
			h := crashHarness(t, opts, domains)
			cmd, out := h.command("run", "--snapshot", testMonth)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(at)
			_ = cmd.Process.Kill() // SIGKILL
			_ = cmd.Wait()
			h.assertNoKey(out.String(), "killed run's output")
			charged := h.srv.Stats().Charged
			if _, err := os.Stat(filepath.Join(h.dir, "data/w.duckdb")); err == nil {
				withDB(t, h, func(db *sql.DB) { assertNoDuplicates(t, db) })
			}
			if code := h.run("run", "--snapshot", testMonth); code != ExitOK {
				t.Fatalf("rerun exit %d\nkilled run:\n%s\nrerun:\n%s%s", code, out, h.stdout, tail(h.stderr.String(), 2000))
			}
			if got := dumpTablesClosed(t, h); got != want {
				t.Errorf("after a kill at %v (%d credits charged by then) and a rerun, tables differ from an uninterrupted run's", at, charged)
			}
			if got, max := h.srv.Stats().Charged, int64(2*len(domains)+1+atlasMaxInFlight(200)); got > max {
				t.Errorf("charged %d in all, more than needed plus the calls in flight at the kill (%d)", got, max)
			}
			withDB(t, h, func(db *sql.DB) { assertParquetEqualsTables(t, db, filepath.Join(h.dir, "data/parquet")) })
			assertNoStagingFiles(t, h)
			h.assertWarehouseHasNoKey()
		})
	}
	t.Logf("%d kill points with reruns: %v", n, time.Since(began).Round(100*time.Millisecond))
}

// crashHarness is a harness whose calls wait up to 30 s for an answer (the harness's 5 s
// api.timeout): under -race at load 35 the uninterrupted reference run's calls outlasted 5 s,
// were refetched as maybe charged, and the run stopped at the waste budget. The kill points, not
// the machine's speed, are what these tests are about.
func crashHarness(t *testing.T, opts atlastest.Options, domains []string) *harness {
	t.Helper()
	h := newHarness(t, opts, domains, "")
	h.setConfig("  timeout: 5s\n", "  timeout: 30s\n")
	return h
}

// assertParquetEqualsTables reads the Parquet tree back with Hive partitioning and checks every
// snapshot table and countries against DuckDB, row for row.
func assertParquetEqualsTables(t *testing.T, db *sql.DB, root string) {
	t.Helper()
	tables := append([]flatten.Table{}, flatten.SnapshotTables...)
	for _, tb := range tables {
		cols := quotedColumnList(tb.ColumnNames())
		src := fmt.Sprintf("read_parquet('%s/%s/*/*.parquet', hive_partitioning = true, hive_types_autocast = false)", root, tb.Name)
		compareSets(t, db, tb.Name, fmt.Sprintf("SELECT %s FROM %s", cols, tb.Name), fmt.Sprintf("SELECT %s FROM %s", cols, src))
	}
	cols := quotedColumnList(flatten.CountriesTable.ColumnNames())
	compareSets(t, db, "countries", "SELECT "+cols+" FROM countries",
		fmt.Sprintf("SELECT %s FROM read_parquet('%s/countries/*.parquet')", cols, root))
}

func quotedColumnList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = `"` + n + `"`
	}
	return strings.Join(q, ", ")
}

// compareSets fails unless the two queries return the same multiset of rows.
func compareSets(t *testing.T, db *sql.DB, name, a, b string) {
	t.Helper()
	var na, nb, onlyA, onlyB int
	err := db.QueryRow(fmt.Sprintf(`SELECT (SELECT count(*) FROM (%[1]s)), (SELECT count(*) FROM (%[2]s)),
		(SELECT count(*) FROM ((%[1]s) EXCEPT ALL (%[2]s))), (SELECT count(*) FROM ((%[2]s) EXCEPT ALL (%[1]s)))`, a, b)).
		Scan(&na, &nb, &onlyA, &onlyB)
	if err != nil {
		t.Errorf("%s: Parquet does not read back: %v", name, err)
		return
	}
	if na != nb || onlyA != 0 || onlyB != 0 {
		t.Errorf("%s: DuckDB has %d rows, Parquet %d; %d rows only in DuckDB, %d only in Parquet", name, na, nb, onlyA, onlyB)
	}
}

// TestCrashKillMinus9DuringParquetExport kills `sitewatch rebuild` of a large stored snapshot at
// random moments around its Parquet export. Before each kill the Parquet tree holds an "old"
// export that differs from what the rebuild writes; after it, every partition directory must
// read back as exactly the old export or exactly the new one, never a partial file or a mix.
func TestCrashKillMinus9DuringParquetExport(t *testing.T) {
	sitewatchBinary(t)
	ctx := context.Background()
	nDomains := 2000
	if longTests() {
		nDomains = 5000
	}
	h := newHarness(t, atlastest.Options{}, atlastest.Domains(1), "")
	dbPath := filepath.Join(h.dir, "data/w.duckdb")
	pq := filepath.Join(h.dir, "data/parquet")
	// The stored snapshot, loaded straight through the warehouse (no API needed).
	prep := time.Now()
	wh, err := warehouse.Open(ctx, warehouse.Options{DuckDBPath: dbPath, ParquetDir: pq})
	if err != nil {
		t.Fatal(err)
	}
	gen := atlastest.NewGenerator(4, testMonth)
	if err := wh.Store(ctx, testMonth, model.Raw{Endpoint: schema.EndpointCountries, Body: gen.CountriesBody(), FetchedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	// 50 distinct domains through Store, then their stored responses copied under other names
	// (raw_responses.domain is what a rebuild loads them as) up to nDomains, and a rebuild.
	const distinct = 50
	base := atlastest.Domains(distinct)
	for _, d := range base {
		for _, raw := range []model.Raw{
			{Endpoint: schema.EndpointOverview, Domain: d, Body: gen.OverviewBody(d), FetchedAt: time.Now()},
			{Endpoint: schema.EndpointSimilar, Domain: d, Body: gen.SimilarBody(d), FetchedAt: time.Now()},
		} {
			if err := wh.Store(ctx, testMonth, raw); err != nil {
				t.Fatal(err)
			}
		}
	}
	copies := nDomains/distinct - 1
	if _, err := wh.DB().ExecContext(ctx, `INSERT INTO raw_responses SELECT r.* REPLACE ('copy' || c.i || '-' || r.domain AS domain)
		FROM raw_responses r, range(1, ?) c(i) WHERE r.domain <> ''`, copies+1); err != nil {
		t.Fatalf("copy stored responses: %v", err)
	}
	if n, err := wh.Rebuild(ctx, testMonth); err != nil || n != nDomains {
		t.Fatalf("rebuild of the stored snapshot: %d domains, %v; want %d", n, err, nDomains)
	}
	// Mark every derived row, then export: the "old" tree differs from a rebuild's in every
	// partition.
	for _, q := range []string{
		`UPDATE sites SET title = 'OLD EXPORT'`, `UPDATE traffic_history SET visits = -1`, `UPDATE sources_share SET share = -1`,
		`UPDATE geography_share SET share = -1`, `UPDATE keywords SET keyword = 'old ' || keyword`, `UPDATE ai_platforms SET rank = -1`,
		`UPDATE ai_platform_history SET share_pct = -1`, `UPDATE ai_prompts SET prompt = 'old ' || prompt`,
		`UPDATE similar_sites SET title = 'OLD EXPORT'`, `UPDATE site_tags SET tag = 'old ' || tag`, `UPDATE countries SET name = 'old ' || name`,
	} {
		if _, err := wh.DB().ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exportStart := time.Now()
	if err := wh.ExportParquet(ctx, testMonth); err != nil {
		t.Fatal(err)
	}
	exportTook := time.Since(exportStart)
	if err := wh.Close(); err != nil {
		t.Fatal(err)
	}
	old := partitionDumps(t, pq)
	pristine := filepath.Join(t.TempDir(), "pristine")
	if err := os.CopyFS(pristine, os.DirFS(filepath.Join(h.dir, "data"))); err != nil {
		t.Fatal(err)
	}
	restore := func() {
		t.Helper()
		if err := os.RemoveAll(filepath.Join(h.dir, "data")); err != nil {
			t.Fatal(err)
		}
		if err := os.CopyFS(filepath.Join(h.dir, "data"), os.DirFS(pristine)); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("stored and exported %d domains in %v", nDomains, time.Since(prep).Round(100*time.Millisecond))

	// One uninterrupted rebuild: the "new" tree and the time scale.
	cmd, out := h.command("rebuild", "--snapshot", testMonth)
	start := time.Now()
	if code := exitCodeOf(t, cmd.Run()); code != ExitOK {
		t.Fatalf("rebuild exit %d\n%s", code, out)
	}
	full := time.Since(start)
	fresh := partitionDumps(t, pq)
	for dir := range old {
		if old[dir] == fresh[dir] {
			t.Fatalf("%s: the old export equals the rebuild's; the test could not tell them apart", dir)
		}
	}
	t.Logf("uninterrupted rebuild: %v, of which the export about %v", full.Round(10*time.Millisecond), exportTook.Round(10*time.Millisecond))
	// The export is the last part of a rebuild.
	exportFrom := max(0, 1-1.5*float64(exportTook)/float64(full))

	n := killPoints()
	rng := rand.New(rand.NewPCG(killSeed(t), 11))
	mixedRuns := 0
	for i := range n {
		// Most points where the export runs; every fourth one earlier, in the rebuild proper.
		restore()
		cmd, out := h.command("rebuild", "--snapshot", testMonth)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var at time.Duration
		what := "during the export"
		if i%4 == 3 {
			// Every fourth point before the export, in the rebuild's transaction.
			at = time.Duration(rng.Float64() * exportFrom * float64(full))
			what = "before the export"
			time.Sleep(at)
		} else {
			// The others a random moment after the first staging file appears, i.e. while
			// the export writes and renames its files.
			began := time.Now()
			for time.Since(began) < 30*time.Second {
				if staged, _ := filepath.Glob(filepath.Join(pq, "*", "*", ".*.tmp")); len(staged) > 0 {
					break
				}
				time.Sleep(500 * time.Microsecond)
			}
			time.Sleep(time.Duration(rng.Float64() * 1.2 * float64(exportTook)))
			at = time.Since(began)
		}
		frac := float64(at) / float64(full)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		got := partitionDumps(t, pq)
		var nOld, nNew int
		for dir, g := range got {
			switch g {
			case old[dir]:
				nOld++
			case fresh[dir]:
				nNew++
			default:
				t.Errorf("kill at %v: partition %s is neither the old export nor the new one (a partial file or a mix)", at, dir)
			}
		}
		if len(got) != len(old) {
			t.Errorf("kill at %v: %d partition directories, want %d", at, len(got), len(old))
		}
		if nOld > 0 && nNew > 0 {
			mixedRuns++
		}
		staged, _ := filepath.Glob(filepath.Join(pq, "*", "*", ".*.tmp"))
		t.Logf("kill %s at %v (%.0f%% of a rebuild): %d partitions old, %d new, %d staging files left; output: %q",
			what, at.Round(time.Millisecond), frac*100, nOld, nNew, len(staged), tail(out.String(), 120))
		// The database opens after the kill, and a rebuild then completes to the new tree with
		// no staging file left.
		withDB(t, h, func(db *sql.DB) {})
		cmd, out = h.command("rebuild", "--snapshot", testMonth)
		if code := exitCodeOf(t, cmd.Run()); code != ExitOK {
			t.Fatalf("rebuild after the kill: exit %d\n%s", code, out)
		}
		if after := partitionDumps(t, pq); fmt.Sprint(after) != fmt.Sprint(fresh) {
			t.Errorf("kill at %v: the rebuild after the kill does not give the new tree", at)
		}
		assertNoStagingFiles(t, h)
	}
	t.Logf("%d of %d kills landed mid-export (some partitions old, some new)", mixedRuns, n)
}

// partitionDumps returns, per partition directory under root, the sorted rows of every visible
// *.parquet file in it (what a reader globbing the directory sees).
func partitionDumps(t *testing.T, root string) map[string]string {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dirs := map[string]bool{}
	err = filepath.Walk(root, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if !info.IsDir() && strings.HasSuffix(path, ".parquet") && !strings.HasPrefix(info.Name(), ".") && !isRunHealth(root, path) {
			dirs[filepath.Dir(path)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	keys := make([]string, 0, len(dirs))
	for d := range dirs {
		keys = append(keys, d)
	}
	sort.Strings(keys)
	for _, dir := range keys {
		rel, _ := filepath.Rel(root, dir)
		var digest string
		var n int
		q := fmt.Sprintf(`SELECT count(*), coalesce(sum(hash(p)), 0)::VARCHAR FROM read_parquet('%s/*.parquet') p`, dir)
		if err := db.QueryRow(q).Scan(&n, &digest); err != nil {
			out[rel] = "unreadable: " + err.Error()
			continue
		}
		out[rel] = fmt.Sprintf("%d rows, digest %s", n, digest)
	}
	return out
}

// assertNoStagingFiles fails for any leftover of an interrupted write under data/: the
// warehouse's hidden Parquet staging files (".data_0.parquet.<hex>.tmp"), temporary files and
// anything named staging. (h.assertNoStaging only matches "staging", which the warehouse's
// staging names do not contain.)
func assertNoStagingFiles(t *testing.T, h *harness) {
	t.Helper()
	_ = filepath.Walk(filepath.Join(h.dir, "data"), func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		if info.IsDir() {
			if strings.HasSuffix(info.Name(), ".duckdb.tmp") {
				return filepath.SkipDir // DuckDB's own spill directory
			}
			return nil
		}
		name := info.Name()
		if strings.HasSuffix(name, ".tmp") || strings.Contains(name, ".tmp-") || strings.Contains(name, "staging") {
			t.Errorf("stray staging file left: %s", path)
		}
		return nil
	})
}

// isRunHealth says whether path is in the Parquet tree of a run-health table (runs,
// fetch_errors, quality_checks) or an archive table (the raw answers, the ledger): what a
// rebuild does not derive from the raw answers, so the export crash test compares only the
// data tables.
func isRunHealth(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return false
	}
	table := strings.Split(filepath.ToSlash(rel), "/")[0]
	return slices.Contains(model.RunHealthTables, table) || slices.Contains(model.ArchiveTables, table)
}
