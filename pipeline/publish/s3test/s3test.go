// Package s3test starts a real S3-compatible server — the Versity S3 gateway (versitygw) over a
// temporary directory — on a loopback port for tests, the way httptest starts an HTTP server.
// When the versitygw binary is missing it is installed once with the Go toolchain; a test is
// skipped (with the reason) only when it cannot be built, and under CI (CI=true) it fails then.
package s3test

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"sitewatch/internal/testenv"
)

// Version is the versitygw release the tests run (and the Makefile installs).
const Version = "v1.8.0"

const installPath = "github.com/versity/versitygw/cmd/versitygw@" + Version

// Server is a running gateway. Endpoint is its base URL (http://127.0.0.1:PORT); AccessKey and
// SecretKey are the only credentials it accepts. Buckets are directories of Dir.
type Server struct {
	Endpoint  string
	AccessKey string
	SecretKey string
	Dir       string
	cmd       *exec.Cmd
	done      chan struct{}
	stopOnce  sync.Once
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// Binary returns the path of versitygw, installing it with `go install` when it is on neither
// PATH nor GOPATH/bin.
func Binary() (string, error) {
	binOnce.Do(func() { binPath, binErr = findOrInstall() })
	return binPath, binErr
}

func findOrInstall() (string, error) {
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	gobin := goBinDir()
	p := filepath.Join(gobin, "versitygw")
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	cmd := exec.Command("go", "install", installPath)
	cmd.Env = append(os.Environ(), "GOBIN="+gobin)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("versitygw is not installed and `go install %s` failed (run `make tools`): %v\n%s", installPath, err, out)
	}
	return p, nil
}

func goBinDir() string {
	if b := os.Getenv("GOBIN"); b != "" {
		return b
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		if gp := strings.TrimSpace(string(out)); gp != "" {
			return filepath.Join(strings.Split(gp, string(os.PathListSeparator))[0], "bin")
		}
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, "go", "bin")
}

// Start starts a gateway on a free loopback port over t.TempDir() and stops it when the test
// ends. When versitygw can be neither found nor built it skips the test, or fails it under CI
// (testenv.Missing).
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		testenv.Missing(t, "s3test: %v", err)
	}
	var lastErr error
	for range 3 { // a free port can be taken between choosing and binding it
		s, err := start(bin, t.TempDir())
		if err == nil {
			t.Cleanup(s.Stop)
			return s
		}
		lastErr = err
	}
	t.Fatalf("s3test: %v", lastErr)
	return nil
}

func start(bin, dir string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &Server{
		Endpoint:  fmt.Sprintf("http://127.0.0.1:%d", port),
		AccessKey: "s3test-access-key",
		SecretKey: "s3test-secret-key-0123456789",
		Dir:       dir,
		done:      make(chan struct{}),
	}
	s.cmd = exec.Command(bin, "--access", s.AccessKey, "--secret", s.SecretKey,
		"--port", fmt.Sprintf("127.0.0.1:%d", port), "posix", dir)
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the test
	var log strings.Builder
	s.cmd.Stdout, s.cmd.Stderr = &log, &log
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	if err := s.waitReady(30 * time.Second); err != nil {
		s.Stop()
		return nil, fmt.Errorf("versitygw on %s: %w\n%s", s.Endpoint, err, log.String())
	}
	return s, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady polls until the gateway answers HTTP (any status: an unsigned request gets 403).
func (s *Server) waitReady(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return errors.New("exited before answering")
		default:
		}
		resp, err := http.Get(s.Endpoint + "/")
		if err == nil {
			_ = resp.Body.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("not answering after %v", limit)
}

// Stop kills the gateway and waits for it to exit. The stored objects stay in Dir.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		_ = s.cmd.Process.Kill()
		<-s.done
	})
}

// Client returns an S3 client for the gateway with its credentials (path-style addressing).
func (s *Server) Client() *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(s.Endpoint),
		Region:       "us-east-1",
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
	})
}

// CreateBucket creates bucket name on the gateway.
func (s *Server) CreateBucket(t testing.TB, name string) {
	t.Helper()
	if _, err := s.Client().CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("s3test: create bucket %s: %v", name, err)
	}
}
