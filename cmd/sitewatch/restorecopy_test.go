package main

import (
	"context"
	"database/sql"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/publish/iceberg/pgtest"
	"sitewatch/pipeline/publish/s3test"
	"sitewatch/schema/flatten"
)

// shareSimulator points h at from's simulator (one wallet, one count of charged calls), so a
// test sees what both machines paid together.
func shareSimulator(t *testing.T, h, from *harness) {
	t.Helper()
	h.setConfig("base_url: "+h.srv.URL, "base_url: "+from.srv.URL)
	h.srv = from.srv
}

// paidExactlyOnce fails unless every (endpoint, domain) a complete month needs was charged
// exactly once by h's simulator.
func paidExactlyOnce(t *testing.T, h *harness, domains []string) {
	t.Helper()
	fetches := h.srv.Stats().Fetches
	for f, n := range fetches {
		if n != 1 {
			t.Errorf("%s %s was paid %d times, want 1", f.Endpoint, f.Domain, n)
		}
	}
	if want := 2*len(domains) + 1; len(fetches) != want { // overview and similar per domain, and the countries
		t.Errorf("%d (endpoint, domain) pairs were paid, want %d: %v", len(fetches), want, fetches)
	}
}

// sameTables fails for every snapshot table (and countries, and the raw answers) whose rows of
// month differ between the warehouses of a and b, as multisets, leaving out when each answer
// was fetched (two machines fetch at other times).
func sameTables(t *testing.T, a, b *harness, month string) {
	t.Helper()
	db := attachBoth(t, a, b)
	queries := map[string]string{
		"countries":     `SELECT * FROM %s.countries`,
		"raw_responses": `SELECT domain, endpoint, body FROM %s.raw_responses WHERE snapshot_month = '` + month + `'`,
	}
	for _, tb := range flatten.SnapshotTables {
		queries[tb.Name] = `SELECT * EXCLUDE (fetched_at) FROM %s.` + tb.Name + ` WHERE snapshot_month = '` + month + `'`
		if tb.Schema.FieldIndices("fetched_at") == nil {
			queries[tb.Name] = `SELECT * FROM %s.` + tb.Name + ` WHERE snapshot_month = '` + month + `'`
		}
	}
	for table, q := range queries {
		qa, qb := strings.ReplaceAll(q, "%s", "a"), strings.ReplaceAll(q, "%s", "b")
		if n := count(t, db, `SELECT count(*) FROM (`+qa+`)`); n == 0 && (table == "sites" || table == "raw_responses") {
			t.Errorf("%s holds no row of %s", table, month)
		}
		if n := count(t, db, `SELECT count(*) FROM (`+qa+` EXCEPT ALL `+qb+`)`) + count(t, db, `SELECT count(*) FROM (`+qb+` EXCEPT ALL `+qa+`)`); n != 0 {
			t.Errorf("%s %s: %d rows differ between the two warehouses", table, month, n)
		}
	}
}

