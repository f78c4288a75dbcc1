package publish_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"sitewatch/pipeline/publish"
	"sitewatch/pipeline/publish/publishtest"
)

// fixtureRun is the run of month in the fixture's runs partition (a real run's ID).
func fixtureRun(t *testing.T, fx publishtest.Fixture, month string) string {
	t.Helper()
	runs, err := publish.LocalRuns(context.Background(), fx.Parquet(), month)
	if err != nil || len(runs) == 0 {
		t.Fatalf("runs of %s in the fixture: %v %v", month, runs, err)
	}
	for id := range runs {
		return id
	}
	return ""
}

// TestStaleWriterNeverOverwrites: machine B republished a month with a run machine A never
// took in; A's publish (GuardRuns, as after a run) is refused before it uploads or deletes
// anything, naming B's run, and the bucket keeps B's manifest.
func TestStaleWriterNeverOverwrites(t *testing.T) {
	a, b := publishtest.NewFixture(t), publishtest.NewFixture(t)
	g := newGateway(t)
	px := newProxy(t, g.Endpoint)
	ctx := context.Background()
	guarded := func(o *publish.Options) { o.GuardRuns = true }
	var log bytes.Buffer
	pa := newPublisher(t, g.config(px.URL, "team"), &log, guarded)
	pb := newPublisher(t, g.config(px.URL, "team"), &log, guarded)
	if _, err := pa.Month(ctx, a.Parquet(), monthB, fixtureRun(t, a, monthB)); err != nil {
		t.Fatal(err)
	}
	// B holds A's run (both warehouses are copies of one), so B may publish over it.
	shrink(t, filepath.Join(b.Parquet(), "sites", "snapshot_month="+monthB, "data_0.parquet"))
	if _, err := pb.Month(ctx, b.Parquet(), monthB, "run-of-b"); err != nil {
		t.Fatalf("B publishing over a month whose run it holds: %v", err)
	}
	shrink(t, filepath.Join(a.Parquet(), "keywords", "snapshot_month="+monthB, "data_0.parquet"))
	px.reset()
	_, err := pa.Month(ctx, a.Parquet(), monthB, fixtureRun(t, a, monthB))
	var stale *publish.StaleError
	if !errors.As(err, &stale) || !strings.Contains(err.Error(), "run-of-b") || !strings.Contains(err.Error(), "sitewatch run") {
		t.Fatalf("A publishing over B's run: %v, want a StaleError naming run-of-b and the command that pulls it", err)
	}
	if put, del := px.count(http.MethodPut), px.count(http.MethodDelete); put != 0 || del != 0 {
		t.Errorf("the refused publish sent %d PUTs and %d DELETEs, want none", put, del)
	}
	if m, _ := g.manifest(t, "team", monthB); m.RunID != "run-of-b" {
		t.Errorf("the bucket's manifest names run %q, want B's run-of-b", m.RunID)
	}
}

// TestCompleteMonthNeverDropsACopyNamingAnotherRun: machine B saved the restore copy of a
// month with a run (a probe) machine A never took in; A, completing the month, is refused
// before it writes anything, naming B's run, and the copy stays: publishing would have dropped
// the copy, and B's ledger rows with it (found by the fault soak: a payer cut off after its
// last call published when the cut healed, over two other machines' probes).
func TestCompleteMonthNeverDropsACopyNamingAnotherRun(t *testing.T) {
	a, b := publishtest.NewFixture(t), publishtest.NewFixture(t)
	g := newGateway(t)
	ctx := context.Background()
	guarded := func(o *publish.Options) { o.GuardRuns = true }
	pa := newPublisher(t, g.config(g.Endpoint, "team"), io.Discard, guarded)
	pb := newPublisher(t, g.config(g.Endpoint, "team"), io.Discard, guarded)
	if _, err := pb.SaveRestoreCopy(ctx, b.Parquet(), monthB, "probe-of-b", true); err != nil {
		t.Fatal(err)
	}
	_, err := pa.Month(ctx, a.Parquet(), monthB, fixtureRun(t, a, monthB))
	var stale *publish.StaleError
	if !errors.As(err, &stale) || !strings.Contains(err.Error(), "probe-of-b") || !strings.Contains(err.Error(), "_restore/_manifests/") {
		t.Fatalf("A completing the month over B's copy: %v, want a StaleError naming probe-of-b and the copy", err)
	}
	if _, ok := g.manifest(t, "team", monthB); ok {
		t.Error("the refused publish wrote the month's manifest")
	}
	if m, ok := g.manifest(t, "team/_restore", monthB); !ok || m.RunID != "probe-of-b" {
		t.Errorf("B's restore copy was dropped or replaced: %v %v", m, ok)
	}
	// B holds A's run and its own: its publish of the complete month drops the copy.
	if _, err := pb.Month(ctx, b.Parquet(), monthB, "probe-of-b"); err != nil {
		t.Fatalf("B completing the month over its own copy: %v", err)
	}
	if _, ok := g.manifest(t, "team/_restore", monthB); ok {
		t.Error("the copy stayed after its own machine published the complete month")
	}
}

