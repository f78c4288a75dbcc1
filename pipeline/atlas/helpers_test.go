package atlas

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/model"
	"sitewatch/schema"
)

// fakeClock is a Clock on which every wait ends at once, moving the time forward by what
// was waited: minutes of 429 pauses and backoff pass in microseconds, and the total the
// client waited can still be asserted.
type fakeClock struct {
	mu    sync.Mutex
	start time.Time
	now   time.Time
}

func newFakeClock() *fakeClock {
	t := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	return &fakeClock{start: t, now: t}
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) After(d time.Duration) <-chan time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	ch := make(chan time.Time, 1)
	ch <- f.now
	return ch
}

// Since is the time the clock has moved since it was made.
func (f *fakeClock) Since() time.Duration { return f.Now().Sub(f.start) }

func assertDecoded(t testing.TB, r model.Result) {
	t.Helper()
	var ok bool
	switch r.Endpoint {
	case schema.EndpointOverview:
		ok = r.Overview != nil && r.Similar == nil && r.Countries == nil
	case schema.EndpointSimilar:
		ok = r.Similar != nil && r.Overview == nil && r.Countries == nil
	case schema.EndpointCountries:
		ok = r.Countries != nil && len(r.Countries.Countries) > 0 && r.Overview == nil && r.Similar == nil
	}
	if !ok {
		t.Errorf("%s %s: the decoded value matching the endpoint is not set (alone)", r.Endpoint, r.Domain)
	}
}

// goodBody fetches a real 200 body of endpoint from the simulator, for hostile servers
// that must send a valid answer with hostile headers.
func goodBody(t testing.TB, endpoint schema.Endpoint) []byte {
	t.Helper()
	srv := newServer(t, atlastest.Options{})
	c := newClient(t, srv, Config{})
	r := c.Fetch(context.Background(), model.Request{Endpoint: endpoint, Domain: "example.com"})
	if r.Err != nil {
		t.Fatalf("fetch a good %s body: %v", endpoint, r.Err)
	}
	return r.Body
}

// hostile starts a plain net/http server on loopback for cases the simulator cannot
// produce.
func hostile(t testing.TB, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
