package atlastest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"

	"sitewatch/pipeline/atlas/atlastest"
)

const testMonth = "2026-10"

// reply is one response read whole.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// call sends one request and reads the response. hdr holds header pairs.
func call(t *testing.T, c *http.Client, method, url string, body io.Reader, hdr ...string) reply {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatalf("new request %s %s: %v", method, url, err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body of %s %s: %v", method, url, err)
	}
	return reply{resp.StatusCode, resp.Header, b}
}

func get(t *testing.T, s *atlastest.Server, path string, hdr ...string) reply {
	t.Helper()
	return call(t, s.Client(), http.MethodGet, s.URL+path, nil, hdr...)
}

// bearer is the header pair of the default demo key.
var bearer = []string{"Authorization", "Bearer " + atlastest.DefaultKey}

func newServer(t *testing.T, opts atlastest.Options) *atlastest.Server {
	t.Helper()
	if opts.Month == "" {
		opts.Month = testMonth
	}
	s := atlastest.NewServer(opts)
	t.Cleanup(s.Close)
	return s
}

// object decodes a JSON object body into a generic map.
func object(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %.200s", err, b)
	}
	return m
}

// keys returns the sorted keys of a JSON object.
func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// wantKeys checks that a JSON object has exactly the given keys.
func wantKeys(t *testing.T, what string, m map[string]any, want ...string) {
	t.Helper()
	sort.Strings(want)
	if got := keys(m); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("%s keys = %v, want %v", what, got, want)
	}
}

// checkHeaders checks the section 8 headers every response carries.
func checkHeaders(t *testing.T, r reply, wantRate string) {
	t.Helper()
	want := map[string]string{
		"Content-Type":           "application/json; charset=utf-8",
		"X-Gateway-Service":      "atlas",
		"X-Content-Type-Options": "nosniff",
		"X-Frame-Options":        "SAMEORIGIN",
		"X-XSS-Protection":       "1; mode=block",
		"X-RateLimit-Limit":      wantRate,
	}
	for k, v := range want {
		if got := r.header.Get(k); got != v {
			t.Errorf("header %s = %q, want %q (status %d)", k, got, v, r.status)
		}
	}
	for _, k := range []string{"X-Gateway-Credit-Cost", "X-Gateway-Remaining-Credits", "X-Gateway-Latency-Ms"} {
		if v := r.header.Get(k); v == "" || strings.Trim(v, "-0123456789") != "" {
			t.Errorf("header %s = %q, want a number (status %d)", k, v, r.status)
		}
	}
}

func errorCode(t *testing.T, b []byte) string {
	t.Helper()
	m := object(t, b)
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}
