package storetest_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/model"
	"sitewatch/pipeline/storetest"
	"sitewatch/pipeline/warehouse"
	"sitewatch/schema"
)

// store is the part of pipeline.Store the parity test drives (the core's interface cannot be
// named here: the core's tests import this package).
type store interface {
	State(ctx context.Context, month string) (*model.SnapshotState, error)
	Outcome(ctx context.Context, month string, watchlist []string) (*model.Outcome, error)
	Store(ctx context.Context, month string, raw model.Raw) error
	Flush(ctx context.Context) error
	RecordCharge(ctx context.Context, c model.Charge) error
	RecordFetchError(ctx context.Context, e model.FetchError) error
	StartRun(ctx context.Context, r model.RunRecord) error
	FinishRun(ctx context.Context, r model.RunRecord) error
	LatestMonth(ctx context.Context) (string, error)
	NewestOverview(ctx context.Context, month string) (time.Time, error)
	MonthCompleteSince(ctx context.Context, month string) (time.Time, bool, error)
}

var watchlist = []string{"a.com", "b.com", "c.com", "d.com", "e.com"}

// TestParityWithTheWarehouse applies the same answers to the fake and to a real warehouse
// file and compares what each then says a run needs (State, Outcome, the newest month, the
// newest overview, when a month was first complete, the ledger): a fake that drifted from the
// warehouse would let the core's tests pass on rules the warehouse does not keep.
func TestParityWithTheWarehouse(t *testing.T) {
	ctx := context.Background()
	wh, err := warehouse.Open(ctx, warehouse.Options{DuckDBPath: filepath.Join(t.TempDir(), "w.duckdb"), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer wh.Close()
	fake := storetest.New()
	base := time.Date(2026, 6, 3, 10, 0, 0, 0, time.UTC)
	for _, s := range []store{wh, fake} {
		applyScript(t, s, base)
	}
	for _, month := range []string{"2026-06", "2026-07", "2026-08"} {
		if got, want := describe(t, fake, month), describe(t, wh, month); got != want {
			t.Errorf("%s:\nfake      %s\nwarehouse %s", month, got, want)
		}
	}
	if got, want := fakeLedger(fake), warehouseLedger(t, wh); got != want {
		t.Errorf("ledger:\nfake      %s\nwarehouse %s", got, want)
	}
}

// applyScript lands a run's worth of answers: pairs, a half pair, countries, a 400, a 500, a
// body that does not decode, a refresh of a loaded domain, a charge not stored, a finished run.
func applyScript(t *testing.T, s store, at time.Time) {
	t.Helper()
	ctx := context.Background()
	jun, jul := atlastest.NewGenerator(1, "2026-06"), atlastest.NewGenerator(1, "2026-07")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.StartRun(ctx, model.RunRecord{RunID: "r1", SnapshotMonth: "2026-06", StartedAt: at, Status: "running"}))
	for i, d := range []string{"a.com", "b.com"} {
		must(s.Store(ctx, "2026-06", raw("r1", schema.EndpointOverview, d, jun.OverviewBody(d), at.Add(time.Duration(i)*time.Minute), false)))
		must(s.Store(ctx, "2026-06", raw("r1", schema.EndpointSimilar, d, jun.SimilarBody(d), at, false)))
	}
	must(s.Store(ctx, "2026-06", raw("r1", schema.EndpointOverview, "c.com", jun.OverviewBody("c.com"), at, false)))
	must(s.Store(ctx, "2026-06", raw("r1", schema.EndpointCountries, "", jun.CountriesBody(), at, false)))
	if err := s.Store(ctx, "2026-06", raw("r1", schema.EndpointSimilar, "e.com", []byte(`{"status":"error"}`), at, false)); err == nil {
		t.Error("a body that does not decode was stored")
	}
	must(s.RecordFetchError(ctx, model.FetchError{RunID: "r1", SnapshotMonth: "2026-06", Domain: "d.com", Endpoint: schema.EndpointOverview, HTTPStatus: 400, Code: "INVALID_DOMAIN", OccurredAt: at}))
	must(s.RecordFetchError(ctx, model.FetchError{RunID: "r1", SnapshotMonth: "2026-06", Domain: "e.com", Endpoint: schema.EndpointOverview, HTTPStatus: 500, OccurredAt: at}))
	must(s.RecordCharge(ctx, model.Charge{RunID: "r1", SnapshotMonth: "2026-06", Domain: "a.com", Endpoint: schema.EndpointOverview, Credits: 1, FetchedAt: at, Outcome: "probe"}))
	must(s.Store(ctx, "2026-07", raw("r1", schema.EndpointOverview, "a.com", jul.OverviewBody("a.com"), at.Add(time.Hour), false)))
	must(s.Flush(ctx))
	finished := at.Add(2 * time.Hour)
	must(s.FinishRun(ctx, model.RunRecord{RunID: "r1", SnapshotMonth: "2026-06", StartedAt: at, FinishedAt: &finished, Status: "complete"}))
	// A refresh of b.com whose site-similar answer never comes: b.com is no longer loaded.
	must(s.StartRun(ctx, model.RunRecord{RunID: "r2", SnapshotMonth: "2026-06", StartedAt: at, Status: "running"}))
	must(s.Store(ctx, "2026-06", raw("r2", schema.EndpointOverview, "b.com", jun.OverviewBody("b.com"), at.Add(3*time.Hour), true)))
	must(s.Flush(ctx))
}

func raw(run string, ep schema.Endpoint, domain string, body []byte, at time.Time, refresh bool) model.Raw {
	return model.Raw{RunID: run, Endpoint: ep, Domain: domain, Body: body, FetchedAt: at, Credits: 1, Refresh: refresh}
}

// describe is what s says of month, in one comparable line.
func describe(t *testing.T, s store, month string) string {
	t.Helper()
	ctx := context.Background()
	st, err := s.State(ctx, month)
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.Outcome(ctx, month, watchlist)
	if err != nil {
		t.Fatal(err)
	}
	latest, err := s.LatestMonth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	newest, err := s.NewestOverview(ctx, month)
	if err != nil {
		t.Fatal(err)
	}
	since, ok, err := s.MonthCompleteSince(ctx, month)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, d := range watchlist {
		fmt.Fprintf(&b, "%s:%v loaded=%v rejected=%q; ", d, st.Stored(d), st.Loaded(d), st.Rejected[d])
	}
	fmt.Fprintf(&b, "countries=%v loaded=%d | outcome %+v | latest %s newest %s complete %v %s",
		st.CountriesLoaded, st.LoadedCount(), *out, latest, newest.UTC().Format(time.RFC3339), ok, since.UTC().Format(time.RFC3339))
	return b.String()
}

func fakeLedger(s *storetest.Store) string {
	var rows []string
	for _, r := range s.Ledger() {
		rows = append(rows, fmt.Sprintf("%s %s %s %s %d %s", r.RunID, r.Month, r.Domain, r.Endpoint, r.Credits, r.Outcome))
	}
	slices.Sort(rows)
	return strings.Join(rows, "; ")
}

func warehouseLedger(t *testing.T, wh *warehouse.Warehouse) string {
	t.Helper()
	q, err := wh.DB().Query(`SELECT run_id, snapshot_month, domain, endpoint, credits, outcome FROM run_calls`)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	var rows []string
	for q.Next() {
		var run, month, domain, ep, outcome string
		var credits int64
		if err := q.Scan(&run, &month, &domain, &ep, &credits, &outcome); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, fmt.Sprintf("%s %s %s %s %d %s", run, month, domain, ep, credits, outcome))
	}
	slices.Sort(rows)
	return strings.Join(rows, "; ")
}
