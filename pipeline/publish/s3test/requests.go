package s3test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
)

// Requests is a reverse proxy in front of a gateway that counts the requests it forwards, by
// kind: "LIST" for a listing, else the method, or what the classify function of CountRequests
// says. Tests point publish.endpoint at URL to see what a command asked of the bucket.
type Requests struct {
	URL      string
	classify func(*http.Request) string
	mu       sync.Mutex
	n        map[string]int
}

// CountRequests starts the proxy in front of target (closed when the test ends); classify,
// when not nil, names the kind of each request ("" falls back to the default).
func CountRequests(t testing.TB, target string, classify func(*http.Request) string) *Requests {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	c := &Requests{classify: classify, n: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kind := ""
		if c.classify != nil {
			kind = c.classify(r)
		}
		if kind == "" {
			kind = r.Method
			if r.Method == http.MethodGet && r.URL.Query().Has("list-type") {
				kind = "LIST"
			}
		}
		c.mu.Lock()
		c.n[kind]++
		c.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c.URL = srv.URL
	return c
}

// Take returns the requests counted since the last Take, in all and by kind, and starts
// counting again.
func (c *Requests) Take() (n int, by map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	by, c.n = c.n, map[string]int{}
	for _, v := range by {
		n += v
	}
	return n, by
}