// TestCompleteMonthLeavesACopySavedWhileItPublished: a restore copy another machine saves
// after the complete month's guard read the bucket, while the publish uploads, is not dropped
// with the month's own: the drop reads the copy again and refuses (a StaleError) over a run
// this warehouse lacks, and the copy stands for the next run's pull.
func TestCompleteMonthLeavesACopySavedWhileItPublished(t *testing.T) {
	a, b := publishtest.NewFixture(t), publishtest.NewFixture(t)
	g := newGateway(t)
	px := newProxy(t, g.Endpoint)
	ctx := context.Background()
	guarded := func(o *publish.Options) { o.GuardRuns = true }
	pa := newPublisher(t, g.config(px.URL, "team"), io.Discard, guarded)
	pb := newPublisher(t, g.config(g.Endpoint, "team"), io.Discard, guarded)
	key := "team/_manifests/snapshot_month=" + monthB + ".json"
	var once sync.Once
	px.setHook(func(_ http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, key) {
			once.Do(func() { // B saves its copy between A's guard and A's drop
				if _, err := pb.SaveRestoreCopy(ctx, b.Parquet(), monthB, "probe-of-b", true); err != nil {
					t.Error(err)
				}
			})
		}
		return false
	})
	_, err := pa.Month(ctx, a.Parquet(), monthB, fixtureRun(t, a, monthB))
	var stale *publish.StaleError
	if !errors.As(err, &stale) || !strings.Contains(err.Error(), "probe-of-b") {
		t.Fatalf("A's drop over a copy B saved meanwhile: %v, want a StaleError naming probe-of-b", err)
	}
	if m, ok := g.manifest(t, "team/_restore", monthB); !ok || m.RunID != "probe-of-b" {
		t.Errorf("B's restore copy, saved while A published, was dropped: %v %v", m, ok)
	}
	if _, ok := g.manifest(t, "team", monthB); !ok {
		t.Error("A's complete month was not written")
	}
}

// TestManifestWrittenOnlyOverTheVersionRead: a manifest written by another machine between
// a publish's read and its write (If-Match on the ETag read; If-None-Match: * for a new
// one) makes the publish fail with a StaleError, and the other machine's manifest stands.
func TestManifestWrittenOnlyOverTheVersionRead(t *testing.T) {
	for _, existing := range []bool{false, true} {
		t.Run(map[bool]string{false: "New", true: "Replaced"}[existing], func(t *testing.T) {
			fx := publishtest.NewFixture(t)
			g := newGateway(t)
			px := newProxy(t, g.Endpoint)
			ctx := context.Background()
			p := newPublisher(t, g.config(px.URL, "team"), io.Discard)
			if existing {
				if _, err := p.Month(ctx, fx.Parquet(), monthB, "run-1"); err != nil {
					t.Fatal(err)
				}
				shrink(t, filepath.Join(fx.Parquet(), "sites", "snapshot_month="+monthB, "data_0.parquet"))
			}
			key := "team/_manifests/snapshot_month=" + monthB + ".json"
			theirs := []byte(`{"format":1,"snapshot_month":"` + monthB + `","run_id":"run-of-another-machine","files":[]}`)
			var once sync.Once
			px.setHook(func(_ http.ResponseWriter, r *http.Request) bool {
				if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, key) {
					once.Do(func() { g.put(t, key, theirs) }) // another machine's write lands first
				}
				return false
			})
			_, err := p.Month(ctx, fx.Parquet(), monthB, "run-2")
			var stale *publish.StaleError
			if !errors.As(err, &stale) {
				t.Fatalf("publish racing another machine's manifest: %v, want a StaleError", err)
			}
			if m, _ := g.manifest(t, "team", monthB); m.RunID != "run-of-another-machine" {
				t.Errorf("the other machine's manifest was overwritten: run %q", m.RunID)
			}
		})
	}
}

