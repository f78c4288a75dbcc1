package main

import (
	"strings"
	"testing"

	"sitewatch/pipeline/atlas/atlastest"
)

// TestCommandHelpShowsDoubleDashFlags: per-command help writes flags as the usage line does.
func TestCommandHelpShowsDoubleDashFlags(t *testing.T) {
	code, out, stderr := mainOut("", "changes", "--help")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"usage: sitewatch changes [--config F] [--snapshot YYYY-MM]", "  --config FILE\n", "  --snapshot MONTH\n", "  --month MONTH\n      alias of --snapshot"} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\n  -config") {
		t.Errorf("help writes a flag with one dash:\n%s", out)
	}
}

// TestMessagesAUserCanActOn: skipped watchlist entries are named by run, status and check;
// advice about a past month never suggests fetching it; no error says its command twice;
// `changes --month` still works beside --snapshot.
func TestMessagesAUserCanActOn(t *testing.T) {
	domains := append(atlastest.Domains(3), "github,com", "google..com")
	h := newHarness(t, atlastest.Options{}, domains, "")
	const skipped = "2 watchlist entries skipped (not host names, never sent): line 13 `github,com`, line 14 `google..com`"
	for _, args := range [][]string{{"run"}, {"status"}, {"check"}} {
		if code := h.run(args...); code != ExitOK {
			t.Fatalf("%s: exit %d\n%s\n%s", args[0], code, h.stdout, tail(h.stderr.String(), 1500))
		}
		if !strings.Contains(h.stdout.String(), skipped) {
			t.Errorf("%s does not name the skipped entries (%q):\n%s", args[0], skipped, h.stdout)
		}
	}
	if code := h.run("changes", "--month", testMonth); code != ExitOK || !strings.Contains(h.stdout.String(), "first complete month") {
		t.Errorf("changes --month %s: exit %d\n%s%s", testMonth, code, h.stdout, h.stderr)
	}
	for _, args := range [][]string{{"changes", "--snapshot", "2000-01"}, {"report", "--snapshot", "2000-01"}} {
		if code := h.run(args...); code != ExitFailed {
			t.Errorf("%v: exit %d, want %d", args, code, ExitFailed)
		}
		out := h.stderr.String()
		if strings.Contains(out, "run --snapshot") || !strings.Contains(out, "can no longer be fetched") {
			t.Errorf("%v: advice about a past month must not suggest fetching it:\n%s", args, out)
		}
		if strings.Contains(out, "sitewatch "+args[0]+": "+args[0]+":") {
			t.Errorf("%v: the command is named twice:\n%s", args, out)
		}
	}
}
