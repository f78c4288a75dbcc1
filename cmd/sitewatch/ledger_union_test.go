package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/publish/s3test"
)

// TestProbesOfBothMachinesReachTheBucket (issue 32, fault soak invariants 3 and 4): two
// machines that both hold the run that completed a month each pay an up-to-date run's probe.
// The manifest names the completing run in both warehouses, so a guard on that run alone let
// each machine's `publish` write its own ledger over the other's: the other's probe was
// dropped from the bucket (a manifest version lost a run an earlier version held). Every
// version now names every run of its ledger; a writer lacking one takes it in first (run's
// sync, and publish's own under the lease), so the bucket's ledger ends as the union of what
// was paid, and no version drops a run.
func TestProbesOfBothMachinesReachTheBucket(t *testing.T) {
	gw := bucketGateway(t)
	domains := atlastest.Domains(3)
	a := newHarness(t, atlastest.Options{}, domains, "")
	withPublish(t, a, gw.Endpoint, "")
	b := newHarness(t, atlastest.Options{}, domains, "")
	shareSimulator(t, b, a) // one wallet: every credit charged is counted once
	withPublish(t, b, gw.Endpoint, "")
	steps := []struct {
		h    *harness
		name string
		args []string
	}{
		{a, "A", []string{"run"}},     // pays the month, publishes it
		{b, "B", []string{"run"}},     // takes A's month in, pays its probe
		{b, "B", []string{"publish"}}, // the bucket's ledger gains B's probe
		{a, "A", []string{"run"}},     // pays its probe (and must take B's in)
		{a, "A", []string{"publish"}}, // must not drop B's probe
		{b, "B", []string{"run"}},     // pays another probe
		{b, "B", []string{"publish"}}, // B lacks A's probe: takes it in, then writes the union
	}
	var versions [][]string
	manifestKey := "team/_manifests/snapshot_month=" + testMonth + ".json"
	for _, s := range steps {
		if code := s.h.run(s.args...); code != ExitOK {
			t.Fatalf("%s's %v: exit %d\n%s%s", s.name, s.args, code, s.h.stdout, s.h.stderr)
		}
		if body := getObject(t, gw, manifestKey); body != "" {
			versions = append(versions, manifestRuns(t, gw, body))
		}
	}
	for i := 1; i < len(versions); i++ {
		for _, r := range versions[i-1] {
			if !slices.Contains(versions[i], r) {
				t.Errorf("manifest version %d dropped run %s that version %d held: %v -> %v", i, r, i-1, versions[i-1], versions[i])
			}
		}
	}
	c := newHarness(t, atlastest.Options{}, domains, "")
	withPublish(t, c, gw.Endpoint, "")
	if code := c.run("restore"); code != ExitOK {
		t.Fatalf("restore of the bucket: exit %d\n%s%s", code, c.stdout, c.stderr)
	}
	charged := int(a.srv.Stats().Charged)
	withDB(t, c, func(db *sql.DB) {
		if n := count(t, db, `SELECT coalesce(sum(credits), 0) FROM run_calls WHERE snapshot_month = ?`, testMonth); n != charged {
			t.Errorf("the bucket's ledger of %s holds %d credits, the simulator charged %d", testMonth, n, charged)
		}
		if n := count(t, db, `SELECT count(DISTINCT run_id) FROM run_calls WHERE snapshot_month = ? AND credits > 0`, testMonth); n != 4 {
			t.Errorf("the bucket's ledger of %s holds the paid calls of %d runs, want 4 (the month and three probes)", testMonth, n)
		}
	})
}

// manifestRuns returns the runs the ledger (run_calls) objects of a manifest hold, sorted.
func manifestRuns(t *testing.T, gw *s3test.Server, body string) []string {
	t.Helper()
	var m struct {
		Files []struct {
			Key   string `json:"key"`
			Table string `json:"table"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("the manifest: %v", err)
	}
	dir := t.TempDir()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	runs := map[string]bool{}
	for i, f := range m.Files {
		if f.Table != "run_calls" {
			continue
		}
		path := filepath.Join(dir, fmt.Sprintf("run_calls_%d.parquet", i))
		if err := os.WriteFile(path, []byte(getObject(t, gw, "team/"+f.Key)), 0o644); err != nil {
			t.Fatal(err)
		}
		rows, err := db.Query(`SELECT DISTINCT run_id FROM read_parquet(?)`, path)
		if err != nil {
			t.Fatalf("read %s: %v", f.Key, err)
		}
		for rows.Next() {
			var r string
			if err := rows.Scan(&r); err != nil {
				t.Fatal(err)
			}
			runs[r] = true
		}
		_ = rows.Close()
	}
	return slices.Sorted(maps.Keys(runs))
}
