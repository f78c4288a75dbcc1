package main

import (
	"database/sql"
	"encoding/json"
	"strings"
	"testing"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/publish/s3test"
)

// completeRun is the run of h's warehouse that completed month.
func completeRun(t *testing.T, h *harness, month string) string {
	t.Helper()
	var id string
	withDB(t, h, func(db *sql.DB) {
		if err := db.QueryRow(`SELECT run_id FROM runs WHERE snapshot_month = ? AND status = 'complete'`, month).Scan(&id); err != nil {
			t.Fatalf("the complete run of %s: %v", month, err)
		}
	})
	return id
}

// TestStaleMachinePullsInsteadOfPaying is scenario 1 of issue 32: machine B restored from
// the bucket, ran a month and published it; machine A, with its own older warehouse and the
// same config, then runs: it takes B's month from the bucket (0 credits) instead of paying
// for it again, pays at most the probe, and the bucket keeps B's month and ledger.
func TestStaleMachinePullsInsteadOfPaying(t *testing.T) {
	gw := bucketGateway(t)
	domains := atlastest.Domains(6)
	const older = "2026-09"
	a := publishedMachine(t, gw, atlastest.Options{Month: older}, domains, "")
	b := sharingMachine(t, gw, a, domains)
	if err := a.srv.SetMonth(testMonth); err != nil {
		t.Fatal(err)
	}
	if code := b.run("run", "--restore-if-missing"); code != ExitOK {
		t.Fatalf("B's run of %s: exit %d\n%s%s", testMonth, code, b.stdout, b.stderr)
	}
	runOfB := completeRun(t, b, testMonth)
	manifestKey := "team/_manifests/snapshot_month=" + testMonth + ".json"
	published := getObject(t, gw, manifestKey)

	// A's status compares with the bucket the same way: B's month is newer there, never
	// something to publish from A.
	if code := a.run("status"); code != ExitOK || !strings.Contains(a.stdout.String(), "holds newer versions of "+testMonth) ||
		strings.Contains(a.stdout.String(), "not yet published") {
		t.Errorf("A's status before taking B's month in: exit %d\n%s%s", code, a.stdout, a.stderr)
	}
	// check, read-only and without the lease, counts B's month as held: the probe only.
	if code := a.run("check"); code != ExitOK || !strings.Contains(a.stdout.String(), "1 credit: "+testMonth+" is complete") {
		t.Errorf("A's check before taking B's month in: exit %d, want an estimate of 1 credit\n%s%s", code, a.stdout, a.stderr)
	}
	before := a.srv.Stats().Charged
	if code := a.run("run"); code != ExitOK {
		t.Fatalf("A's run after B's: exit %d\n%s%s", code, a.stdout, a.stderr)
	}
	if paid := a.srv.Stats().Charged - before; paid > 1 {
		t.Errorf("A paid %d credits for a month B had paid for, want at most the probe's 1", paid)
	}
	if !strings.Contains(a.stdout.String(), "took "+testMonth+" from s3://team-bucket/team") {
		t.Errorf("A does not say it took %s from the bucket:\n%s", testMonth, a.stdout)
	}
	sameTables(t, a, b, testMonth)
	withDB(t, a, func(db *sql.DB) {
		if n := count(t, db, `SELECT count(*) FROM run_calls WHERE run_id = ? AND snapshot_month = ?`, runOfB, testMonth); n != 2*len(domains)+1 {
			t.Errorf("A's ledger holds %d of B's calls, want all %d", n, 2*len(domains)+1)
		}
	})
	var m struct {
		RunID string `json:"run_id"`
	}
	after := getObject(t, gw, manifestKey)
	if err := json.Unmarshal([]byte(after), &m); err != nil || m.RunID != runOfB || after != published {
		t.Errorf("the bucket's manifest of %s changed or names run %q, want B's %s untouched (%v)", testMonth, m.RunID, runOfB, err)
	}
}

// TestRestoreFromUnreachableEndpoint: the message names the endpoint and what to fix, not a
// publish to rerun.
func TestRestoreFromUnreachableEndpoint(t *testing.T) {
	h := newHarness(t, atlastest.Options{}, atlastest.Domains(1), "")
	s3test.SetCredentials(t, "k", "s")
	withPublish(t, h, "http://127.0.0.1:9", "")
	code := h.run("restore")
	out := h.stderr.String()
	if code != ExitFailed || !strings.Contains(out, "http://127.0.0.1:9 does not answer") || !strings.Contains(out, "publish.endpoint") ||
		strings.Contains(out, "sitewatch publish") {
		t.Errorf("restore from an unreachable endpoint: exit %d\n%s", code, out)
	}
}

// TestReadDataNeedsVerifyOrAll: --read-data alone is a usage error (exit 2), and the help
// names it.
func TestReadDataNeedsVerifyOrAll(t *testing.T) {
	h := newHarness(t, atlastest.Options{}, atlastest.Domains(1), "")
	if code := h.run("publish", "--read-data"); code != ExitUsage || !strings.Contains(h.stderr.String(), "--read-data goes with --verify") {
		t.Errorf("publish --read-data alone: exit %d\n%s", code, h.stderr)
	}
	if code := h.run("publish", "--help"); code != ExitOK || !strings.Contains(h.stdout.String(), "[--verify] [--read-data]") {
		t.Errorf("publish --help does not name --read-data: exit %d\n%s", code, h.stdout)
	}
}
