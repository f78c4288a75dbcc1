package publish_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"sitewatch/pipeline/buildinfo"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/model"
	"sitewatch/pipeline/publish"
	"sitewatch/pipeline/publish/filehash"
	"sitewatch/pipeline/publish/publishtest"
	"sitewatch/pipeline/publish/s3test"
	"sitewatch/schema/flatten"
)

// manifest reads the published manifest of month under prefix.
func (g *gateway) manifest(t *testing.T, prefix, month string) (*publish.Manifest, bool) {
	t.Helper()
	out, err := g.Client().GetObject(context.Background(), &s3.GetObjectInput{Bucket: &g.bucket, Key: aws.String(prefix + "/_manifests/snapshot_month=" + month + ".json")})
	if err != nil {
		if strings.Contains(err.Error(), "NoSuchKey") {
			return nil, false
		}
		t.Fatal(err)
	}
	defer out.Body.Close()
	var m publish.Manifest
	if err := json.NewDecoder(out.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	return &m, true
}

// checkReadBack downloads everything under prefix and checks that the month's objects hold
// exactly the warehouse's rows of every table, and that the manifest describes them.
func checkReadBack(t *testing.T, g *gateway, fx publishtest.Fixture, prefix, month, runID string) {
	t.Helper()
	dir := g.download(t, prefix)
	db := openDuckDB(t, "")
	if _, err := db.Exec(`ATTACH '` + fx.DB() + `' AS wh (READ_ONLY)`); err != nil {
		t.Fatal(err)
	}
	for _, tab := range flatten.SnapshotTables {
		glob := filepath.Join(dir, tab.Name, "*", "*.parquet")
		cols := `"` + strings.Join(tab.ColumnNames()[1:], `", "`) + `"`
		remote := `SELECT ` + cols + ` FROM read_parquet('` + glob + `', hive_partitioning = true, hive_types = {'snapshot_month': VARCHAR}) WHERE snapshot_month = '` + month + `'`
		local := `SELECT ` + cols + ` FROM wh.` + tab.Name + ` WHERE snapshot_month = '` + month + `'`
		want := queryInt(t, db, `SELECT count(*) FROM (`+local+`)`)
		if got := queryInt(t, db, `SELECT count(*) FROM (`+remote+`)`); got != want {
			t.Errorf("%s %s: %d rows published, warehouse has %d", tab.Name, month, got, want)
		}
		if n := differ(t, db, local, remote); n != 0 {
			t.Errorf("%s %s: %d rows differ between the warehouse and the published objects", tab.Name, month, n)
		}
	}
	countries := filepath.Join(dir, "countries", "data_0.parquet")
	if n := differ(t, db, `SELECT * FROM wh.countries`, `SELECT * FROM read_parquet('`+countries+`')`); n != 0 {
		t.Errorf("countries: %d rows differ", n)
	}
	m, ok := g.manifest(t, prefix, month)
	if !ok {
		t.Fatalf("no manifest for %s", month)
	}
	if m.SnapshotMonth != month || m.RunID != runID || m.SitewatchVersion != "test-1.0" || m.Format != publish.ManifestFormat {
		t.Errorf("manifest header = %+v", m)
	}
	if got, want := len(m.Files), monthFiles; got != want {
		t.Errorf("manifest lists %d files, want %d", got, want)
	}
	for _, f := range m.Files {
		body, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Key)))
		if err != nil {
			t.Errorf("manifest lists %s: %v", f.Key, err)
			continue
		}
		sum := sha256.Sum256(body)
		if hex.EncodeToString(sum[:]) != f.SHA256 || int64(len(body)) != f.Size || f.S3ChecksumSHA256 == "" {
			t.Errorf("manifest entry %+v does not describe the object (%d bytes, sha256 %x)", f, len(body), sum)
		}
		rows := queryInt(t, db, `SELECT count(*) FROM read_parquet('`+filepath.Join(dir, filepath.FromSlash(f.Key))+`')`)
		if rows != f.Rows {
			t.Errorf("%s: manifest says %d rows, the object has %d", f.Key, f.Rows, rows)
		}
	}
}

// differ counts the rows of a missing from b and of b missing from a (as multisets).
func differ(t *testing.T, db *sql.DB, a, b string) int64 {
	t.Helper()
	return queryInt(t, db, `SELECT count(*) FROM (`+a+` EXCEPT ALL `+b+`)`) + queryInt(t, db, `SELECT count(*) FROM (`+b+` EXCEPT ALL `+a+`)`)
}