// TestManifestsValidated: before anything is downloaded, a manifest listing a key twice, one
// whose snapshot_month disagrees with its name or its objects, is refused naming it; a file
// under _manifests/ that is not a manifest is named and ignored.
func TestManifestsValidated(t *testing.T) {
	fx := publishtest.NewFixture(t)
	g := newGateway(t)
	ctx := context.Background()
	var log bytes.Buffer
	p := newPublisher(t, g.config(g.Endpoint, "team"), &log)
	if _, err := p.All(ctx, fx.Parquet(), nil); err != nil {
		t.Fatal(err)
	}
	g.put(t, "team/_manifests/notes.json", []byte(`{"who":"a user's note"}`))
	ms, err := p.Manifests(ctx)
	if err != nil || len(ms) != 3 {
		t.Fatalf("with a user's note under _manifests/: %d manifests, %v; want the 3 published", len(ms), err)
	}
	if !strings.Contains(log.String(), "notes.json") {
		t.Errorf("the ignored note is not named:\n%s", log.String())
	}
	good, _ := g.manifest(t, "team", monthB)
	key := "team/_manifests/snapshot_month=" + monthB + ".json"
	for name, tc := range map[string]struct {
		edit func(m *publish.Manifest)
		want string
	}{
		"KeyTwice":   {func(m *publish.Manifest) { m.Files = append(m.Files, m.Files[1]) }, good.Files[1].Key},
		"OtherMonth": {func(m *publish.Manifest) { m.SnapshotMonth = monthA }, `snapshot_month "` + monthA + `"`},
		"ObjectOfOtherMonth": {func(m *publish.Manifest) {
			m.Files[0].Key = strings.Replace(m.Files[0].Key, monthB, monthA, 1)
		}, "another month's partition"},
	} {
		t.Run(name, func(t *testing.T) {
			m := *good
			m.Files = append([]publish.ManifestFile(nil), good.Files...)
			tc.edit(&m)
			body, _ := json.Marshal(&m)
			g.put(t, key, body)
			_, err := p.Manifests(ctx)
			if !errors.Is(err, publish.ErrDamaged) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "snapshot_month="+monthB+".json") {
				t.Errorf("Manifests: %v, want refused naming %q and the manifest", err, tc.want)
			}
		})
	}
}

// TestReadDataFindsBytesChangedInPlace: an object whose bytes changed in the store under the
// same size and metadata passes the HEAD check; --read-data finds it, and a publish with
// ReadData uploads it again.
func TestReadDataFindsBytesChangedInPlace(t *testing.T) {
	fx := publishtest.NewFixture(t)
	g := newGateway(t)
	ctx := context.Background()
	p := newPublisher(t, g.config(g.Endpoint, "team"), io.Discard)
	if _, err := p.All(ctx, fx.Parquet(), nil); err != nil {
		t.Fatal(err)
	}
	key := "sites/snapshot_month=" + monthB + "/data_0.parquet"
	backing := filepath.Join(g.Dir, g.bucket, "team", filepath.FromSlash(key))
	body, err := os.ReadFile(backing)
	if err != nil {
		t.Fatalf("versitygw's backing file: %v", err)
	}
	body[len(body)/2] ^= 0xff // same size, same metadata (xattrs kept: written in place)
	if err := os.WriteFile(backing, body, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, bad, err := p.Verify(ctx); err != nil || len(bad) != 0 {
		t.Fatalf("HEAD verify: %v %v; the premise is that metadata alone cannot see this", bad, err)
	}
	reading := newPublisher(t, g.config(g.Endpoint, "team"), io.Discard, func(o *publish.Options) { o.ReadData = true })
	checked, bad, err := reading.Verify(ctx)
	if err != nil || len(bad) != 1 || bad[0].Key != key {
		t.Fatalf("verify --read-data: %d checked, %v, %v; want exactly %s", checked, bad, err, key)
	}
	res, err := reading.All(ctx, fx.Parquet(), nil)
	if err != nil {
		t.Fatal(err)
	}
	uploaded := 0
	for _, r := range res {
		uploaded += r.Uploaded
	}
	if uploaded != 1 {
		t.Errorf("publish --all --read-data uploaded %d objects, want the 1 corrupted", uploaded)
	}
	if _, bad, err := reading.Verify(ctx); err != nil || len(bad) != 0 {
		t.Errorf("after the repair: %v %v", bad, err)
	}
}
