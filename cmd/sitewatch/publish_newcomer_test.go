package main

import (
	"os"
	"strings"
	"testing"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/publish/s3test"
)

// withBucket adds a publish section for a fresh bucket of gw to h's config.
func withBucket(t *testing.T, h *harness, gw *s3test.Server, bucket, extra string) {
	t.Helper()
	gw.CreateBucket(t, bucket)
	cfg, err := os.ReadFile(h.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg = []byte(strings.Replace(string(cfg), "domains:\n",
		"publish:\n  url: s3://"+bucket+"/sitewatch\n  endpoint: "+gw.Endpoint+"\n  region: us-east-1\n  path_style: true\n"+extra+"domains:\n", 1))
	if err := os.WriteFile(h.cfgPath, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPublishAndRestoreSayWhatTheyDo: a republish with nothing to upload says so (not "saved …
// 0 uploaded"); restore onto an existing warehouse refuses without first saying "restoring".
func TestPublishAndRestoreSayWhatTheyDo(t *testing.T) {
	if testing.Short() {
		t.Skip("starts versitygw; runs without -short")
	}
	gw := s3test.Start(t)
	gw.SetEnv(t)
	h := newHarness(t, atlastest.Options{Keys: map[string]int64{"canary-key-7f3a9c": 5}}, atlastest.Domains(4), "")
	withBucket(t, h, gw, "newcomer-republish", "")
	if code := h.run("run"); code != ExitCredits {
		t.Fatalf("run exit %d, want %d\n%s%s", code, ExitCredits, h.stdout, tail(h.stderr.String(), 2000))
	}
	if code := h.run("publish"); code != ExitOK {
		t.Fatalf("publish exit %d\n%s%s", code, h.stdout, h.stderr)
	}
	out := h.stdout.String()
	if !strings.Contains(out, "the restore copy of "+testMonth) || !strings.Contains(out, "is up to date") || !strings.Contains(out, "nothing uploaded") || strings.Contains(out, "saved the restore copy") {
		t.Errorf("a republish with nothing to upload says:\n%s", out)
	}
	if code := h.run("restore"); code != ExitFailed {
		t.Fatalf("restore onto an existing warehouse: exit %d, want %d\n%s%s", code, ExitFailed, h.stdout, h.stderr)
	}
	if out := h.stdout.String(); strings.Contains(out, "restoring") {
		t.Errorf("restore says it is restoring, then refuses:\n%s%s", out, h.stderr)
	}
	if !strings.Contains(h.stderr.String(), "give --force") {
		t.Errorf("restore does not say how to replace the warehouse:\n%s", h.stderr)
	}
}

// TestFlagHelpSaysWhatItDoes: publish --help says --verify uploads nothing; --snapshot says
// what it means to each command, not one text for all.
func TestFlagHelpSaysWhatItDoes(t *testing.T) {
	_, out, _ := mainOut("", "publish", "--help")
	if strings.Contains(out, "manifest; repairs what differs") || !strings.Contains(out, "uploads nothing (--all repairs what differs)") {
		t.Errorf("publish --help on --verify:\n%s", out)
	}
	seen := map[string]string{}
	for _, c := range commands {
		_, out, _ := mainOut("", c.name, "--help")
		i := strings.Index(out, "  --snapshot MONTH\n")
		if i < 0 {
			continue
		}
		line, _, _ := strings.Cut(out[i+len("  --snapshot MONTH\n"):], "\n")
		if other, ok := seen[line]; ok {
			t.Errorf("--snapshot of %s and %s has the same help: %s", c.name, other, line)
		}
		seen[line] = c.name
	}
	if len(seen) < 5 {
		t.Errorf("--snapshot help found for %d commands, want run, rebuild, report, changes, publish", len(seen))
	}
}
