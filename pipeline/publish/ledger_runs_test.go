package publish_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sitewatch/pipeline/publish"
	"sitewatch/pipeline/publish/publishtest"
)

// addProbe appends to the fixture's ledger of month one paid call of run (an up-to-date
// run's probe), as its run_calls partition after that run's export.
func addProbe(t *testing.T, fx publishtest.Fixture, month, run string) {
	t.Helper()
	path := filepath.Join(fx.Parquet(), "run_calls", "snapshot_month="+month, "data_0.parquet")
	db := openDuckDB(t, "")
	tmp := path + ".new"
	q := `COPY (SELECT * FROM read_parquet('` + path + `') UNION ALL (SELECT * REPLACE ('` + run + `' AS run_id) FROM read_parquet('` + path + `') LIMIT 1)) TO '` + tmp + `' (FORMAT PARQUET)`
	if _, err := db.Exec(q); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestRestoreCopyNeverDropsAnotherMachinesRun (issue 32, fault soak invariant 4): two
// machines hold the same run of an incomplete month; B paid one more call (its run
// "probe-of-b") and saved the restore copy. A, which never took B's call in, saving its copy
// under the same run ID must be refused (a StaleError naming B's run) before it uploads
// anything, not write its ledger over B's: the guard counts every run of the version's
// ledger, which the manifest lists (runs), not only the run it names.
func TestRestoreCopyNeverDropsAnotherMachinesRun(t *testing.T) {
	a, b := publishtest.NewFixture(t), publishtest.NewFixture(t)
	g := newGateway(t)
	ctx := context.Background()
	guarded := func(o *publish.Options) { o.GuardRuns = true }
	pa := newPublisher(t, g.config(g.Endpoint, "team"), io.Discard, guarded)
	pb := newPublisher(t, g.config(g.Endpoint, "team"), io.Discard, guarded)
	run := fixtureRun(t, a, monthB)
	if _, err := pa.SaveRestoreCopy(ctx, a.Parquet(), monthB, run, false); err != nil {
		t.Fatal(err)
	}
	addProbe(t, b, monthB, "probe-of-b")
	if _, err := pb.SaveRestoreCopy(ctx, b.Parquet(), monthB, run, false); err != nil {
		t.Fatalf("B saving over a copy whose runs it holds: %v", err)
	}
	m, _ := g.manifest(t, "team/_restore", monthB)
	if !slices.Contains(m.Runs, "probe-of-b") || !slices.Contains(m.Runs, run) {
		t.Fatalf("B's restore copy names runs %v, want %s and probe-of-b", m.Runs, run)
	}
	addProbe(t, a, monthB, "probe-of-a")
	_, err := pa.SaveRestoreCopy(ctx, a.Parquet(), monthB, run, false)
	var stale *publish.StaleError
	if !errors.As(err, &stale) || !strings.Contains(err.Error(), "probe-of-b") {
		t.Fatalf("A saving its copy over B's: %v, want a StaleError naming probe-of-b", err)
	}
	if m, _ := g.manifest(t, "team/_restore", monthB); !slices.Contains(m.Runs, "probe-of-b") {
		t.Errorf("the bucket's restore copy names runs %v: B's probe-of-b was dropped", m.Runs)
	}
}
