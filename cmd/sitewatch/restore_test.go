package main

import (
	"context"
	"database/sql"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/publish/s3test"
	"sitewatch/pipeline/warehouse"
)

// bucketGateway starts versitygw with bucket "team-bucket" and points the AWS chain at it.
func bucketGateway(t testing.TB) *s3test.Server {
	t.Helper()
	if testing.Short() {
		t.Skip("starts versitygw; runs without -short")
	}
	gw := s3test.Start(t)
	gw.CreateBucket(t, "team-bucket")
	gw.SetEnv(t)
	return gw
}

// withPublish adds a publish section for s3://team-bucket/team at endpoint to h's config.
func withPublish(t *testing.T, h *harness, endpoint, extra string) {
	t.Helper()
	cfg, err := os.ReadFile(h.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	section := "publish:\n  url: s3://team-bucket/team\n  endpoint: " + endpoint + "\n  region: us-east-1\n  path_style: true\n" + extra
	if err := os.WriteFile(h.cfgPath, []byte(strings.Replace(string(cfg), "domains:\n", section+"domains:\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// publishedMachine is a machine sharing gw's bucket (publish.url s3://team-bucket/team, extra
// added to its publish section) whose first run completed the month its simulator serves and
// published it.
func publishedMachine(t *testing.T, gw *s3test.Server, opts atlastest.Options, domains []string, extra string) *harness {
	t.Helper()
	h := newHarness(t, opts, domains, "")
	withPublish(t, h, gw.Endpoint, extra)
	if code := h.run("run"); code != ExitOK || !strings.Contains(h.stdout.String(), "published") {
		t.Fatalf("the first machine's run: exit %d, want %d having published\n%s%s", code, ExitOK, h.stdout, h.stderr)
	}
	return h
}

// sharingMachine is another machine on gw's bucket, paying through from's simulator (one
// wallet, one count of what both machines were charged).
func sharingMachine(t *testing.T, gw *s3test.Server, from *harness, domains []string) *harness {
	t.Helper()
	h := newHarness(t, atlastest.Options{}, domains, "")
	shareSimulator(t, h, from)
	withPublish(t, h, gw.Endpoint, "")
	return h
}

// attachBoth opens an in-memory DuckDB with the warehouses of a and b attached read-only as
// a and b; it is closed when the test ends.
func attachBoth(t *testing.T, a, b *harness) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	for alias, h := range map[string]*harness{"a": a, "b": b} {
		if _, err := db.Exec(`ATTACH '` + filepath.Join(h.dir, "data/w.duckdb") + `' AS ` + alias + ` (READ_ONLY)`); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// sameMonth fails for every restorable table whose rows of month (every row, for countries)
// differ between the warehouses of a and b, as multisets; nonEmpty tables must hold rows.
func sameMonth(t *testing.T, a, b *harness, month string) {
	t.Helper()
	db := attachBoth(t, a, b)
	nonEmpty := map[string]bool{"sites": true, "raw_responses": true, "run_calls": true, "runs": true, "countries": true}
	for _, table := range warehouse.RestorableTables() {
		where := ` WHERE snapshot_month = '` + month + `'`
		if table == "countries" {
			where = ""
		}
		qa, qb := `SELECT * FROM a.`+table+where, `SELECT * FROM b.`+table+where
		if n := count(t, db, `SELECT count(*) FROM (`+qa+`)`); nonEmpty[table] && n == 0 {
			t.Errorf("%s holds no row of %s", table, month)
		}
		if n := count(t, db, `SELECT count(*) FROM (`+qa+` EXCEPT ALL `+qb+`)`) + count(t, db, `SELECT count(*) FROM (`+qb+` EXCEPT ALL `+qa+`)`); n != 0 {
			t.Errorf("%s %s: %d rows differ between the two warehouses", table, month, n)
		}
	}
}

// paidOnce fails when the simulator charged the same (endpoint, domain) twice.
func paidOnce(t *testing.T, h *harness) {
	t.Helper()
	for f, n := range h.srv.Stats().Fetches {
		if n > 1 {
			t.Errorf("%s %s was paid %d times", f.Endpoint, f.Domain, n)
		}
	}
}

// TestTwoMachines: machine A runs month 1 and publishes; machine B (a fresh directory)
// restores, runs month 2 and publishes; B holds month 1 exactly as A does, nothing was paid
// twice, and a third machine restoring and running the up-to-date month spends only the probe.
func TestTwoMachines(t *testing.T) {
	gw := bucketGateway(t)
	domains := atlastest.Domains(6)
	next := nextMonth(testMonth)
	a := publishedMachine(t, gw, atlastest.Options{}, domains, "")
	month1 := getObject(t, gw, "team/_manifests/snapshot_month="+testMonth+".json")
	b := newHarness(t, atlastest.Options{Month: next}, domains, "")
	withPublish(t, b, gw.Endpoint, "")
	if code := b.run("run", "--restore-if-missing"); code != ExitOK {
		t.Fatalf("B run --restore-if-missing: exit %d\n%s%s", code, b.stdout, b.stderr)
	}
	if got := getObject(t, gw, "team/_manifests/snapshot_month="+testMonth+".json"); got != month1 {
		t.Errorf("B's publish rewrote the manifest of %s:\n%s\nwas\n%s", testMonth, got, month1)
	}
	if getObject(t, gw, "team/_manifests/snapshot_month="+next+".json") == "" {
		t.Errorf("B did not publish %s", next)
	}
	if out := b.stdout.String(); !strings.Contains(out, "restored") || !strings.Contains(out, "0 credits") {
		t.Errorf("B did not say it restored:\n%s", out)
	}
	sameMonth(t, a, b, testMonth)
	paidOnce(t, a)
	paidOnce(t, b)
	withDB(t, b, func(db *sql.DB) {
		if n := count(t, db, `SELECT count(*) FROM sites WHERE snapshot_month = ?`, next); n != len(domains) {
			t.Errorf("B holds %d sites of %s, want %d", n, next, len(domains))
		}
	})
	if code := b.run("publish", "--verify"); code != ExitOK || !strings.Contains(b.stdout.String(), "match their manifests") {
		t.Errorf("publish --verify: exit %d\n%s%s", code, b.stdout, b.stderr)
	}

	t.Run("RefusesExistingWarehouse", func(t *testing.T) {
		if code := b.run("restore"); code != ExitFailed || !strings.Contains(b.stderr.String(), "--force") {
			t.Errorf("restore over a warehouse: exit %d, want %d pointing at --force\n%s", code, ExitFailed, b.stderr)
		}
		if code := b.run("restore", "--force"); code != ExitOK || !strings.Contains(b.stdout.String(), "kept as") {
			t.Errorf("restore --force: exit %d\n%s%s", code, b.stdout, b.stderr)
		}
		if kept, _ := filepath.Glob(filepath.Join(b.dir, "data", "w.duckdb.before-restore-*")); len(kept) != 1 {
			t.Errorf("the replaced warehouse was not kept aside: %v", kept)
		}
		sameMonth(t, a, b, testMonth)
	})

	t.Run("RestoredUpToDateSpendsOnlyTheProbe", func(t *testing.T) {
		d := newHarness(t, atlastest.Options{Month: next}, domains, "")
		withPublish(t, d, gw.Endpoint, "")
		if code := d.run("restore"); code != ExitOK {
			t.Fatalf("D restore: exit %d\n%s%s", code, d.stdout, d.stderr)
		}
		sameMonth(t, b, d, next)
		if code := d.run("run", "--restore-if-missing"); code != ExitOK {
			t.Fatalf("D run: exit %d\n%s%s", code, d.stdout, d.stderr)
		}
		if got := d.srv.Stats().Charged; got > 1 {
			t.Errorf("a restored, up-to-date month cost %d credits, want at most the probe's 1", got)
		}
	})

	t.Run("DamagedObjectNamed", func(t *testing.T) {
		key := "team/sites/snapshot_month=" + testMonth + "/data_0.parquet"
		putObject(t, gw, key, []byte("not the published bytes"))
		if code := b.run("publish", "--verify"); code != ExitFailed || !strings.Contains(b.stdout.String(), key) {
			t.Errorf("publish --verify on a replaced object: exit %d, want %d naming %s\n%s%s", code, ExitFailed, key, b.stdout, b.stderr)
		}
		e := newHarness(t, atlastest.Options{}, domains, "")
		withPublish(t, e, gw.Endpoint, "")
		if code := e.run("restore"); code != ExitFailed || !strings.Contains(e.stderr.String(), key) {
			t.Errorf("restore of a damaged bucket: exit %d, want %d naming %s\n%s", code, ExitFailed, key, e.stderr)
		}
		if _, err := os.Stat(filepath.Join(e.dir, "data", "w.duckdb")); err == nil {
			t.Error("a failed restore left a warehouse file")
		}
		if code := b.run("publish", "--all"); code != ExitOK {
			t.Fatalf("publish --all (repair): exit %d\n%s%s", code, b.stdout, b.stderr)
		}
		if code := b.run("publish", "--verify"); code != ExitOK {
			t.Errorf("publish --verify after the repair: exit %d\n%s", code, b.stdout)
		}
	})
}

func getObject(t *testing.T, gw *s3test.Server, key string) string {
	t.Helper()
	out, err := gw.Client().GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("team-bucket"), Key: aws.String(key)})
	if err != nil {
		return ""
	}
	defer out.Body.Close()
	body, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

func putObject(t *testing.T, gw *s3test.Server, key string, body []byte) {
	t.Helper()
	if _, err := gw.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("team-bucket"), Key: aws.String(key), Body: strings.NewReader(string(body))}); err != nil {
		t.Fatal(err)
	}
}

// TestTwoRunnersOnePays: two machines start a run of the same month against the same bucket at
// once: exactly one pays; the other exits 1 naming the holder, having spent nothing.
func TestTwoRunnersOnePays(t *testing.T) {
	gw := bucketGateway(t)
	domains := atlastest.Domains(6)
	hs := []*harness{newHarness(t, atlastest.Options{}, domains, ""), newHarness(t, atlastest.Options{}, domains, "")}
	for _, h := range hs {
		withPublish(t, h, gw.Endpoint, "")
	}
	codes := make([]int, 2)
	var wg sync.WaitGroup
	for i, h := range hs {
		wg.Add(1)
		go func() { defer wg.Done(); codes[i] = h.run("run") }()
	}
	wg.Wait()
	paid := 0
	for i, h := range hs {
		charged := h.srv.Stats().Charged
		switch codes[i] {
		case ExitOK:
			paid++
		case ExitFailed:
			if charged != 0 || !strings.Contains(h.stderr.String(), "holds the bucket lease") {
				t.Errorf("the runner refused spent %d credits, or did not name the holder:\n%s", charged, h.stderr)
			}
		default:
			t.Errorf("runner %d: exit %d\n%s%s", i, codes[i], h.stdout, h.stderr)
		}
	}
	if paid != 1 {
		t.Errorf("%d runners paid, want exactly 1 (exits %v)", paid, codes)
	}
}

// holdProxy is a reverse proxy in front of the gateway that holds (never answers) every
// request hold matches, and signals the first on held.
func holdProxy(t *testing.T, target string, hold func(*http.Request) bool) (string, <-chan struct{}) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	held, stop := make(chan struct{}), make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hold(r) {
			once.Do(func() { close(held) })
			// Drained, so the server reads on and notices the client's death.
			_, _ = io.Copy(io.Discard, r.Body)
			select {
			case <-r.Context().Done():
			case <-stop:
			}
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) }) // runs first: Close waits for the handlers
	return srv.URL, held
}

