package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// --help describes the simulator on stdout and exits 0; --version prints a version.
func TestHelpAndVersion(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"Help", []string{"--help"}, []string{"simulator of the Site Intelligence API", "marketplace listing", "-quota-reset", "-marketplace-rate"}},
		{"ShortHelp", []string{"-h"}, []string{"simulator of the Site Intelligence API"}},
		{"Version", []string{"--version"}, []string{"atlas-sim "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), tt.args, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d, want 0 (stderr %q)", code, stderr.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout.String())
				}
			}
			if stderr.Len() != 0 {
				t.Errorf("stderr = %q, want nothing", stderr.String())
			}
			if tt.name == "Version" && strings.TrimSpace(stdout.String()) == "atlas-sim" {
				t.Errorf("version is empty: %q", stdout.String())
			}
		})
	}
}

// --quota-reset takes an RFC 3339 time or a duration from start.
func TestParseReset(t *testing.T) {
	now := time.Date(2026, 11, 25, 14, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"2026-12-01T00:00:00Z": time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		"90s":                  now.Add(90 * time.Second),
	} {
		got, err := parseReset(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("parseReset(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := parseReset("-5s", now); err == nil {
		t.Error("parseReset(-5s) accepted a reset in the past")
	}
}
