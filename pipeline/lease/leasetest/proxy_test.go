package leasetest_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"sitewatch/pipeline/lease/leasetest"
)

// TestProxyModes: a proxy relays while passing, hangs a request while cut (the client ends it
// at its own timeout), fails it at once while refusing, and relays again once healed.
func TestProxyModes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	defer srv.Close()
	px := leasetest.NewProxy(t, srv.URL)
	hc := &http.Client{Timeout: 300 * time.Millisecond, Transport: &http.Transport{}}
	get := func() (time.Duration, error) {
		start := time.Now()
		resp, err := hc.Get(px.URL)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if string(body) != "ok" {
				t.Errorf("body %q, want ok", body)
			}
		}
		return time.Since(start), err
	}
	if _, err := get(); err != nil {
		t.Fatalf("passing: %v", err)
	}
	px.Cut()
	if took, err := get(); err == nil || took < 250*time.Millisecond {
		t.Errorf("cut: err %v after %v, want the client's time-out (300ms)", err, took)
	}
	px.Refuse()
	if took, err := get(); err == nil || took > 200*time.Millisecond {
		t.Errorf("refusing: err %v after %v, want a failure at once", err, took)
	}
	px.Heal()
	if _, err := get(); err != nil {
		t.Errorf("healed: %v", err)
	}
	if got := px.Mode(); got != leasetest.Pass {
		t.Errorf("mode %v, want pass", got)
	}
}

// TestProxyCloseAfterHalfCloseThenReset: a client that half-closes (sends its request, then
// EOF) and an upstream that answers with a reset end both relays, one cleanly and one with
// an error; Close must still return (it once waited for a third relay result forever).
func TestProxyCloseAfterHalfCloseThenReset(t *testing.T) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	go func() {
		conn, err := up.Accept()
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, conn) // until the client's half-close arrives
		_ = conn.(*net.TCPConn).SetLinger(0)
		_ = conn.Close() // a reset, not a FIN
	}()
	px, err := leasetest.Listen(up.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	client, err := net.Dial("tcp", px.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	_, _ = client.Write([]byte("request"))
	_ = client.(*net.TCPConn).CloseWrite()
	_ = client.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.Copy(io.Discard, client) // the proxy passes the reset on as an end
	closed := make(chan struct{})
	go func() { px.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Proxy.Close still waiting 5 s after both relays ended")
	}
}