func TestPublishMonth(t *testing.T) {
	fx := publishtest.NewFixture(t)
	g := newGateway(t)
	px := newProxy(t, g.Endpoint)
	var log bytes.Buffer
	p := newPublisher(t, g.config(px.URL, "team/sitewatch"), &log)
	res, err := p.Month(context.Background(), fx.Parquet(), monthB, "run-b")
	if err != nil {
		t.Fatal(err)
	}
	files := publishedFiles
	if res.Files != files || res.Uploaded != files || res.Unchanged != 0 || !res.ManifestWritten || res.Rows == 0 {
		t.Errorf("first publish: %+v, want %d files all uploaded and a manifest", res, files)
	}
	if got := px.count(http.MethodPut); got != files+2 {
		t.Errorf("%d PUTs, want %d files + 2 manifests (the month's, the shared tables')", got, files+2)
	}
	checkReadBack(t, g, fx, "team/sitewatch", monthB, "run-b")
	if _, ok := g.manifest(t, "team/sitewatch", monthA); ok {
		t.Errorf("publishing %s wrote a manifest of %s", monthB, monthA)
	}

	t.Run("RepublishUploadsNothing", func(t *testing.T) {
		px.reset()
		res, err := p.Month(context.Background(), fx.Parquet(), monthB, "run-b")
		if err != nil {
			t.Fatal(err)
		}
		if res.Uploaded != 0 || res.Unchanged != files || res.Deleted != 0 || res.ManifestWritten {
			t.Errorf("republish: %+v, want nothing uploaded, deleted or rewritten", res)
		}
		if put, del := px.count(http.MethodPut), px.count(http.MethodDelete); put != 0 || del != 0 {
			t.Errorf("republish sent %d PUTs and %d DELETEs, want none", put, del)
		}
	})

	t.Run("RunThenPublishCommandPutsNothing", func(t *testing.T) {
		// `run` and `sitewatch publish` each build their own Publisher without naming a
		// version: both record the build's one version string, so the command after a run
		// finds the manifest current.
		byRun := newPublisher(t, g.config(px.URL, "team/sitewatch"), &log, func(o *publish.Options) { o.Version = "" })
		if _, err := byRun.Month(context.Background(), fx.Parquet(), monthA, "run-a"); err != nil {
			t.Fatal(err)
		}
		m, _ := g.manifest(t, "team/sitewatch", monthA)
		if m.SitewatchVersion == "" || m.SitewatchVersion != buildinfo.Version() {
			t.Errorf("manifest sitewatch_version %q, want the build's %q", m.SitewatchVersion, buildinfo.Version())
		}
		px.reset()
		byCommand := newPublisher(t, g.config(px.URL, "team/sitewatch"), &log, func(o *publish.Options) { o.Version = "" })
		res, err := byCommand.Month(context.Background(), fx.Parquet(), monthA, "")
		if err != nil {
			t.Fatal(err)
		}
		if put := px.count(http.MethodPut); put != 0 || res.ManifestWritten {
			t.Errorf("publish right after the run sent %d PUTs (manifest rewritten: %v), want none", put, res.ManifestWritten)
		}
	})

	t.Run("ChangedFileStaleObjectAndUsersFile", func(t *testing.T) {
		// A stale object sitewatch wrote beside a partition (a publish killed before its
		// manifest: it carries the sitewatch-sha256 metadata), a user's file in the same
		// folder, and one table that changed locally: only that file is uploaded, the stale
		// one is deleted, the user's file is left alone and listed in no manifest.
		putWithSum(t, g, "team/sitewatch/sites/snapshot_month="+monthB+"/data_1.parquet", []byte("stale"))
		g.put(t, "team/sitewatch/sites/snapshot_month="+monthB+"/notes.parquet", []byte("mine"))
		shrink(t, filepath.Join(fx.Parquet(), "keywords", "snapshot_month="+monthB, "data_0.parquet"))
		px.reset()
		res, err := p.Month(context.Background(), fx.Parquet(), monthB, "run-b2")
		if err != nil {
			t.Fatal(err)
		}
		if res.Uploaded != 1 || res.Deleted != 1 || !res.ManifestWritten {
			t.Errorf("changed republish: %+v, want 1 upload, 1 delete, a new manifest", res)
		}
		if put := px.count(http.MethodPut); put != 2 {
			t.Errorf("%d PUTs, want the changed file and the manifest", put)
		}
		dir := g.download(t, "team/sitewatch")
		if _, err := os.Stat(filepath.Join(dir, "sites", "snapshot_month="+monthB, "data_1.parquet")); err == nil {
			t.Error("the stale object is still published")
		}
		if _, err := os.Stat(filepath.Join(dir, "sites", "snapshot_month="+monthB, "notes.parquet")); err != nil {
			t.Errorf("the user's file in the partition was deleted: %v", err)
		}
		if !strings.Contains(log.String(), "notes.parquet") {
			t.Error("the log does not name the user's file it left alone")
		}
		m, _ := g.manifest(t, "team/sitewatch", monthB)
		if m.RunID != "run-b2" {
			t.Errorf("manifest run_id %q, want run-b2", m.RunID)
		}
	})
	for _, secret := range []string{g.SecretKey, g.AccessKey} {
		if strings.Contains(log.String(), secret) {
			t.Fatal("a credential appears in the log")
		}
	}
}

