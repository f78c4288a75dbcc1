package main

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildSim builds the command into a temporary directory.
func buildSim(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "atlas-sim")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func TestListenAndServe(t *testing.T) {
	bin := buildSim(t)
	const key = "sekret-key-123"
	cmd := exec.Command(bin, "--addr", "127.0.0.1:0", "--keys", key+"=2", "--rate", "50", "--month", "2026-01", "--seed", "9")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()

	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- s
		io.Copy(io.Discard, stdout)
	}()
	var first string
	select {
	case first = <-line:
	case <-time.After(30 * time.Second):
		t.Fatal("no listening line within 30s")
	}
	m := regexp.MustCompile(`^listening on (http://127\.0\.0\.1:(\d+))\n$`).FindStringSubmatch(first)
	if m == nil || m[2] == "0" {
		t.Fatalf("stdout line = %q, want listening on http://127.0.0.1:PORT", first)
	}
	base := m[1]

	tests := []struct {
		name, path, key string
		want            int
	}{
		{"OK", "/atlas/site-overview?url=example.com", key, 200},
		{"BadKey", "/atlas/site-overview?url=example.com", "other", 401},
		{"Invalid", "/atlas/site-similar?url=1.2.3.4", key, 400},
		{"OK2", "/atlas/country-metadata", key, 200},
		{"OutOfCredits", "/atlas/country-metadata", key, 402},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, base+tt.path, nil)
			req.Header.Set("X-API-Key", tt.key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("status = %d, want %d", resp.StatusCode, tt.want)
			}
			if got := resp.Header.Get("X-RateLimit-Limit"); got != "50" {
				t.Errorf("X-RateLimit-Limit = %q, want 50", got)
			}
		})
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- cmd.Wait() }()
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v (stderr %s)", err, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no exit within 15s of SIGTERM")
	}
	logs := stderr.String()
	if strings.Contains(logs, key) {
		t.Errorf("stderr contains the API key:\n%s", logs)
	}
	if !strings.Contains(logs, "status=200") || !strings.Contains(logs, "path=/atlas/site-overview") {
		t.Errorf("stderr lacks request logs:\n%s", logs)
	}
}

func TestBadFlags(t *testing.T) {
	bin := buildSim(t)
	tests := []struct {
		name    string
		args    []string
		wantMsg string
	}{
		{"Keys", []string{"--keys", "nokey"}, "--keys"},
		{"KeysSecretNotEchoed", []string{"--keys", "topsecret=lots"}, "not an integer"},
		{"Latency", []string{"--latency", "soon"}, "--latency"},
		{"Rate", []string{"--rate", "0"}, "--rate"},
		{"FailRate", []string{"--fail-rate", "2"}, "fail rate"},
		{"Month", []string{"--month", "2026-13"}, "month"},
		{"MarketplaceHalf", []string{"--marketplace-host", "x"}, "marketplace"},
		{"UnknownFlag", []string{"--nope"}, "nope"},
		{"Positional", []string{"extra"}, "extra"},
		{"Addr", []string{"--addr", "256.0.0.1:99999"}, "listen"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(bin, tt.args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != 2 {
				t.Fatalf("err = %v, want exit status 2 (stderr %s)", err, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.wantMsg) {
				t.Errorf("stderr %q does not mention %q", stderr.String(), tt.wantMsg)
			}
			if strings.Contains(stderr.String(), "topsecret") {
				t.Errorf("stderr echoes the key: %s", stderr.String())
			}
		})
	}
}