// holdBucket is holdProxy in front of gw holding every request of method whose path holds
// part, until release is called (later requests pass).
func holdBucket(t *testing.T, gw *s3test.Server, method, part string) (string, <-chan struct{}, func()) {
	t.Helper()
	var holding atomic.Bool
	holding.Store(true)
	px, held := holdProxy(t, gw.Endpoint, func(r *http.Request) bool {
		return holding.Load() && r.Method == method && strings.Contains(r.URL.Path, part)
	})
	return px, held, func() { holding.Store(false) }
}

// TestKillDuringRestore: a restore killed (SIGKILL) while downloading leaves no warehouse file;
// rerunning it completes, equal to the published warehouse.
func TestKillDuringRestore(t *testing.T) {
	gw := bucketGateway(t)
	domains := atlastest.Domains(6)
	a := publishedMachine(t, gw, atlastest.Options{}, domains, "")
	px, held, release := holdBucket(t, gw, http.MethodGet, "/raw_responses/")
	r := newHarness(t, atlastest.Options{}, domains, "")
	// restore holds the bucket lease like run: the killed one's expires. 6 s, not 2: a 2 s lease
	// can go unconfirmed for its 1.5 s on a loaded machine and stop restore before the kill.
	withPublish(t, r, px, "  lease_ttl: 6s\n")
	killAt(t, r, held, "restore")
	if _, err := os.Stat(filepath.Join(r.dir, "data", "w.duckdb")); err == nil {
		t.Fatal("a killed restore left a file at the warehouse path")
	}
	release()
	time.Sleep(6 * time.Second) // the killed restore's lease expires (its TTL); the rerun then watches it before taking it over
	if code := r.run("restore"); code != ExitOK {
		t.Fatalf("restore after the kill: exit %d\n%s%s", code, r.stdout, r.stderr)
	}
	sameMonth(t, a, r, testMonth)
	if left, _ := filepath.Glob(filepath.Join(r.dir, "data", "parquet", "*", "*", ".restore-*")); len(left) != 0 {
		t.Errorf("staging files of the killed restore remain: %v", left)
	}
}