// putWithSum stores body at key with the sitewatch-sha256 metadata a publish writes.
func putWithSum(t *testing.T, g *gateway, key string, body []byte) {
	t.Helper()
	sum := sha256.Sum256(body)
	if _, err := g.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: &g.bucket, Key: &key, Body: bytes.NewReader(body),
		Metadata: map[string]string{"sitewatch-sha256": hex.EncodeToString(sum[:])}}); err != nil {
		t.Fatal(err)
	}
}

// shrink rewrites the Parquet file at path with only its first row.
func shrink(t *testing.T, path string) {
	t.Helper()
	db := openDuckDB(t, "")
	tmp := path + ".new"
	if _, err := db.Exec(`COPY (SELECT * FROM read_parquet('` + path + `') LIMIT 1) TO '` + tmp + `' (FORMAT PARQUET)`); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestAllAndPending(t *testing.T) {
	fx := publishtest.NewFixture(t)
	g := newGateway(t)
	p := newPublisher(t, g.config(g.Endpoint, "p"), io.Discard)
	ctx := context.Background()
	pending := func() []string {
		t.Helper()
		ms, err := p.Pending(ctx, fx.Parquet())
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}
	if got := strings.Join(pending(), ","); got != monthA+","+monthB {
		t.Errorf("pending before any publish = %q, want both months", got)
	}
	if _, err := p.Month(ctx, fx.Parquet(), monthA, "run-a"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(pending(), ","); got != monthB {
		t.Errorf("pending after publishing %s = %q, want %s", monthA, got, monthB)
	}
	results, err := p.All(ctx, fx.Parquet(), map[string]string{monthB: "run-b"})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 2 || results[0].Uploaded != 0 || results[1].Uploaded == 0 {
		t.Errorf("All: %+v, want %s unchanged and %s uploaded", results, monthA, monthB)
	}
	if got := pending(); len(got) != 0 {
		t.Errorf("pending after All = %q, want none", got)
	}
	checkReadBack(t, g, fx, "p", monthA, "run-a")
	checkReadBack(t, g, fx, "p", monthB, "run-b")
	if _, err := p.Month(ctx, fx.Parquet(), "2025-01", ""); !errors.Is(err, publish.ErrNoMonth) {
		t.Errorf("publishing a month the tree lacks: %v, want ErrNoMonth", err)
	}
}

func TestFailures(t *testing.T) {
	fx := publishtest.NewFixture(t)
	g := newGateway(t)
	ctx := context.Background()
	t.Run("WrongCredentials", func(t *testing.T) {
		wrong := "wrong-secret-d41d8cd98f00"
		s3test.SetCredentials(t, g.AccessKey, wrong)
		var log bytes.Buffer
		p := newPublisher(t, g.config(g.Endpoint, "p"), &log)
		_, err := p.Month(ctx, fx.Parquet(), monthB, "")
		if !errors.Is(err, publish.ErrCredentials) {
			t.Fatalf("err = %v, want ErrCredentials", err)
		}
		msg := err.Error()
		if !strings.Contains(msg, "AWS_SECRET_ACCESS_KEY") || !strings.Contains(msg, "s3://warehouse/p/") {
			t.Errorf("message does not say what failed and what to do: %s", msg)
		}
		for _, secret := range []string{wrong, g.AccessKey, g.SecretKey} {
			if strings.Contains(msg, secret) || strings.Contains(log.String(), secret) {
				t.Errorf("a credential appears in the error or the log: %s", msg)
			}
		}
	})
	t.Run("NoCredentials", func(t *testing.T) {
		s3test.SetCredentials(t, "", "")
		_, err := publish.New(ctx, g.config(g.Endpoint, "p"), publish.Options{})
		if !errors.Is(err, publish.ErrCredentials) || !strings.Contains(err.Error(), "AWS_ACCESS_KEY_ID") {
			t.Errorf("err = %v, want ErrCredentials naming the variables", err)
		}
	})
	t.Run("BucketMissing", func(t *testing.T) {
		cfg := g.config(g.Endpoint, "p")
		cfg.URL = "s3://no-such-bucket/p"
		_, err := newPublisher(t, cfg, io.Discard).Month(ctx, fx.Parquet(), monthB, "")
		if !errors.Is(err, publish.ErrNoBucket) || !strings.Contains(err.Error(), "no-such-bucket") {
			t.Errorf("err = %v, want ErrNoBucket naming the bucket", err)
		}
	})
	t.Run("ServerDown", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		down := "http://" + l.Addr().String()
		l.Close()
		p := newPublisher(t, g.config(down, "p"), io.Discard, func(o *publish.Options) { o.MaxBackoff = 50 * time.Millisecond })
		_, err = p.Month(ctx, fx.Parquet(), monthB, "")
		if !errors.Is(err, publish.ErrUnreachable) || !strings.Contains(err.Error(), "publish.endpoint") {
			t.Errorf("err = %v, want ErrUnreachable pointing at publish.endpoint", err)
		}
	})
	t.Run("AfterRunReportsApart", func(t *testing.T) {
		cfg := g.config(g.Endpoint, "p")
		cfg.URL = "s3://no-such-bucket/p"
		_, err := publish.AfterRun(ctx, cfg, fx.Parquet(), monthB, "run-1", publish.Options{MaxAttempts: 1})
		var failed *publish.FailedError
		if !errors.As(err, &failed) || failed.Month != monthB || !errors.Is(err, publish.ErrNoBucket) {
			t.Errorf("err = %v, want a *FailedError of %s wrapping ErrNoBucket", err, monthB)
		}
		res, err := publish.AfterRun(ctx, config.PublishConfig{}, fx.Parquet(), monthB, "run-1", publish.Options{})
		if res != nil || err != nil {
			t.Errorf("AfterRun without publish.url = %v, %v; want nil, nil", res, err)
		}
	})
	t.Run("AfterRunWritesTheFormatsItIsGiven", func(t *testing.T) {
		var wrote []string
		format := func(_ context.Context, _ config.PublishConfig, root, month string, _ *slog.Logger) error {
			wrote = append(wrote, month+" from "+root)
			return nil
		}
		_, err := publish.AfterRun(ctx, g.config(g.Endpoint, "after"), fx.Parquet(), monthB, "run-1",
			publish.Options{After: []publish.MonthHook{format, format}})
		if err != nil {
			t.Fatal(err)
		}
		if want := monthB + " from " + fx.Parquet(); len(wrote) != 2 || wrote[0] != want || wrote[1] != want {
			t.Errorf("the formats wrote %q, want %q twice (each given format, after the Hive layout)", wrote, want)
		}
		failing := func(context.Context, config.PublishConfig, string, string, *slog.Logger) error {
			return errors.New("catalog down")
		}
		_, err = publish.AfterRun(ctx, g.config(g.Endpoint, "after"), fx.Parquet(), monthB, "run-1",
			publish.Options{After: []publish.MonthHook{failing}})
		var failed *publish.FailedError
		if !errors.As(err, &failed) || !strings.Contains(err.Error(), "catalog down") {
			t.Errorf("err = %v, want a *FailedError naming the format's failure", err)
		}
	})
}

// TestRetriesThrottling puts a proxy in front of the gateway that answers the first attempt
// of every request with 503 SlowDown: the publish completes through the SDK's retries.
func TestRetriesThrottling(t *testing.T) {
	fx := publishtest.NewFixture(t)
	g := newGateway(t)
	px := newProxy(t, g.Endpoint)
	var mu sync.Mutex
	seen := map[string]bool{}
	throttled := 0
	px.setHook(func(w http.ResponseWriter, r *http.Request) bool {
		mu.Lock()
		defer mu.Unlock()
		id := r.Method + " " + r.URL.String()
		if seen[id] {
			return false
		}
		seen[id] = true
		throttled++
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)
		return true
	})
	p := newPublisher(t, g.config(px.URL, "p"), io.Discard, func(o *publish.Options) { o.MaxBackoff = 20 * time.Millisecond })
	res, err := p.Month(context.Background(), fx.Parquet(), monthB, "run-b")
	if err != nil {
		t.Fatalf("publish through throttling: %v", err)
	}
	if throttled < res.Files {
		t.Errorf("only %d requests were throttled; the test does not exercise retries", throttled)
	}
	checkReadBack(t, g, fx, "p", monthB, "run-b")
}