// TestIncompleteMonthResumesOnAnotherMachine: machine A (no disk of its own) stops for credits
// mid-month: its run saves the restore copy of the month (raw answers, ledger) apart from the
// published tables. Machine B, a fresh directory, `run --restore-if-missing` restores it and
// completes the month: across both machines every (endpoint, domain) was paid exactly once, B's
// warehouse equals a one-machine run, the bucket then holds the complete month and no copy,
// and it verifies.
func TestIncompleteMonthResumesOnAnotherMachine(t *testing.T) {
	gw := bucketGateway(t)
	domains := atlastest.Domains(6)
	a := newHarness(t, atlastest.Options{Keys: map[string]int64{"canary-key-7f3a9c": 7}}, domains, "")
	withPublish(t, a, gw.Endpoint, "")
	if code := a.run("run"); code != ExitCredits || !strings.Contains(a.stdout.String(), "restore copy of the incomplete "+testMonth) {
		t.Fatalf("A run: exit %d, want %d saving the restore copy\n%s%s", code, ExitCredits, a.stdout, a.stderr)
	}
	copyKey := "team/_restore/_manifests/snapshot_month=" + testMonth + ".json"
	if getObject(t, gw, copyKey) == "" {
		t.Fatalf("A saved no restore copy at %s", copyKey)
	}
	if got := getObject(t, gw, "team/_manifests/snapshot_month="+testMonth+".json"); got != "" {
		t.Fatalf("the incomplete month's tables were published:\n%s", got)
	}
	if code := a.run("publish", "--verify"); code != ExitOK {
		t.Errorf("publish --verify of a bucket holding a restore copy: exit %d\n%s%s", code, a.stdout, a.stderr)
	}

	a.srv.SetCredits(a.key, 10_000)
	b := sharingMachine(t, gw, a, domains)
	if code := b.run("run", "--restore-if-missing"); code != ExitOK {
		t.Fatalf("B run --restore-if-missing: exit %d\n%s%s", code, b.stdout, b.stderr)
	}
	if !strings.Contains(b.stdout.String(), "from restore copies") {
		t.Errorf("B did not say it resumed from the restore copy:\n%s", b.stdout)
	}
	paidExactlyOnce(t, a, domains)

	one := newHarness(t, atlastest.Options{}, domains, "")
	if code := one.run("run"); code != ExitOK {
		t.Fatalf("one-machine run: exit %d\n%s%s", code, one.stdout, one.stderr)
	}
	sameTables(t, one, b, testMonth)
	withDB(t, b, func(db *sql.DB) {
		if n := count(t, db, `SELECT count(DISTINCT run_id) FROM run_calls WHERE snapshot_month = ?`, testMonth); n != 2 {
			t.Errorf("B's ledger of %s names %d runs, want A's and B's", testMonth, n)
		}
	})
	if getObject(t, gw, "team/_manifests/snapshot_month="+testMonth+".json") == "" {
		t.Error("B did not publish the completed month")
	}
	if got := getObject(t, gw, copyKey); got != "" {
		t.Errorf("the restore copy outlived the complete month:\n%s", got)
	}
	if code := b.run("publish", "--verify"); code != ExitOK {
		t.Errorf("publish --verify: exit %d\n%s%s", code, b.stdout, b.stderr)
	}
	if _, err := os.Stat(filepath.Join(b.dir, "data", "w.duckdb")); err != nil {
		t.Fatal(err)
	}
}

// TestKilledRunResumesOnAnotherMachine: machine A's run is killed (SIGKILL) mid-month; the
// `sitewatch publish` its recipe runs next (once the dead run's lease expired) saves the
// restore copy from the warehouse; machine B resumes from it and completes the month, and
// every (endpoint, domain) was paid exactly once across both.
func TestKilledRunResumesOnAnotherMachine(t *testing.T) {
	gw := bucketGateway(t)
	domains := atlastest.Domains(6)
	a := newHarness(t, atlastest.Options{}, domains, "")
	var passed atomic.Int32
	held := holdAPI(t, a, func(*http.Request) bool { return passed.Add(1) > 6 })
	// 6 s, not 2: at load 25 (two CI runs at once) a 2 s lease went unconfirmed for its 1.5 s
	// while the run opened its warehouse, and the run stopped before the held request.
	withPublish(t, a, gw.Endpoint, "  lease_ttl: 6s\n")
	c, out := startHeld(t, a, held, "run", "--log-level", "debug")
	waitCommitted(t, a, out, 6)
	if err := c.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = c.Wait()
	time.Sleep(6 * time.Second) // the dead run's lease expires (its TTL)
	if code := a.run("publish"); code != ExitOK || !strings.Contains(a.stdout.String(), "saved the restore copy of "+testMonth) {
		t.Fatalf("publish after the kill: exit %d, want %d saving the restore copy\n%s%s", code, ExitOK, a.stdout, a.stderr)
	}

	b := sharingMachine(t, gw, a, domains)
	if code := b.run("run", "--restore-if-missing"); code != ExitOK {
		t.Fatalf("B run --restore-if-missing: exit %d\n%s%s", code, b.stdout, b.stderr)
	}
	paidExactlyOnce(t, a, domains)
	withDB(t, b, func(db *sql.DB) {
		if n := count(t, db, `SELECT count(*) FROM runs WHERE snapshot_month = ? AND status = 'abandoned'`, testMonth); n != 1 {
			t.Errorf("B's runs of %s hold %d abandoned runs, want A's killed run", testMonth, n)
		}
	})
	if code := b.run("publish", "--verify"); code != ExitOK {
		t.Errorf("publish --verify: exit %d\n%s%s", code, b.stdout, b.stderr)
	}
}