// TestKillDuringRawPublish: a run killed (SIGKILL) while publishing its raw answers, holding
// the bucket lease: another publish is refused while the lease lives, takes it over once it
// expired, and converges: the bucket verifies and restores equal to the warehouse.
func TestKillDuringRawPublish(t *testing.T) {
	gw := bucketGateway(t)
	domains := atlastest.Domains(6)
	px, held, release := holdBucket(t, gw, http.MethodPut, "/raw_responses/")
	a := newHarness(t, atlastest.Options{}, domains, "")
	withPublish(t, a, px, "  lease_ttl: 6s\n") // long enough that the next publish surely finds it alive on a loaded machine
	killAt(t, a, held, "run")
	release()
	if code := a.run("publish"); code != ExitFailed || !strings.Contains(a.stderr.String(), "holds the bucket lease") {
		t.Errorf("publish while the killed run's lease lives: exit %d, want %d naming the holder\n%s", code, ExitFailed, a.stderr)
	}
	time.Sleep(6 * time.Second) // the lease's TTL; the publish then watches it for TTL+margin+api.timeout of its own
	if code := a.run("publish"); code != ExitOK || !strings.Contains(a.stderr.String(), "took over an expired bucket lease") {
		t.Fatalf("publish after the lease expired: exit %d\n%s%s", code, a.stdout, a.stderr)
	}
	if code := a.run("publish", "--verify"); code != ExitOK {
		t.Errorf("publish --verify: exit %d\n%s", code, a.stdout)
	}
	paidOnce(t, a)
	r := newHarness(t, atlastest.Options{}, domains, "")
	withPublish(t, r, gw.Endpoint, "")
	if code := r.run("restore"); code != ExitOK {
		t.Fatalf("restore: exit %d\n%s%s", code, r.stdout, r.stderr)
	}
	sameMonth(t, a, r, testMonth)
}