// TestMultipart publishes a tree with a file above the part size: it goes up in parts, each
// verified by the server, and comes back byte for byte.
func TestMultipart(t *testing.T) {
	root := t.TempDir()
	big := filepath.Join(root, "events", "snapshot_month="+monthB, "data_0.parquet")
	if err := os.MkdirAll(filepath.Dir(big), 0o755); err != nil {
		t.Fatal(err)
	}
	db := openDuckDB(t, "")
	if _, err := db.Exec(`COPY (SELECT i, md5(i::VARCHAR) || md5((i * 7)::VARCHAR) AS s FROM range(250000) t(i)) TO '` + big + `' (FORMAT PARQUET, COMPRESSION uncompressed)`); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(big)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() < 11<<20 {
		t.Fatalf("test file is %d bytes; it must exceed two parts of 5 MiB", st.Size())
	}
	// A second large file: the two multipart uploads must not overlap (each holds a pool of
	// part buffers, Concurrency+1 parts).
	second := filepath.Join(root, "keywords", "snapshot_month="+monthB, "data_0.parquet")
	if err := os.MkdirAll(filepath.Dir(second), 0o755); err != nil {
		t.Fatal(err)
	}
	body, _ := os.ReadFile(big)
	if err := os.WriteFile(second, body, 0o644); err != nil {
		t.Fatal(err)
	}
	g := newGateway(t)
	px := newProxy(t, g.Endpoint)
	var mu sync.Mutex
	open, most := 0, 0
	px.setHook(func(_ http.ResponseWriter, r *http.Request) bool {
		mu.Lock()
		defer mu.Unlock()
		switch q := r.URL.Query(); {
		case r.Method == http.MethodPost && q.Has("uploads"):
			open++
			most = max(most, open)
		case r.Method == http.MethodPost && q.Has("uploadId"):
			open--
		}
		return false
	})
	p := newPublisher(t, g.config(px.URL, "p"), io.Discard, func(o *publish.Options) { o.PartSize = 5 << 20 })
	res, err := p.Month(context.Background(), root, monthB, "run-big")
	if err != nil {
		t.Fatal(err)
	}
	if res.Uploaded != 2 || res.Rows != 500000 {
		t.Errorf("result %+v, want 2 uploads of 250000 rows", res)
	}
	if most != 1 {
		t.Errorf("%d multipart uploads ran at once, want 1: each holds its own part buffers", most)
	}
	m, _ := g.manifest(t, "p", monthB)
	if len(m.Files) != 2 || !strings.Contains(m.Files[0].S3ChecksumSHA256, "-") || !strings.Contains(m.Files[1].S3ChecksumSHA256, "-") {
		t.Errorf("manifest %+v: want two multipart objects (checksum of part checksums, \"…-N\")", m.Files)
	}
	dir := g.download(t, "p")
	got, err := os.ReadFile(filepath.Join(dir, "events", "snapshot_month="+monthB, "data_0.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(big)
	if !bytes.Equal(got, want) {
		t.Error("the multipart object differs from the local file")
	}
}

// childEnv makes the test binary a publishing child process (see runChild).
const childEnv = "PUBLISH_TEST_CHILD"

// runChild publishes one month with one connection: SITEWATCH env PUBLISH_TEST_CHILD=
// endpoint|parquetRoot|month. The parent kills it mid-publish.
func runChild() int {
	parts := strings.Split(os.Getenv(childEnv), "|")
	cfg := config.PublishConfig{URL: "s3://warehouse/p", Endpoint: parts[0], Region: "us-east-1", PathStyle: true}
	p, err := publish.New(context.Background(), cfg, publish.Options{Concurrency: 1, Version: "test-1.0"})
	if err != nil {
		os.Stderr.WriteString(err.Error())
		return 1
	}
	if _, err := p.Month(context.Background(), parts[1], parts[2], "run-killed"); err != nil {
		os.Stderr.WriteString(err.Error())
		return 1
	}
	return 0
}

// TestKilledMidPublish kills (SIGKILL) a publishing process while its third upload is in
// flight; the next publish uploads only what is missing, and then writes the manifest.
func TestKilledMidPublish(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process; runs without -short")
	}
	fx := publishtest.NewFixture(t)
	g := newGateway(t)
	px := newProxy(t, g.Endpoint)
	third := make(chan struct{})
	var puts int
	var mu sync.Mutex
	px.setHook(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodPut {
			return false
		}
		mu.Lock()
		puts++
		n := puts
		mu.Unlock()
		// PUTs 1-2 are countries and the shared manifest; 3 the month's first object.
		if n < 4 {
			return false
		}
		if n == 4 {
			close(third)
		}
		// Hold it until the child dies; the body is drained so the server notices the
		// closed connection and cancels the request's context.
		io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
		return true
	})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+px.URL+"|"+fx.Parquet()+"|"+monthB)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-third:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("the child never reached its third upload:\n%s", stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if _, ok := g.manifest(t, "p", monthB); ok {
		t.Fatal("a manifest was written by the killed publish")
	}

	p := newPublisher(t, g.config(g.Endpoint, "p"), io.Discard)
	res, err := p.Month(context.Background(), fx.Parquet(), monthB, "run-b")
	if err != nil {
		t.Fatal(err)
	}
	if res.Unchanged != 2 || res.Uploaded != res.Files-2 || !res.ManifestWritten {
		t.Errorf("resumed publish: %+v, want the 2 finished uploads kept and the rest uploaded", res)
	}
	checkReadBack(t, g, fx, "p", monthB, "run-b")
}