// TestRestoreIcebergOnly: with publish.format iceberg alone (no Hive layout), a completed run
// still leaves the restore copy in the bucket (raw answers, ledger, run health: restore reads
// no catalog); `publish --verify` checks it, `restore` on a fresh machine rebuilds a warehouse
// equal to the original, and its run of the up-to-date month spends only the probe. Before,
// such a bucket looked empty to restore, and --restore-if-missing paid for the month again.
func TestRestoreIcebergOnly(t *testing.T) {
	gw := bucketGateway(t)
	pg := pgtest.Start(t)
	t.Setenv(config.EnvCatalogPassword, pg.Password) // the run's own publish reads the process environment
	iceberg := "  format: iceberg\n  catalog: " + pg.URL + "\n"
	domains := atlastest.Domains(4)
	a := newHarness(t, atlastest.Options{}, domains, "")
	a.extraEnv = map[string]string{config.EnvCatalogPassword: pg.Password}
	withPublish(t, a, gw.Endpoint, iceberg)
	if code := a.run("run"); code != ExitOK {
		t.Fatalf("A run: exit %d\n%s%s", code, a.stdout, a.stderr)
	}
	if getObject(t, gw, "team/_restore/_manifests/snapshot_month="+testMonth+".json") == "" {
		t.Fatal("an Iceberg-only publish left no restore copy")
	}
	if getObject(t, gw, "team/_manifests/snapshot_month="+testMonth+".json") != "" {
		t.Error("an Iceberg-only publish wrote the Hive layout's manifest")
	}
	if code := a.run("publish", "--verify"); code != ExitOK || !strings.Contains(a.stdout.String(), "match their manifests") {
		t.Errorf("publish --verify: exit %d\n%s%s", code, a.stdout, a.stderr)
	}
	b := newHarness(t, atlastest.Options{}, domains, "")
	b.extraEnv = a.extraEnv
	withPublish(t, b, gw.Endpoint, iceberg)
	if code := b.run("restore"); code != ExitOK || !strings.Contains(b.stdout.String(), "from restore copies") {
		t.Fatalf("B restore: exit %d\n%s%s", code, b.stdout, b.stderr)
	}
	sameMonth(t, a, b, testMonth)
	if code := b.run("run", "--restore-if-missing"); code != ExitOK {
		t.Fatalf("B run: exit %d\n%s%s", code, b.stdout, b.stderr)
	}
	if got := b.srv.Stats().Charged; got > 1 {
		t.Errorf("a restored, up-to-date month cost %d credits, want at most the probe's 1", got)
	}

	// A bucket an older sitewatch published as Iceberg alone holds tables but no restore copy:
	// --restore-if-missing refuses to start anew (it would pay again) and names the fix.
	deletePrefix(t, gw, "team/_restore/")
	c := newHarness(t, atlastest.Options{}, domains, "")
	c.extraEnv = a.extraEnv
	withPublish(t, c, gw.Endpoint, iceberg)
	if code := c.run("run", "--restore-if-missing"); code != ExitFailed || !strings.Contains(c.stderr.String(), "sitewatch publish --all") {
		t.Errorf("run --restore-if-missing on Iceberg tables without restore copies: exit %d, want %d naming `publish --all`\n%s%s", code, ExitFailed, c.stdout, c.stderr)
	}
	if _, err := os.Stat(filepath.Join(c.dir, "data", "w.duckdb")); err == nil || c.srv.Stats().Charged != 0 {
		t.Errorf("the refused runner created a warehouse or spent %d credits", c.srv.Stats().Charged)
	}
	if code := a.run("publish", "--all"); code != ExitOK || !strings.Contains(a.stdout.String(), "saved the restore copy of "+testMonth) {
		t.Fatalf("publish --all (writes the restore copies): exit %d\n%s%s", code, a.stdout, a.stderr)
	}
	if code := c.run("run", "--restore-if-missing"); code != ExitOK || c.srv.Stats().Charged > 1 {
		t.Errorf("run --restore-if-missing after publish --all: exit %d, %d credits (want 0, at most the probe)\n%s%s", code, c.srv.Stats().Charged, c.stdout, c.stderr)
	}
}

