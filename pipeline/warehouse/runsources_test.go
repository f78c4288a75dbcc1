package warehouse

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"sitewatch/pipeline/model"
	"sitewatch/schema"
)

// runs.credits_by_source: written by FinishRun in the order given and read back by Runs; a
// run whose process died gets it from its run_calls rows when the warehouse closes it.
func TestCreditsBySource(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "w.duckdb")
	w, err := Open(ctx, Options{DuckDBPath: path})
	if err != nil {
		t.Fatal(err)
	}
	finished := fetchedAt.Add(time.Minute)
	done := model.RunRecord{RunID: "done", SnapshotMonth: snap, StartedAt: fetchedAt, Status: "running"}
	dead := model.RunRecord{RunID: "dead", SnapshotMonth: snap, StartedAt: fetchedAt.Add(time.Hour), Status: "running"}
	for _, r := range []model.RunRecord{done, dead} {
		if err := w.StartRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	done.Status, done.FinishedAt = "complete", &finished
	done.CreditsBySource = model.CreditsBySourceJSON([]model.SourceCredits{{Name: "marketplace", Credits: 100}, {Name: "direct", Credits: 201}})
	if err := w.FinishRun(ctx, done); err != nil {
		t.Fatal(err)
	}
	for i, src := range []string{"direct", "marketplace", "direct"} { // direct paid first
		c := model.Charge{RunID: "dead", SnapshotMonth: snap, Domain: "d" + string(rune('a'+i)) + ".example", Endpoint: schema.EndpointOverview,
			Credits: 1, FetchedAt: fetchedAt.Add(time.Hour + time.Duration(i)*time.Second), Outcome: model.OutcomeRefused, Source: src}
		if err := w.RecordCharge(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	liveRuns.Delete("dead") // its process died: no one finishes it
	w, err = Open(ctx, Options{DuckDBPath: path})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Close() }()
	runs, err := w.Runs(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range runs {
		got[r.RunID] = r.CreditsBySource
	}
	want := map[string]string{"done": `{"marketplace":100,"direct":201}`, "dead": `{"direct":2,"marketplace":1}`}
	for id, v := range want {
		if got[id] != v {
			t.Errorf("run %s: credits_by_source = %q, want %q", id, got[id], v)
		}
	}
	var total int64
	if err := w.DB().QueryRowContext(ctx, `SELECT CAST(json_extract(credits_by_source, '$.direct') AS BIGINT) FROM runs WHERE run_id = 'done'`).Scan(&total); err != nil || total != 201 {
		t.Errorf("json_extract of direct = %d, %v; want 201", total, err)
	}
}
