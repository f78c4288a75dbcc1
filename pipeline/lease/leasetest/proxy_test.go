package leasetest_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"sitewatch/pipeline/lease/leasetest"
)

// TestProxyModes: a proxy relays while passing, hangs a request while cut (the client ends it
// at its own timeout), fails it at once while refusing (a reset or an end, not the client's
// time-out), and relays again once healed. Only the cut request is timed, and only from below:
// a loaded machine may stretch any wait, so the others get a minute, not a bound.
func TestProxyModes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	defer srv.Close()
	px := leasetest.NewProxy(t, srv.URL)
	hc := &http.Client{Transport: &http.Transport{}}
	get := func(timeout time.Duration) (time.Duration, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, px.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		resp, err := hc.Do(req)
		if err == nil {
			body, rerr := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if err = rerr; err == nil && string(body) != "ok" {
				t.Errorf("body %q, want ok", body)
			}
		}
		return time.Since(start), err
	}
	if _, err := get(time.Minute); err != nil {
		t.Fatalf("passing: %v", err)
	}
	px.Cut()
	if took, err := get(300 * time.Millisecond); !errors.Is(err, context.DeadlineExceeded) || took < 250*time.Millisecond {
		t.Errorf("cut: err %v after %v, want the client's time-out (300ms)", err, took)
	}
	px.Refuse()
	// "At once" is told by the error, not timed: a refused request ends with a reset or an
	// end of stream; one the proxy hung would end only at the client's minute.
	if took, err := get(time.Minute); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("refusing: err %v after %v, want a failure at once (a reset or an end), not the client's time-out", err, took)
	}
	px.Heal()
	if _, err := get(time.Minute); err != nil {
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
	_ = client.SetReadDeadline(time.Now().Add(time.Minute)) // a hang guard, not a bound
	_, _ = io.Copy(io.Discard, client)                      // the proxy passes the reset on as an end
	closed := make(chan struct{})
	go func() { px.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(time.Minute): // the bug waited forever; a loaded machine may take seconds
		t.Fatal("Proxy.Close still waiting a minute after both relays ended")
	}
}