// deletePrefix removes every object of team-bucket under prefix.
func deletePrefix(t *testing.T, gw *s3test.Server, prefix string) {
	t.Helper()
	ctx := context.Background()
	out, err := gw.Client().ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("team-bucket"), Prefix: aws.String(prefix)})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out.Contents {
		if _, err := gw.Client().DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("team-bucket"), Key: o.Key}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRestoreIfMissingStartsOverAnInterruptedFirstPublish: a first publish killed or cut
// before its manifest leaves Parquet files of the Hive layout and of a restore copy that
// nothing reads; a fresh machine's run --restore-if-missing starts the month anew instead of
// refusing the bucket for good (as it did: 2 of 100 fault-soak schedules, every runner refused
// for five minutes).
func TestRestoreIfMissingStartsOverAnInterruptedFirstPublish(t *testing.T) {
	gw := bucketGateway(t)
	domains := atlastest.Domains(2)
	putObject(t, gw, "team/sites/snapshot_month="+testMonth+"/part-0.parquet", []byte("PAR1 orphan"))
	putObject(t, gw, "team/countries/part-0.parquet", []byte("PAR1 orphan"))
	putObject(t, gw, "team/_restore/raw_responses/snapshot_month="+testMonth+"/part-0.parquet", []byte("PAR1 orphan"))
	b := newHarness(t, atlastest.Options{}, domains, "")
	withPublish(t, b, gw.Endpoint, "")
	if code := b.run("run", "--restore-if-missing"); code != ExitOK || !strings.Contains(b.stdout.String(), "starting a new warehouse") {
		t.Fatalf("run --restore-if-missing over an interrupted first publish: exit %d, want 0 starting anew\n%s%s", code, b.stdout, b.stderr)
	}
	if getObject(t, gw, "team/_manifests/snapshot_month="+testMonth+".json") == "" {
		t.Error("the run did not publish its month over the orphaned files")
	}
}

// TestRestoreIfMissingWaitsForTheWriter: while another runner holds the bucket lease, `run
// --restore-if-missing` on a fresh machine fails at once naming the holder, having restored
// nothing (no warehouse file that would keep a later run from restoring the newer bucket)
// and spent nothing.
func TestRestoreIfMissingWaitsForTheWriter(t *testing.T) {
	gw := bucketGateway(t)
	domains := atlastest.Domains(2)
	publishedMachine(t, gw, atlastest.Options{}, domains, "")
	expires := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	putObject(t, gw, "team/_sitewatch/lease.json", []byte(`{"owner":"other-1","host":"other","pid":1,"command":"sitewatch run","started":"2026-11-25T00:00:00Z","expires":"`+expires+`"}`))
	b := newHarness(t, atlastest.Options{}, domains, "")
	withPublish(t, b, gw.Endpoint, "")
	if code := b.run("run", "--restore-if-missing"); code != ExitFailed || !strings.Contains(b.stderr.String(), "holds the bucket lease") {
		t.Errorf("run --restore-if-missing while another holds the lease: exit %d, want %d naming the holder\n%s%s", code, ExitFailed, b.stdout, b.stderr)
	}
	if _, err := os.Stat(filepath.Join(b.dir, "data", "w.duckdb")); err == nil {
		t.Error("a warehouse was restored while another runner held the bucket")
	}
	if got := b.srv.Stats().Charged; got != 0 {
		t.Errorf("%d credits spent, want 0", got)
	}
}

// waitCommitted waits until the simulator has answered the passed requests the hold proxy let
// through (it holds the next) and the run's log ("answers committed", --log-level debug) counts
// a committed ledger row for every credit charged: a kill then loses no paid answer.
func waitCommitted(t *testing.T, h *harness, out *syncBuffer, passed int) {
	t.Helper()
	committed := func() int64 {
		var n int64
		for _, m := range committedRE.FindAllStringSubmatch(out.String(), -1) {
			c, _ := strconv.ParseInt(m[1], 10, 64)
			n += c
		}
		return n
	}
	for deadline := time.Now().Add(eventHangGuard); ; time.Sleep(20 * time.Millisecond) {
		st := h.srv.Stats()
		if st.Requests >= passed && h.srv.InFlight() == 0 && committed() == st.Charged {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("hung: after %v the simulator answered %d of %d requests and charged %d credits; the run committed %d charges:\n%s",
				eventHangGuard, st.Requests, passed, st.Charged, committed(), tail(out.String(), 3000))
		}
	}
}

var committedRE = regexp.MustCompile(`msg="answers committed" answers=\d+ charges=(\d+)`)
