package iceberg

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
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
// open within the connect timeout, naming the catalog, instead of hanging.
func TestSQLCatalogThatNeverAnswers(t *testing.T) {
	addr := hangListener(t)
	cfg := config.PublishConfig{Catalog: "postgres://lake@" + addr + "/catalog", URL: "s3://b/p", Region: "us-east-1"}
	start := time.Now()
	_, err := openCatalog(context.Background(), cfg, func(string) string { return "hunter2" })
	took := time.Since(start)
	if err == nil {
		t.Fatal("opened a catalog that never answers")
	}
	if took > CatalogConnectTimeout+5*time.Second {
		t.Errorf("the open took %v, want at most the connect timeout %v", took, CatalogConnectTimeout)
	}
	if msg := err.Error(); !strings.Contains(msg, addr) || strings.Contains(msg, "hunter2") {
		t.Errorf("error %q: want the catalog's address and never the password", msg)
	}
}

// TestBoundedConnEndsASilentRead: once connected, a catalog that stops answering ends the read
// at the bound; a deadline the driver sets (its cancel) still applies when it comes first.
func TestBoundedConnEndsASilentRead(t *testing.T) {
	addr := hangListener(t)
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c := &boundedConn{Conn: raw, bound: 200 * time.Millisecond}
	defer func() { _ = c.Close() }()
	start := time.Now()
	if _, err := c.Read(make([]byte, 1)); err == nil || !strings.Contains(err.Error(), "the catalog sent nothing for 200ms") {
		t.Errorf("read = %v, want the bound's error", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("the read ended after %v, want 200ms", took)
	}
	c.bound = time.Hour
	_ = c.SetDeadline(time.Now().Add(100 * time.Millisecond)) // the driver cancels
	start = time.Now()
	if _, err := c.Read(make([]byte, 1)); err == nil || strings.Contains(err.Error(), "sent nothing") {
		t.Errorf("read under the driver's deadline = %v, want its plain time-out", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("the driver's deadline ended the read after %v, want 100ms", took)
	}
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
