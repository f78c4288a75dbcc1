package leasetest_test

import (
	"io"
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