func TestParseURL(t *testing.T) {
	for _, tc := range []struct {
		in, bucket, prefix string
		ok                 bool
	}{
		{"s3://b", "b", "", true},
		{"s3://b/", "b", "", true},
		{"s3://b/team/sitewatch/", "b", "team/sitewatch", true},
		{"https://b/x", "", "", false},
		{"s3:///x", "", "", false},
		{"s3://key:secret@b/x", "", "", false},
		{"s3://b/x?versionId=1", "", "", false},
	} {
		loc, err := publish.ParseURL(tc.in)
		if (err == nil) != tc.ok || loc.Bucket != tc.bucket || loc.Prefix != tc.prefix {
			t.Errorf("ParseURL(%q) = %+v, %v", tc.in, loc, err)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("ParseURL(%q) echoes the credentials: %v", tc.in, err)
		}
	}
}

// publishedFiles is the files a publish of one month puts: the snapshot tables, the run-health
// tables (runs, fetch_errors, quality_checks), the archive tables (raw answers, ledger) and
// countries; monthFiles is those the month's manifest lists (countries has the shared one).
var (
	publishedFiles = len(flatten.SnapshotTables) + len(model.RunHealthTables) + len(model.ArchiveTables) + 1
	monthFiles     = publishedFiles - 1
)

