package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
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

// syncBuffer is a bytes.Buffer safe to read while the command's output is copied into it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startSim starts the binary with args and waits for its listening line. It returns the
// command (killed at cleanup), the base URL and the buffer receiving its stderr.
func startSim(t *testing.T, bin string, args ...string) (*exec.Cmd, string, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		if cmd.ProcessState == nil { // not waited for by the test
			cmd.Wait()
		}
	})

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
	return cmd, m[1], stderr
}

func TestListenAndServe(t *testing.T) {
	bin := buildSim(t)
	const key = "sekret-key-123"
	cmd, base, stderr := startSim(t, bin, "--addr", "127.0.0.1:0", "--keys", key+"=2", "--rate", "50", "--month", "2026-01", "--seed", "9")

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
		{"MonthTurnAfter", []string{"--month-turn-after", "-1s"}, "--month-turn-after"},
		{"MonthTurnAfterNotDuration", []string{"--month-turn-after", "soon"}, "month-turn-after"},
		{"MarketplaceHalf", []string{"--marketplace-host", "x"}, "marketplace"},
		{"UnknownFlag", []string{"--nope"}, "nope"},
		{"Positional", []string{"extra"}, "extra"},
		{"Addr", []string{"--addr", "256.0.0.1:99999"}, "listen"},
		{"Quota", []string{"--quota", "0"}, "--quota"},
		{"QuotaReset", []string{"--quota-reset", "soon"}, "--quota-reset"},
		{"MarketplaceRate", []string{"--marketplace-rate", "-1"}, "--marketplace-rate"},
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

// TestMonthTurnAfter starts the binary serving 2026-12 with --month-turn-after and checks the
// overview's month before and after the turn (across a year boundary). The month before the
// turn is checked only when the answer provably came before it (within the turn of launching
// the binary): a loaded machine may take longer to start it and ask. That the turn comes
// exactly at its time is atlastest's TestMonthTurn/MonthTurnAfter, in fake time.
func TestMonthTurnAfter(t *testing.T) {
	bin := buildSim(t)
	const turn = 1500 * time.Millisecond
	launched := time.Now() // the simulator's clock starts after this: no turn before launched+turn
	_, base, stderr := startSim(t, bin, "--addr", "127.0.0.1:0", "--month", "2026-12", "--month-turn-after", turn.String())
	started := time.Now() // the turn is due at most turn after this
	month := func() (date, period string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+"/atlas/site-overview?url=example.com", nil)
		req.Header.Set("X-API-Key", "demo-key")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct {
			Meta struct {
				SnapshotDate string `json:"snapshot_date"`
			} `json:"meta"`
			Traffic struct {
				Period string `json:"period"`
			} `json:"traffic"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != 200 {
			t.Fatalf("status %d, decode: %v", resp.StatusCode, err)
		}
		return body.Meta.SnapshotDate, body.Traffic.Period
	}
	d, p := month()
	switch answered := time.Now(); {
	case answered.Before(launched.Add(turn)):
		if d != "2026-12-01" || p != "2026-12" {
			t.Fatalf("before the turn: snapshot_date %s, period %s; want 2026-12-01, 2026-12", d, p)
		}
	case !(d == "2026-12-01" && p == "2026-12") && !(d == "2027-01-01" && p == "2027-01"):
		t.Fatalf("about the turn: snapshot_date %s, period %s; want 2026-12 or 2027-01", d, p)
	default:
		t.Logf("the first answer came %v after the launch, not before the turn (%v): only the month after it is checked", answered.Sub(launched).Round(time.Millisecond), turn)
	}
	time.Sleep(time.Until(started.Add(turn + 100*time.Millisecond)))
	if d, p := month(); d != "2027-01-01" || p != "2027-01" {
		t.Fatalf("after the turn: snapshot_date %s, period %s; want 2027-01-01, 2027-01", d, p)
	}
	logged := func() bool {
		s := stderr.String()
		return strings.Contains(s, "data month turned") && strings.Contains(s, "to=2027-01")
	}
	for deadline := time.Now().Add(time.Minute); !logged() && time.Now().Before(deadline); { // a hang guard
		time.Sleep(20 * time.Millisecond) // the log line travels through a pipe
	}
	if !logged() {
		t.Errorf("stderr does not log the turn:\n%s", stderr.String())
	}
}
