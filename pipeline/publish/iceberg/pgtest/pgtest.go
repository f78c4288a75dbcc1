// Package pgtest starts a real PostgreSQL server for tests, the way httptest starts an HTTP
// server: `initdb` into a temporary directory, then `pg_ctl start` on a free loopback port
// with password (scram-sha-256) authentication, stopped when the test ends. As root it runs
// the server as the `postgres` user (PostgreSQL refuses to run as root).
//
// Without the PostgreSQL binaries a test is skipped, unless CI is set: then it fails, because
// CI installs them (.ci/run).
package pgtest

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"sitewatch/internal/testenv"
)

// Server is a running PostgreSQL. URL has no password (postgres://sitewatch@127.0.0.1:PORT/
// sitewatch); Password is the user's.
type Server struct {
	URL      string
	User     string
	Password string
	Database string
	Port     int
	dir      string
	bin      string
	cred     *syscall.Credential
}

// Start initializes and starts a server and stops it (and removes its files) when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := binDir()
	if err != nil {
		testenv.Missing(t, "pgtest: %v (install the Debian package postgresql)", err)
	}
	s, err := start(bin)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(s.stop)
	return s
}

// binDir finds initdb and pg_ctl: on PATH, or in Debian's /usr/lib/postgresql/N/bin.
func binDir() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Dir(real), nil
		}
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(matches) == 0 {
		return "", fmt.Errorf("pg_ctl not found on PATH nor in /usr/lib/postgresql/*/bin: install PostgreSQL (apt-get install postgresql)")
	}
	return filepath.Dir(matches[len(matches)-1]), nil
}

func start(bin string) (*Server, error) {
	// Not t.TempDir: its parents are 0700 and root's, which the postgres user cannot enter.
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	s := &Server{User: "sitewatch", Password: "pgtest-password-0123", Database: "sitewatch", dir: dir, bin: bin}
	if err := s.init(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	var lastErr error
	for range 3 { // a free port can be taken between choosing and binding it
		if lastErr = s.startOnFreePort(); lastErr == nil {
			return s, nil
		}
	}
	_ = os.RemoveAll(dir)
	return nil, lastErr
}

// init runs initdb with the password in a file (never on a command line).
func (s *Server) init() error {
	if err := os.Chmod(s.dir, 0o755); err != nil {
		return err
	}
	if os.Geteuid() == 0 {
		cred, err := postgresUser()
		if err != nil {
			return err
		}
		s.cred = cred
		if err := os.Chown(s.dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return err
		}
	}
	pwfile := filepath.Join(s.dir, "pwfile")
	if err := os.WriteFile(pwfile, []byte(s.Password+"\n"), 0o600); err != nil {
		return err
	}
	if err := s.chown(pwfile); err != nil {
		return err
	}
	defer func() { _ = os.Remove(pwfile) }()
	return s.run("initdb", "-D", s.data(), "-U", s.User, "--pwfile", pwfile, "-A", "scram-sha-256",
		"-E", "UTF8", "--locale", "C", "--no-sync")
}

func (s *Server) startOnFreePort() error {
	port, err := freePort()
	if err != nil {
		return err
	}
	opts := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -k %s -c fsync=off -c full_page_writes=off", port, s.dir)
	if err := s.run("pg_ctl", "-D", s.data(), "-l", filepath.Join(s.dir, "log"), "-o", opts, "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "log"))
		return fmt.Errorf("%w\n%s", err, log)
	}
	s.Port = port
	if err := s.run("createdb", "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-U", s.User, s.Database); err != nil {
		s.stop()
		return err
	}
	s.URL = (&url.URL{Scheme: "postgres", User: url.User(s.User), Host: fmt.Sprintf("127.0.0.1:%d", port), Path: "/" + s.Database}).String()
	return nil
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

// run runs a PostgreSQL program of bin as the server's user, with the password in PGPASSWORD.
func (s *Server) run(name string, args ...string) error {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+s.Password)
	cmd.Dir = s.dir
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

func (s *Server) chown(p string) error {
	if s.cred == nil {
		return nil
	}
	return os.Chown(p, int(s.cred.Uid), int(s.cred.Gid))
}

// stop stops the server at once (nothing it holds is needed) and removes its files.
func (s *Server) stop() {
	if s.Port != 0 {
		_ = s.run("pg_ctl", "-D", s.data(), "-m", "immediate", "-w", "stop")
		s.Port = 0
	}
	_ = os.RemoveAll(s.dir)
}

func postgresUser() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, and there is no postgres user to run the server as (PostgreSQL refuses root): %w", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}
