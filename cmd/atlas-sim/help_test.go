package main

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync"
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

// syncWriter is a buffer the server's goroutines and the test share.
type syncWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestQuietLogsNoRequest: with --quiet the simulator answers as usual but writes no line per
// request to stderr (the README's two-month recipe shares the terminal with sitewatch); without
// it each request is logged.
func TestQuietLogsNoRequest(t *testing.T) {
	for _, quiet := range []bool{true, false} {
		args := []string{"--addr", "127.0.0.1:0", "--month", "2026-10"}
		if quiet {
			args = append(args, "--quiet")
		}
		var stdout, stderr syncWriter
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan int, 1)
		go func() { done <- run(ctx, args, &stdout, &stderr) }()
		deadline := time.Now().Add(time.Minute) // a hang guard: a loaded machine may take seconds to listen
		for !strings.Contains(stdout.String(), "\n") && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if !strings.Contains(stdout.String(), "\n") {
			cancel()
			t.Fatalf("--quiet %v: no listening line within a minute: %s", quiet, stderr.String())
		}
		url := strings.TrimSpace(strings.TrimPrefix(stdout.String(), "listening on "))
		resp, err := http.Get(url + "/atlas/site-overview?url=example.com")
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		cancel()
		if code := <-done; code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		logged := strings.Contains(stderr.String(), "site-overview")
		if logged == quiet {
			t.Errorf("--quiet %v: request logged %v:\n%s", quiet, logged, stderr.String())
		}
	}
}