// killAt starts `sitewatch cmd` as a process and kills it (SIGKILL) once held is signalled.
func killAt(t *testing.T, h *harness, held <-chan struct{}, cmd string) {
	t.Helper()
	c, _ := startHeld(t, h, held, cmd)
	if err := c.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = c.Wait()
}

// startHeld starts `sitewatch args…` as a process and returns it (and its output) once held
// is signalled: one of its requests is being held. After 60 s it kills it and fails the test.
func startHeld(t *testing.T, h *harness, held <-chan struct{}, args ...string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	c, out := h.command(args...)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held:
	case <-time.After(60 * time.Second):
		_ = c.Process.Kill()
		t.Fatalf("sitewatch %v never reached the held request:\n%s", args, out)
	}
	return c, out
}

// holdAPI puts holdProxy in front of h's simulator and points h's config at it.
func holdAPI(t *testing.T, h *harness, hold func(*http.Request) bool) <-chan struct{} {
	t.Helper()
	px, held := holdProxy(t, h.srv.URL, hold)
	h.setConfig("base_url: "+h.srv.URL, "base_url: "+px)
	return held
}

// TestPublishNeverIncomplete: a month without a complete run is never published (--all skips
// its tables, saving only its restore copy apart; --snapshot refuses it), and without the runs (a writer holds the warehouse) nothing is
// published: exit 1 saying why.
func TestPublishNeverIncomplete(t *testing.T) {
	gw := bucketGateway(t)
	slow := atlastest.Options{LatencyMin: 100 * time.Millisecond, LatencyMax: 150 * time.Millisecond}
	h := newHarness(t, slow, atlastest.Domains(6), "  max_credits_per_run: 5\n")
	if code := h.run("run"); code != ExitCredits {
		t.Fatalf("capped run: exit %d, want %d\n%s%s", code, ExitCredits, h.stdout, h.stderr)
	}
	if _, err := os.Stat(filepath.Join(h.dir, "data", "parquet", "sites", "snapshot_month="+testMonth, "data_0.parquet")); err != nil {
		t.Fatalf("the incomplete month has no Parquet to refuse: %v", err)
	}
	withPublish(t, h, gw.Endpoint, "")
	if code := h.run("publish", "--all"); code != ExitOK || !strings.Contains(h.stdout.String(), "skipped "+testMonth) {
		t.Errorf("publish --all: exit %d, want %d skipping %s\n%s%s", code, ExitOK, testMonth, h.stdout, h.stderr)
	}
	if !strings.Contains(h.stdout.String(), "saved the restore copy of "+testMonth) {
		t.Errorf("publish --all did not save the incomplete month's restore copy:\n%s", h.stdout)
	}
	if code := h.run("publish", "--snapshot", testMonth); code != ExitFailed || !strings.Contains(h.stderr.String(), "no complete run") {
		t.Errorf("publish --snapshot of an incomplete month: exit %d, want %d\n%s", code, ExitFailed, h.stderr)
	}
	// A run in another process holds the warehouse, as during `run --refresh`.
	before := h.srv.Stats().Requests
	c, runOut := h.command("run", "--refresh")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Process.Kill(); _ = c.Wait() }()
	waitFor(t, func() bool { return h.srv.Stats().Requests > before })
	// It is refused before anything is written: by the bucket lease the run holds (publish
	// takes it first, to pull what the bucket holds), or, without a lease, by the warehouse
	// lock ("cannot read the runs").
	if code := h.run("publish", "--all"); code != ExitFailed || !strings.Contains(h.stderr.String(), "cannot read the runs") && !strings.Contains(h.stderr.String(), "holds the bucket lease") {
		t.Errorf("publish --all while a run holds the warehouse: exit %d, want %d saying why\n%s%s\nrun: %s", code, ExitFailed, h.stdout, h.stderr, runOut)
	}
	out, err := gw.Client().ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("team-bucket")})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out.Contents {
		if strings.HasPrefix(aws.ToString(o.Key), "team/_manifests/snapshot_month=") {
			t.Errorf("an incomplete month was published: %s", aws.ToString(o.Key))
		}
	}
}
