package warehouse

import (
	"context"
	"sync"
	"testing"
	"time"

	"sitewatch/pipeline/model"
	"sitewatch/schema"
)

// TestAnswerLogRowsRebuildTheMonth (issue 42): the rows a run's commits hand to OnCommit,
// merged into an empty warehouse (twice: a pull that reads the same segments again) and
// rebuilt, leave the month's tables and ledger as the paying warehouse holds them; the second
// merge adds nothing, and a later answer of the same call replaces an older one, never the
// reverse.
func TestAnswerLogRowsRebuildTheMonth(t *testing.T) {
	ctx := context.Background()
	const month = "2026-10"
	payer := testWarehouse(t, "")
	var mu sync.Mutex
	var logged LogRows
	payer.OnCommit(func(r LogRows) { mu.Lock(); logged.Append(r); mu.Unlock() })
	for i, f := range fixtureDomains {
		for _, ep := range []schema.Endpoint{schema.EndpointOverview, schema.EndpointSimilar} {
			prefix := map[schema.Endpoint]string{schema.EndpointOverview: "overview_", schema.EndpointSimilar: "similar_"}[ep]
			raw := model.Raw{Endpoint: ep, Domain: f.domain, Body: fixture(t, prefix+f.name+".json"), FetchedAt: fetchedAt.Add(time.Duration(i) * time.Minute),
				RunID: "run-a", Credits: 1}
			if err := payer.Store(ctx, month, raw); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := payer.RecordFetchError(ctx, model.FetchError{RunID: "run-a", SnapshotMonth: month, Domain: "bad.example", Endpoint: schema.EndpointOverview,
		HTTPStatus: 400, Code: "invalid_domain", OccurredAt: fetchedAt}); err != nil {
		t.Fatal(err)
	}
	if err := payer.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	rows := logged
	mu.Unlock()
	if len(rows.Raws) != 2*len(fixtureDomains) || len(rows.Charges) != 2*len(fixtureDomains) || len(rows.Failures) != 1 {
		t.Fatalf("OnCommit got %d answers, %d ledger rows, %d rejections; want %d, %d, 1", len(rows.Raws), len(rows.Charges), len(rows.Failures),
			2*len(fixtureDomains), 2*len(fixtureDomains))
	}

	taker := testWarehouse(t, "")
	for i, want := range []int{2 * len(fixtureDomains), 0} {
		added, err := taker.MergeLog(ctx, rows)
		if err != nil {
			t.Fatal(err)
		}
		if added[month] != want {
			t.Errorf("merge %d added %d answers, want %d", i+1, added[month], want)
		}
	}
	if _, err := taker.RebuildRestored(ctx, month); err != nil {
		t.Fatal(err)
	}
	where := `snapshot_month = '` + month + `'`
	if a, b := dumpTables(t, payer.DB(), where), dumpTables(t, taker.DB(), where); a != b {
		t.Errorf("the tables rebuilt from the log differ from the payer's:\npayer:\n%s\ntaker:\n%s", a, b)
	}
	for _, q := range []string{`SELECT count(*) FROM run_calls`, `SELECT count(*) FROM fetch_errors`, `SELECT count(*) FROM raw_responses`} {
		if a, b := count(t, payer.DB(), q), count(t, taker.DB(), q); a != b {
			t.Errorf("%s: payer %d, taker %d", q, a, b)
		}
	}

	older := LogRows{Raws: []LogRaw{rows.Raws[0]}}
	older.Raws[0].FetchedAt = older.Raws[0].FetchedAt.Add(-time.Hour)
	older.Raws[0].Body = []byte("older")
	if added, err := taker.MergeLog(ctx, older); err != nil || added[month] != 0 {
		t.Errorf("an older answer of a held call: added %v, %v; want nothing", added, err)
	}
	newer := LogRows{Raws: []LogRaw{rows.Raws[0]}}
	newer.Raws[0].FetchedAt = newer.Raws[0].FetchedAt.Add(time.Hour)
	if added, err := taker.MergeLog(ctx, newer); err != nil || added[month] != 1 {
		t.Errorf("a newer answer of a held call: added %v, %v; want it to replace the older", added, err)
	}
	if n := count(t, taker.DB(), `SELECT count(*) FROM raw_responses WHERE domain = ? AND endpoint = ?`, newer.Raws[0].Domain, string(newer.Raws[0].Endpoint)); n != 1 {
		t.Errorf("the call holds %d answers after the newer one, want 1", n)
	}
}
