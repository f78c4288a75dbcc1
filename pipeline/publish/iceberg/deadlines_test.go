package iceberg

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"sitewatch/pipeline/config"
)

// hangListener accepts TCP connections and never answers (a catalog whose server hangs).
func hangListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}

// TestSQLCatalogThatNeverAnswers: a SQL catalog that accepts TCP and never answers fails the
// open at the connect timeout, naming the catalog, instead of hanging. Which deadline ended it
// is told by the error, not timed (a loaded machine stretches any wait): the connect timeout's
// context, not the 45 s read bound's "sent nothing"; an open still waiting ten connect
// timeouts later is hung.
func TestSQLCatalogThatNeverAnswers(t *testing.T) {
	addr := hangListener(t)
	cfg := config.PublishConfig{Catalog: "postgres://lake@" + addr + "/catalog", URL: "s3://b/p", Region: "us-east-1"}
	done := make(chan error, 1)
	go func() {
		_, err := openCatalog(context.Background(), cfg, func(string) string { return "hunter2" })
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * CatalogConnectTimeout):
		t.Fatalf("the open still waiting %v later, its connect timeout being %v", 10*CatalogConnectTimeout, CatalogConnectTimeout)
	}
	if err == nil {
		t.Fatal("opened a catalog that never answers")
	}
	msg := err.Error()
	if !strings.Contains(msg, context.DeadlineExceeded.Error()) || strings.Contains(msg, "sent nothing") {
		t.Errorf("error %q: want the connect timeout's deadline, not the read bound (%v)", msg, CatalogReadTimeout)
	}
	if !strings.Contains(msg, addr) || strings.Contains(msg, "hunter2") {
		t.Errorf("error %q: want the catalog's address and never the password", msg)
	}
}

// TestBoundedConnEndsASilentRead: once connected, a catalog that stops answering ends the read
// at the bound; a deadline the driver sets (its cancel) still applies when it comes first.
// Each read is told by its error (the bound's names it; the driver's is its plain time-out);
// the times are TestBoundedConnEndsASilentReadInFakeTime's, exact on any machine. A read still
// waiting a minute later is hung (either deadline lost: the other is an hour).
func TestBoundedConnEndsASilentRead(t *testing.T) {
	addr := hangListener(t)
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c := &boundedConn{Conn: raw, bound: 200 * time.Millisecond}
	defer func() { _ = c.Close() }()
	if err := readGuarded(t, c); err == nil || !strings.Contains(err.Error(), "the catalog sent nothing for 200ms") {
		t.Errorf("read = %v, want the bound's error", err)
	}
	c.bound = time.Hour
	_ = c.SetDeadline(time.Now().Add(100 * time.Millisecond)) // the driver cancels
	if err := readGuarded(t, c); err == nil || strings.Contains(err.Error(), "sent nothing") {
		t.Errorf("read under the driver's deadline = %v, want its plain time-out", err)
	}
}

// readGuarded reads a byte from c and returns the read's error; a read still waiting a minute
// later fails t (the connection is closed then).
func readGuarded(t *testing.T, c net.Conn) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 1))
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		_ = c.Close()
		t.Fatal("the read still waiting a minute later: no deadline ended it")
		return nil
	}
}

// TestBoundedConnEndsASilentReadInFakeTime: the bound ends a silent read exactly at 200 ms,
// and the driver's own deadline at 100 ms when it comes first, in fake time (testing/synctest,
// an in-memory connection whose deadlines run on the bubble's clock).
func TestBoundedConnEndsASilentReadInFakeTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		raw, peer := net.Pipe() // peer never writes: a catalog that stopped answering
		defer func() { _ = peer.Close() }()
		c := &boundedConn{Conn: raw, bound: 200 * time.Millisecond}
		defer func() { _ = c.Close() }()
		start := time.Now()
		if _, err := c.Read(make([]byte, 1)); err == nil || !strings.Contains(err.Error(), "the catalog sent nothing for 200ms") {
			t.Errorf("read = %v, want the bound's error", err)
		}
		if took := time.Since(start); took != 200*time.Millisecond {
			t.Errorf("the read ended after %v, want 200ms", took)
		}
		c.bound = time.Hour
		_ = c.SetDeadline(time.Now().Add(100 * time.Millisecond)) // the driver cancels
		start = time.Now()
		if _, err := c.Read(make([]byte, 1)); err == nil || strings.Contains(err.Error(), "sent nothing") {
			t.Errorf("read under the driver's deadline = %v, want its plain time-out", err)
		}
		if took := time.Since(start); took != 100*time.Millisecond {
			t.Errorf("the driver's deadline ended the read after %v, want 100ms", took)
		}
	})
}

// TestRESTTokenEndpoint404: a REST catalog whose token endpoint answers 404 gives a cause
// naming the URL and the status, never the credential.
func TestRESTTokenEndpoint404(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	cfg := config.PublishConfig{Catalog: srv.URL + "/api/catalog", URL: "s3://b/p", Region: "us-east-1"}
	_, err := openCatalog(context.Background(), cfg, func(string) string { return "client-id:s3cr3t-value" })
	if err == nil {
		t.Fatal("opened a REST catalog that answers 404")
	}
	msg := err.Error()
	t.Log(msg)
	if !strings.Contains(msg, srv.URL+"/api/catalog/v1/oauth/tokens") || !strings.Contains(msg, "404") {
		t.Errorf("error %q: want the token URL and its 404", msg)
	}
	if strings.Contains(msg, "s3cr3t-value") {
		t.Errorf("error %q echoes the credential", msg)
	}
	if strings.Contains(msg, ": :") || strings.Contains(msg, ":  (") {
		t.Errorf("error %q has an empty cause", msg)
	}
}
