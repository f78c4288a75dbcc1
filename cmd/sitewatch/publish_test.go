package main

import (
	"database/sql"
	"os"
	"strings"
	"testing"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/publish/s3test"
)

// TestPublishCommand runs a snapshot, then `sitewatch publish` to a real gateway twice: the
// first uploads the month, the second finds it unchanged.
func TestPublishCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("starts versitygw; runs without -short")
	}
	gw := s3test.Start(t)
	gw.CreateBucket(t, "warehouse-cli")
	gw.SetEnv(t)
	h := newHarness(t, atlastest.Options{}, []string{"a.example", "b.example"}, "")
	cfg, err := os.ReadFile(h.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg = []byte(strings.Replace(string(cfg), "domains:\n",
		"publish:\n  url: s3://warehouse-cli/sitewatch\n  endpoint: "+gw.Endpoint+"\n  region: us-east-1\n  path_style: true\ndomains:\n", 1))
	if err := os.WriteFile(h.cfgPath, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	// A completed run publishes its month by itself.
	if code := h.run("run", "--snapshot", testMonth); code != ExitOK {
		t.Fatalf("run: exit %d\n%s%s", code, h.stdout, h.stderr)
	}
	if out := h.stdout.String(); !strings.Contains(out, "published: s3://warehouse-cli/sitewatch") {
		t.Errorf("the run's summary does not say it published:\n%s", out)
	}
	if code := h.run("publish", "--snapshot", testMonth); code != ExitOK {
		t.Fatalf("publish: exit %d\n%s%s", code, h.stdout, h.stderr)
	}
	if out := h.stdout.String(); !strings.Contains(out, " 0 uploaded") && !strings.Contains(out, testMonth+" already published") {
		t.Errorf("publish after the run's own publish uploaded again:\n%s", out)
	}
	if code := h.run("publish", "--all"); code != ExitOK {
		t.Fatalf("publish --all: exit %d\n%s%s", code, h.stdout, h.stderr)
	}
	if out := h.stdout.String(); !strings.Contains(out, testMonth+" already published") {
		t.Errorf("republish printed:\n%s", out)
	}
	t.Setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret-5f2b")
	if code := h.run("publish", "--all"); code != ExitFailed {
		t.Fatalf("publish with a wrong secret: exit %d, want %d", code, ExitFailed)
	}
	if out := h.stderr.String(); !strings.Contains(out, "rejected the credentials") || strings.Contains(out, "not-the-secret-5f2b") {
		t.Errorf("wrong secret: stderr does not explain, or shows the secret:\n%s", out)
	}
	// With the lease on, a bucket that refuses the credentials stops the run before its first
	// credit: it cannot know whether another runner pays for the month.
	charged := h.srv.Stats().Charged
	if code := h.run("run", "--snapshot", testMonth, "--refresh"); code != ExitFailed || h.srv.Stats().Charged != charged {
		t.Fatalf("run with a failing bucket and the lease on: exit %d, want %d having spent nothing\n%s", code, ExitFailed, h.stderr)
	}
	// Without the lease, a failing bucket never fails the local load: the run loads, then
	// reports the publish failure apart with exit 1.
	cfg = []byte(strings.Replace(string(cfg), "  path_style: true\n", "  path_style: true\n  lease: off\n", 1))
	if err := os.WriteFile(h.cfgPath, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := h.run("run", "--snapshot", testMonth, "--refresh"); code != ExitFailed {
		t.Fatalf("run with a failing bucket: exit %d, want %d\n%s", code, ExitFailed, h.stdout)
	}
	if out := h.stdout.String(); !strings.Contains(out, "publish FAILED") || !strings.Contains(out, "complete") || strings.Contains(out, "not-the-secret-5f2b") {
		t.Errorf("run summary with a failing bucket:\n%s", out)
	}
	withDB(t, h, func(db *sql.DB) {
		if n := count(t, db, "SELECT count(*) FROM sites WHERE snapshot_month = ?", testMonth); n != 2 {
			t.Errorf("sites = %d after a failed publish, want 2", n)
		}
	})
}