// TestRepublishReadsNoUnchangedFile: the SHA-256 of a file unchanged since the last publish
// comes from the tree's sum cache, not from its bytes (issue 34). The proof is a file whose
// bytes are changed in place with its size and modification time put back: a republish
// trusts the cache and uploads nothing, and `--read-data` (Options.ReadData) reads every
// file and uploads it.
func TestRepublishReadsNoUnchangedFile(t *testing.T) {
	fx := publishtest.NewFixture(t)
	publishtest.AgeTree(t, fx.Parquet())
	g := newGateway(t)
	var log bytes.Buffer
	p := newPublisher(t, g.config(g.Endpoint, "sums"), &log)
	if _, err := p.Month(context.Background(), fx.Parquet(), monthB, "run-b"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(fx.Parquet(), filehash.File)); err != nil {
		t.Fatalf("the publish saved no sum cache: %v", err)
	}
	target := filepath.Join(fx.Parquet(), "keywords", "snapshot_month="+monthB, "data_0.parquet")
	publishtest.FlipByteKeepingTime(t, target)

	res, err := p.Month(context.Background(), fx.Parquet(), monthB, "run-b")
	if err != nil {
		t.Fatal(err)
	}
	if res.Uploaded != 0 {
		t.Errorf("republish uploaded %d files, want 0: it read a file its cache vouches for", res.Uploaded)
	}
	readAll := newPublisher(t, g.config(g.Endpoint, "sums"), &log, func(o *publish.Options) { o.ReadData = true })
	res, err = readAll.Month(context.Background(), fx.Parquet(), monthB, "run-b")
	if err != nil {
		t.Fatal(err)
	}
	if res.Uploaded != 1 {
		t.Errorf("publish with --read-data uploaded %d files, want the 1 whose bytes changed", res.Uploaded)
	}
}
