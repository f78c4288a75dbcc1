package atlastest_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/schema"
)

func TestOperations(t *testing.T) {
	s := newServer(t, atlastest.Options{Rate: 1000})
	g := atlastest.NewGenerator(1, testMonth)
	tests := []struct {
		name, path string
		want       []byte
		decode     func([]byte) error
	}{
		{"Overview", "/atlas/site-overview?url=example.com", g.OverviewBody("example.com"), func(b []byte) error { _, err := schema.DecodeOverview(b); return err }},
		{"OverviewAlias", "/atlas/website-overview?url=example.com", g.OverviewBody("example.com"), func(b []byte) error { _, err := schema.DecodeOverview(b); return err }},
		{"Similar", "/atlas/site-similar?url=example.com", g.SimilarBody("example.com"), func(b []byte) error { _, err := schema.DecodeSimilar(b); return err }},
		{"SimilarAlias", "/atlas/similar-sites?url=example.com", g.SimilarBody("example.com"), func(b []byte) error { _, err := schema.DecodeSimilar(b); return err }},
		{"Countries", "/atlas/country-metadata", g.CountriesBody(), func(b []byte) error { _, err := schema.DecodeCountries(b); return err }},
		{"CountriesIgnoresURL", "/atlas/country-metadata?url=1.2.3.4", g.CountriesBody(), func(b []byte) error { _, err := schema.DecodeCountries(b); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := s.Credits(atlastest.DefaultKey)
			r := get(t, s, tt.path, bearer...)
			if r.status != http.StatusOK {
				t.Fatalf("status = %d, want 200: %s", r.status, r.body)
			}
			checkHeaders(t, r, "1000")
			if !bytes.Equal(r.body, tt.want) {
				t.Errorf("body differs from the generator's:\n got %.300s\nwant %.300s", r.body, tt.want)
			}
			if err := tt.decode(r.body); err != nil {
				t.Errorf("decode: %v", err)
			}
			if got, want := r.header.Get("X-Gateway-Credit-Cost"), "1"; got != want {
				t.Errorf("X-Gateway-Credit-Cost = %q, want %q", got, want)
			}
			after := s.Credits(atlastest.DefaultKey)
			if after != before-1 {
				t.Errorf("credits %d -> %d, want one charged", before, after)
			}
			if got, want := r.header.Get("X-Gateway-Remaining-Credits"), strconv.FormatInt(after, 10); got != want {
				t.Errorf("X-Gateway-Remaining-Credits = %q, want %q", got, want)
			}
			if got := r.header.Get("X-Ratelimit-Requests-Limit"); got != "" {
				t.Errorf("direct call carries marketplace header x-ratelimit-requests-limit %q", got)
			}
		})
	}
}

func TestEchoesRequestedURL(t *testing.T) {
	s := newServer(t, atlastest.Options{Rate: 1000})
	for _, path := range []string{"/atlas/site-overview", "/atlas/site-similar"} {
		t.Run(path, func(t *testing.T) {
			raw := "HTTPS://WWW.Example.COM:8443/pricing?x=1"
			r := get(t, s, path+"?url="+urlEscape(raw), bearer...)
			if r.status != 200 {
				t.Fatalf("status = %d: %s", r.status, r.body)
			}
			m := object(t, r.body)
			meta := m["meta"].(map[string]any)
			if got := meta["request"].(map[string]any)["url"]; got != raw {
				t.Errorf("meta.request.url = %v, want %q", got, raw)
			}
			if got := m["website"].(map[string]any)["domain"]; got != "example.com" {
				t.Errorf("website.domain = %v, want example.com", got)
			}
		})
	}
}

func urlEscape(s string) string { return url.QueryEscape(s) }

func TestAuth(t *testing.T) {
	s := newServer(t, atlastest.Options{Rate: 1000})
	const path = "/atlas/site-overview?url=example.com"
	tests := []struct {
		name       string
		hdr        []string
		wantStatus int
		wantMsg    []string // substrings of message
	}{
		{"BearerOK", []string{"Authorization", "Bearer demo-key"}, 200, nil},
		{"BearerSchemeCaseInsensitive", []string{"Authorization", "bearer demo-key"}, 200, nil},
		{"XAPIKeyOK", []string{"X-API-Key", "demo-key"}, 200, nil},
		{"Missing", nil, 401, []string{"Bearer", "X-API-Key"}},
		{"BearerUnknown", []string{"Authorization", "Bearer nope"}, 401, []string{"invalid or missing"}},
		{"XAPIKeyUnknown", []string{"X-API-Key", "demo-key2"}, 401, []string{"invalid or missing"}},
		{"XAPIKeyEmpty", []string{"X-API-Key", ""}, 401, []string{"invalid or missing"}},
		{"AuthorizationEmpty", []string{"Authorization", ""}, 401, []string{"invalid or missing"}},
		{"Basic", []string{"Authorization", "Basic ZGVtby1rZXk6"}, 401, []string{"invalid or missing"}},
		{"BearerNoToken", []string{"Authorization", "Bearer"}, 401, []string{"invalid or missing"}},
		{"BearerTwoTokens", []string{"Authorization", "Bearer demo-key extra"}, 401, []string{"invalid or missing"}},
		{"RawKeyNoScheme", []string{"Authorization", "demo-key"}, 401, []string{"invalid or missing"}},
		{"BadBearerWinsOverGoodXAPIKey", []string{"Authorization", "Bearer nope", "X-API-Key", "demo-key"}, 401, []string{"invalid or missing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := s.Credits(atlastest.DefaultKey)
			r := get(t, s, path, tt.hdr...)
			if r.status != tt.wantStatus {
				t.Fatalf("status = %d, want %d: %s", r.status, tt.wantStatus, r.body)
			}
			checkHeaders(t, r, "1000")
			if tt.wantStatus != 401 {
				return
			}
			m := object(t, r.body)
			wantKeys(t, "401 body", m, "error", "message", "service")
			if m["error"] != "Unauthorized" || m["service"] != "atlas" {
				t.Errorf("body = %s, want error Unauthorized, service atlas", r.body)
			}
			for _, sub := range tt.wantMsg {
				if !strings.Contains(m["message"].(string), sub) {
					t.Errorf("message %q does not contain %q", m["message"], sub)
				}
			}
			if strings.Contains(string(r.body), "demo-key") {
				t.Errorf("401 body echoes the key: %s", r.body)
			}
			if got := s.Credits(atlastest.DefaultKey); got != before {
				t.Errorf("credits %d -> %d on a 401", before, got)
			}
			if got := r.header.Get("X-Gateway-Credit-Cost"); got != "0" {
				t.Errorf("X-Gateway-Credit-Cost = %q on a 401, want 0", got)
			}
		})
	}
}

func TestCredits(t *testing.T) {
	s := newServer(t, atlastest.Options{Rate: 1000, Keys: map[string]int64{"two": 2, "neg": -5, "zero": 0}})
	ok := "/atlas/site-overview?url=example.com"
	t.Run("ErrorsNotCharged", func(t *testing.T) {
		for _, p := range []string{"/atlas/site-overview", "/atlas/site-overview?url=1.2.3.4", "/atlas/nope"} {
			if r := get(t, s, p, "X-API-Key", "two"); r.status/100 != 4 {
				t.Fatalf("GET %s status = %d, want 4xx", p, r.status)
			}
		}
		if r := call(t, s.Client(), http.MethodPost, s.URL+ok, nil, "X-API-Key", "two"); r.status != 405 {
			t.Fatalf("POST status = %d, want 405", r.status)
		}
		if got := s.Credits("two"); got != 2 {
			t.Errorf("credits = %d after errors only, want 2", got)
		}
	})
	t.Run("OneCreditPerSuccess", func(t *testing.T) {
		for i, want := range []string{"1", "0"} {
			r := get(t, s, ok, "X-API-Key", "two")
			if r.status != 200 || r.header.Get("X-Gateway-Remaining-Credits") != want {
				t.Fatalf("call %d: status %d remaining %q, want 200 and %s", i, r.status, r.header.Get("X-Gateway-Remaining-Credits"), want)
			}
		}
	})
	for _, tt := range []struct {
		name, key   string
		wantBalance float64
	}{{"PaymentRequiredEmpty", "two", 0}, {"PaymentRequiredZero", "zero", 0}, {"PaymentRequiredNegative", "neg", -5}} {
		t.Run(tt.name, func(t *testing.T) {
			r := get(t, s, ok, "X-API-Key", tt.key)
			if r.status != http.StatusPaymentRequired {
				t.Fatalf("status = %d, want 402: %s", r.status, r.body)
			}
			checkHeaders(t, r, "1000")
			if got := r.header.Get("X-Gateway-Credit-Cost"); got != "1" {
				t.Errorf("X-Gateway-Credit-Cost = %q, want 1", got)
			}
			m := object(t, r.body)
			wantKeys(t, "402 body", m, "error", "message", "service", "remainingBalance")
			if m["error"] != "Payment Required" || m["service"] != "atlas" || m["remainingBalance"] != tt.wantBalance {
				t.Errorf("body = %s", r.body)
			}
		})
	}
	t.Run("SetCreditsRefills", func(t *testing.T) {
		s.SetCredits("two", 1)
		if r := get(t, s, ok, "X-API-Key", "two"); r.status != 200 {
			t.Errorf("status after SetCredits = %d, want 200", r.status)
		}
		s.SetCredits("new-key", 1)
		if r := get(t, s, ok, "X-API-Key", "new-key"); r.status != 200 {
			t.Errorf("status with a key added by SetCredits = %d, want 200", r.status)
		}
	})
}

func TestCreditsNeverOverdraw(t *testing.T) {
	const credits, calls = 40, 400
	s := newServer(t, atlastest.Options{Rate: 1_000_000, Keys: map[string]int64{"k": credits}})
	c := s.Client()
	var mu sync.Mutex
	byStatus := map[int]int{}
	var wg sync.WaitGroup
	domains := atlastest.Domains(calls)
	for i := 0; i < calls; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodGet, s.URL+"/atlas/site-overview?url="+domains[i], nil)
			req.Header.Set("X-API-Key", "k")
			resp, err := c.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			mu.Lock()
			byStatus[resp.StatusCode]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if byStatus[200] != credits || byStatus[402] != calls-credits {
		t.Errorf("statuses = %v, want %d×200 and %d×402", byStatus, credits, calls-credits)
	}
	if got := s.Credits("k"); got != 0 {
		t.Errorf("credits = %d, want 0", got)
	}
	st := s.Stats()
	if st.Charged != credits || st.OK != credits {
		t.Errorf("stats charged %d ok %d, want %d", st.Charged, st.OK, credits)
	}
	var fetches int
	for f, n := range st.Fetches {
		if n != 1 {
			t.Errorf("fetch %v counted %d times, want 1", f, n)
		}
		fetches += n
	}
	if fetches != credits {
		t.Errorf("sum of fetches = %d, want %d", fetches, credits)
	}
}

// alignToSecond waits until just after a second of the clock starts, so a burst falls in one
// rate window. The tests that use it run in a synctest bubble, where the burst then takes no
// time at all: on the real clock a loaded machine could stretch it across the next second.
func alignToSecond() {
	now := time.Now()
	time.Sleep(now.Truncate(time.Second).Add(time.Second + 20*time.Millisecond).Sub(now))
}

// serveMem sends a GET of path to h in memory (no socket, so in a synctest bubble the
// handler's clock is the fake one) and reads the response whole. hdr holds header pairs.
func serveMem(h http.Handler, path string, hdr ...string) reply {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return reply{rec.Code, rec.Result().Header, rec.Body.Bytes()}
}

// TestRateLimit: each key gets Rate requests (3 by default) in a one-second window; past it a
// free 429 with Retry-After 1 until the next window; another key has its own; SetRate applies
// from the next request. In fake time (testing/synctest, the handler in memory), where a burst
// aligned to a second falls in one window however loaded the machine.
func TestRateLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, err := atlastest.NewHandler(atlastest.Options{Month: testMonth, Keys: map[string]int64{"a": 100, "b": 100}})
		if err != nil {
			t.Fatal(err)
		}
		path := "/atlas/country-metadata"
		alignToSecond()
		var got []int
		for i := 0; i < 5; i++ {
			got = append(got, serveMem(h, path, "X-API-Key", "a").status)
		}
		r := serveMem(h, path, "X-API-Key", "a")
		other := serveMem(h, path, "X-API-Key", "b")
		if fmt.Sprint(got) != "[200 200 200 429 429]" {
			t.Fatalf("statuses of a burst of 5 at the default rate = %v, want [200 200 200 429 429]", got)
		}
		// Too many requests: a 429 with the gateway's headers and body.
		if r.status != 429 {
			t.Fatalf("status past the rate = %d, want 429", r.status)
		}
		checkHeaders(t, r, "3")
		for k, v := range map[string]string{"Retry-After": "1", "X-RateLimit-Remaining": "0", "X-Gateway-Credit-Cost": "0"} {
			if got := r.header.Get(k); got != v {
				t.Errorf("429: %s = %q, want %q", k, got, v)
			}
		}
		m := object(t, r.body)
		wantKeys(t, "429 body", m, "error", "message", "service")
		if m["error"] != "Too Many Requests" {
			t.Errorf("429: error = %v", m["error"])
		}
		// Per key.
		if other.status != 200 {
			t.Errorf("other key status = %d, want 200", other.status)
		}
		// Not charged.
		if got := h.Credits("a"); got != 97 {
			t.Errorf("credits = %d, want 97 (3 successes)", got)
		}
		// The next second.
		alignToSecond()
		if r := serveMem(h, path, "X-API-Key", "a"); r.status != 200 || r.header.Get("X-RateLimit-Remaining") != "2" {
			t.Errorf("next second: status %d remaining %q, want 200 and 2", r.status, r.header.Get("X-RateLimit-Remaining"))
		}
		// SetRate.
		h.SetRate(5)
		alignToSecond()
		got = nil
		for i := 0; i < 6; i++ {
			r := serveMem(h, path, "X-API-Key", "a")
			got = append(got, r.status)
			if r.header.Get("X-RateLimit-Limit") != "5" {
				t.Errorf("X-RateLimit-Limit = %q after SetRate(5)", r.header.Get("X-RateLimit-Limit"))
			}
		}
		if fmt.Sprint(got) != "[200 200 200 200 200 429]" {
			t.Errorf("after SetRate(5): statuses = %v, want five 200s then 429", got)
		}
	})
}

func TestValidation(t *testing.T) {
	s := newServer(t, atlastest.Options{Rate: 1000})
	t.Run("MissingParameter", func(t *testing.T) {
		for _, q := range []string{"", "?url=", "?other=example.com"} {
			r := get(t, s, "/atlas/site-overview"+q, bearer...)
			if r.status != 400 {
				t.Fatalf("%q: status = %d, want 400", q, r.status)
			}
			checkHeaders(t, r, "1000")
			m := object(t, r.body)
			wantKeys(t, "400 body", m, "status", "error")
			e := m["error"].(map[string]any)
			wantKeys(t, "400 error", e, "code", "message", "target", "rejected_value", "timestamp")
			if e["code"] != "MISSING_PARAMETER" || e["target"] != "url" || e["rejected_value"] != nil || m["status"] != "error" {
				t.Errorf("body = %s", r.body)
			}
			if !strings.Contains(e["message"].(string), "website") {
				t.Errorf("message %q does not name the website parameter", e["message"])
			}
			ts, err := time.Parse(time.RFC3339Nano, e["timestamp"].(string))
			if err != nil || !strings.HasSuffix(e["timestamp"].(string), "Z") || time.Since(ts) > time.Minute {
				t.Errorf("timestamp %q is not a recent ISO 8601 UTC time: %v", e["timestamp"], err)
			}
		}
	})
	invalid := []struct{ name, raw string }{
		{"IPv4", "1.2.3.4"}, {"IPv4WithScheme", "http://10.0.0.1/x"}, {"IPv4Port", "127.0.0.1:8080"},
		{"IPv6", "::1"}, {"IPv6Bracketed", "[2001:db8::1]"}, {"IPv6BracketedPort", "http://[2001:db8::1]:80/"},
		{"Markup", "<script>alert(1)</script>"}, {"MarkupHost", "exa<b>mple.com"},
		{"Space", "exa mple.com"}, {"LeadingSpace", " example.com"}, {"Tab", "example.com\t"},
		{"EmptyLabel", "example..com"}, {"LeadingDot", ".example.com"}, {"Underscore", "my_site.com"},
		{"SingleLabel", "localhost"}, {"HyphenStart", "-example.com"}, {"HyphenEnd", "example-.com"},
		{"LabelTooLong", strings.Repeat("a", 64) + ".com"}, {"NameTooLong", strings.Repeat(strings.Repeat("a", 60)+".", 5) + "com"},
		{"OtherScheme", "ftp://example.com"}, {"JavascriptScheme", "javascript:alert(1)"},
		{"UserInfo", "user:pass@example.com"}, {"BadPort", "example.com:99999"}, {"PortText", "example.com:http"},
		{"NumericTLD", "example.123"}, {"Percent", "exa%mple.com"}, {"Quote", `"example.com"`},
		{"OnlyScheme", "https://"}, {"Slash", "/"}, {"Emoji", "☃☃_.com"},
	}
	for _, tt := range invalid {
		t.Run("InvalidDomain/"+tt.name, func(t *testing.T) {
			r := get(t, s, "/atlas/site-similar?url="+urlEscape(tt.raw), bearer...)
			if r.status != 400 {
				t.Fatalf("status = %d, want 400: %.200s", r.status, r.body)
			}
			checkHeaders(t, r, "1000")
			m := object(t, r.body)
			wantKeys(t, "400 body", m, "status", "error", "meta")
			e := m["error"].(map[string]any)
			wantKeys(t, "400 error", e, "code", "message", "target", "rejected_value", "timestamp")
			if e["code"] != "INVALID_DOMAIN" || e["rejected_value"] != tt.raw || e["target"] != "url" {
				t.Errorf("error = %v, want INVALID_DOMAIN rejecting %q", e, tt.raw)
			}
			if got := m["meta"].(map[string]any)["request"].(map[string]any)["url"]; got != tt.raw {
				t.Errorf("meta.request.url = %v, want %q", got, tt.raw)
			}
		})
	}
	valid := []struct{ name, raw, want string }{
		{"Plain", "example.com", "example.com"},
		{"Subdomain", "blog.example.co.uk", "blog.example.co.uk"},
		{"HTTPS", "https://example.com", "example.com"},
		{"HTTPUpper", "HTTP://EXAMPLE.COM", "example.com"},
		{"WWW", "www.example.com", "example.com"},
		{"PathQueryFragment", "https://www.example.com/a/b?c=d#e", "example.com"},
		{"Port", "example.com:8080", "example.com"},
		{"TrailingDot", "example.com.", "example.com"},
		{"IDN", "bücher.de", "xn--bcher-kva.de"},
		{"IDNUpper", "https://BÜCHER.de/", "xn--bcher-kva.de"},
		{"Punycode", "xn--bcher-kva.de", "xn--bcher-kva.de"},
		{"Hyphen", "my-site.io", "my-site.io"},
		{"WWWOnlyKept", "www.com", "www.com"},
		{"Label63", strings.Repeat("a", 63) + ".com", strings.Repeat("a", 63) + ".com"},
	}
	for _, tt := range valid {
		t.Run("Accepted/"+tt.name, func(t *testing.T) {
			r := get(t, s, "/atlas/site-overview?url="+urlEscape(tt.raw), bearer...)
			if r.status != 200 {
				t.Fatalf("status = %d, want 200: %.300s", r.status, r.body)
			}
			o, err := schema.DecodeOverview(r.body)
			if err != nil {
				t.Fatal(err)
			}
			if o.Website.Domain != tt.want || o.Meta.Request.URL != tt.raw {
				t.Errorf("domain %q echo %q, want %q and %q", o.Website.Domain, o.Meta.Request.URL, tt.want, tt.raw)
			}
		})
	}
	t.Run("NotCharged", func(t *testing.T) {
		if got, want := s.Credits(atlastest.DefaultKey), int64(500-len(valid)); got != want {
			t.Errorf("credits = %d, want %d (only the accepted forms charged)", got, want)
		}
	})
}

func TestRoutingErrors(t *testing.T) {
	s := newServer(t, atlastest.Options{Rate: 1000})
	big := bytes.Repeat([]byte("x"), atlastest.MaxBodyBytes+1)
	tests := []struct {
		name, method, path string
		body               func() io.Reader
		wantStatus         int
		wantKeys           []string
	}{
		{"POST", http.MethodPost, "/atlas/site-overview?url=example.com", nil, 405, []string{"detail"}},
		{"PUT", http.MethodPut, "/atlas/site-similar?url=example.com", nil, 405, []string{"detail"}},
		{"DELETE", http.MethodDelete, "/atlas/country-metadata", nil, 405, []string{"detail"}},
		{"PATCH", http.MethodPatch, "/atlas/website-overview?url=example.com", nil, 405, []string{"detail"}},
		{"UnknownRoute", http.MethodGet, "/atlas/site-traffic?url=example.com", nil, 404, []string{"detail"}},
		{"ServiceRoot", http.MethodGet, "/atlas", nil, 404, []string{"detail"}},
		{"TrailingSlash", http.MethodGet, "/atlas/site-overview/?url=example.com", nil, 404, []string{"detail"}},
		{"UnknownService", http.MethodGet, "/orbit/site-overview?url=example.com", nil, 404, []string{"error", "message", "documentation_url"}},
		{"Root", http.MethodGet, "/", nil, 404, []string{"error", "message", "documentation_url"}},
		{"NoPrefixWithoutMarketplace", http.MethodGet, "/site-overview?url=example.com", nil, 404, []string{"error", "message", "documentation_url"}},
		{"BodyTooLarge", http.MethodPost, "/atlas/site-overview?url=example.com", func() io.Reader { return bytes.NewReader(big) }, 413, []string{"error", "message"}},
		{"StreamedBodyTooLarge", http.MethodGet, "/atlas/site-overview?url=example.com", func() io.Reader { return io.MultiReader(bytes.NewReader(big)) }, 413, []string{"error", "message"}},
		{"SmallBodyGET", http.MethodGet, "/atlas/site-overview?url=example.com", func() io.Reader { return strings.NewReader("{}") }, 200, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body io.Reader
			if tt.body != nil {
				body = tt.body()
			}
			r := call(t, s.Client(), tt.method, s.URL+tt.path, body, bearer...)
			if r.status != tt.wantStatus {
				t.Fatalf("status = %d, want %d: %.200s", r.status, tt.wantStatus, r.body)
			}
			checkHeaders(t, r, "1000")
			if tt.wantKeys != nil {
				wantKeys(t, "body", object(t, r.body), tt.wantKeys...)
			}
			if tt.wantStatus == 405 && r.header.Get("Allow") != "GET" {
				t.Errorf("Allow = %q, want GET", r.header.Get("Allow"))
			}
		})
	}
	if got := s.Credits(atlastest.DefaultKey); got != 499 {
		t.Errorf("credits = %d, want 499 (only the small-body GET charged)", got)
	}
}

func TestMarketplace(t *testing.T) {
	const host, mkey = "site-intel.marketplace.example", "mk-secret"
	mh := []string{"X-Marketplace-Host", host, "X-Marketplace-Key", mkey}
	with := func(extra ...string) []string { return append(append([]string{}, mh...), extra...) }

	t.Run("Listing", func(t *testing.T) {
		s := newServer(t, atlastest.Options{Rate: 1000, MarketplaceHost: host, MarketplaceKey: mkey, MarketplaceQuota: 3})
		g := atlastest.NewGenerator(1, testMonth)
		for i, tt := range []struct {
			path string
			want []byte
		}{
			{"/site-overview?url=example.com", g.OverviewBody("example.com")},
			{"/website-overview?url=example.com", g.OverviewBody("example.com")},
			{"/similar-sites?url=example.com", g.SimilarBody("example.com")},
		} {
			r := get(t, s, tt.path, mh...)
			if r.status != 200 || !bytes.Equal(r.body, tt.want) {
				t.Fatalf("%s: status %d, body equal %v", tt.path, r.status, bytes.Equal(r.body, tt.want))
			}
			checkHeaders(t, r, "1000")
			checkMarketplaceHeaders(t, r, "3", strconv.Itoa(2-i))
		}
		r := get(t, s, "/country-metadata", mh...)
		if r.status != 429 {
			t.Fatalf("after the quota: status %d, want 429", r.status)
		}
		checkMarketplaceHeaders(t, r, "3", "0")
		wantKeys(t, "quota 429", object(t, r.body), "error", "message", "service")
		if got := s.Credits(atlastest.DefaultKey); got != 500 {
			t.Errorf("wallet charged without a bearer key: %d", got)
		}
	})

	s := newServer(t, atlastest.Options{Rate: 1000, MarketplaceHost: host, MarketplaceKey: mkey, MarketplaceRequireBearer: true})
	tests := []struct {
		name       string
		path       string
		hdr        []string
		wantStatus int
		wantMsg    string
	}{
		{"BearerRequiredMissing", "/site-overview?url=example.com", mh, 401, "bearer key is required"},
		{"WrongKey", "/site-overview?url=example.com", []string{"X-Marketplace-Host", host, "X-Marketplace-Key", "nope", "Authorization", "Bearer demo-key"}, 401, "marketplace"},
		{"WrongHost", "/site-overview?url=example.com", []string{"X-Marketplace-Host", "other.example", "X-Marketplace-Key", mkey, "Authorization", "Bearer demo-key"}, 401, "marketplace"},
		{"KeyOnly", "/site-overview?url=example.com", []string{"X-Marketplace-Key", mkey, "Authorization", "Bearer demo-key"}, 401, "marketplace"},
		{"BadBearer", "/site-overview?url=example.com", with("Authorization", "Bearer nope"), 401, "invalid or missing"},
		{"WithBearer", "/site-overview?url=example.com", with("Authorization", "Bearer demo-key"), 200, ""},
		{"Countries", "/country-metadata", with("Authorization", "Bearer demo-key"), 200, ""},
		{"UnknownRoute", "/site-traffic", with("Authorization", "Bearer demo-key"), 404, ""},
		{"Validation", "/site-similar?url=1.2.3.4", with("Authorization", "Bearer demo-key"), 400, ""},
		{"PrefixedPathIsDirect", "/atlas/site-overview?url=example.com", with("Authorization", "Bearer demo-key"), 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := get(t, s, tt.path, tt.hdr...)
			if r.status != tt.wantStatus {
				t.Fatalf("status = %d, want %d: %s", r.status, tt.wantStatus, r.body)
			}
			checkHeaders(t, r, "1000")
			if !strings.HasPrefix(tt.path, "/atlas") {
				checkMarketplaceHeaders(t, r, "10000", "")
			} else if r.header.Get("X-Marketplace-Request-Id") != "" {
				t.Errorf("direct call carries x-marketplace-request-id")
			}
			if tt.wantStatus == 401 {
				m := object(t, r.body)
				wantKeys(t, "401 body", m, "error", "message", "service")
				if !strings.Contains(m["message"].(string), tt.wantMsg) {
					t.Errorf("message %q does not contain %q", m["message"], tt.wantMsg)
				}
			}
		})
	}
	if got := s.Credits(atlastest.DefaultKey); got != 497 {
		t.Errorf("wallet = %d, want 497 (three 200s with the bearer key)", got)
	}
	if got := s.MarketplaceRemaining(); got != 9998 {
		t.Errorf("quota remaining = %d, want 9998 (two marketplace 200s)", got)
	}
}

func checkMarketplaceHeaders(t *testing.T, r reply, limit, remaining string) {
	t.Helper()
	if got := r.header.Get("X-Ratelimit-Requests-Limit"); got != limit {
		t.Errorf("x-ratelimit-requests-limit = %q, want %q", got, limit)
	}
	if got := r.header.Get("X-Ratelimit-Requests-Remaining"); remaining != "" && got != remaining || got == "" {
		t.Errorf("x-ratelimit-requests-remaining = %q, want %q", got, remaining)
	}
	reset, err := strconv.ParseInt(r.header.Get("X-Ratelimit-Requests-Reset"), 10, 64)
	if err != nil || reset <= time.Now().Unix() || reset > time.Now().AddDate(0, 1, 1).Unix() {
		t.Errorf("x-ratelimit-requests-reset = %q, want an epoch within the next month", r.header.Get("X-Ratelimit-Requests-Reset"))
	}
	if r.header.Get("X-Marketplace-Region") == "" || len(r.header.Get("X-Marketplace-Request-Id")) < 8 {
		t.Errorf("x-marketplace-region %q / request id %q missing", r.header.Get("X-Marketplace-Region"), r.header.Get("X-Marketplace-Request-Id"))
	}
}

func TestFailRate(t *testing.T) {
	s := newServer(t, atlastest.Options{Rate: 1000, FailRate: 1})
	seen := map[int]bool{}
	for i := 0; i < 60; i++ {
		r := get(t, s, "/atlas/site-overview?url=example.com", bearer...)
		seen[r.status] = true
		checkHeaders(t, r, "1000")
		m := object(t, r.body)
		switch r.status {
		case 500:
			wantKeys(t, "500 body", m, "error", "message")
		case 502, 504:
			wantKeys(t, fmt.Sprint(r.status, " body"), m, "messages", "info")
		default:
			t.Fatalf("status = %d, want 500, 502 or 504", r.status)
		}
	}
	if !seen[500] || !seen[502] || !seen[504] {
		t.Errorf("statuses seen = %v, want all of 500, 502, 504", seen)
	}
	if r := get(t, s, "/atlas/site-overview", bearer...); r.status != 400 {
		t.Errorf("a bad request under fail-rate 1 gives %d, want 400 (only otherwise-good requests fail)", r.status)
	}
	if got := s.Credits(atlastest.DefaultKey); got != 500 {
		t.Errorf("credits = %d, want 500 (failures never charged)", got)
	}
}

func TestFaults(t *testing.T) {
	path := "/atlas/site-overview?url=example.com"
	good := atlastest.NewGenerator(1, testMonth).OverviewBody("example.com")
	t.Run("RateLimited", func(t *testing.T) {
		s := newServer(t, atlastest.Options{Rate: 1000, Faults: atlastest.Faults{RateLimited: 1, RetryAfter: 2500 * time.Millisecond}})
		r := get(t, s, path, bearer...)
		if r.status != 429 || r.header.Get("Retry-After") != "3" || r.header.Get("X-RateLimit-Remaining") != "0" {
			t.Errorf("status %d Retry-After %q remaining %q, want 429, 3, 0", r.status, r.header.Get("Retry-After"), r.header.Get("X-RateLimit-Remaining"))
		}
		checkHeaders(t, r, "1000")
		wantKeys(t, "429 body", object(t, r.body), "error", "message", "service")
		if st := s.Stats(); st.Charged != 0 || s.Credits(atlastest.DefaultKey) != 500 {
			t.Errorf("spurious 429 charged: %+v", st)
		}
	})
	t.Run("Reset", func(t *testing.T) {
		s := newServer(t, atlastest.Options{Rate: 1000, Faults: atlastest.Faults{Reset: 1}})
		req, _ := http.NewRequest(http.MethodGet, s.URL+path, nil)
		req.Header.Set(bearer[0], bearer[1])
		resp, err := s.Client().Do(req)
		if err != nil {
			t.Fatalf("headers should arrive before the cut: %v", err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("read err = %v after %d bytes, want unexpected EOF", err, len(b))
		}
		if resp.StatusCode != 200 || resp.ContentLength != int64(len(good)) || len(b) >= len(good) {
			t.Errorf("status %d, Content-Length %d, read %d; want 200, %d and fewer bytes", resp.StatusCode, resp.ContentLength, len(b), len(good))
		}
		wantCharged(t, s, 1, 0, 1)
	})
	for _, tt := range []struct {
		name     string
		faults   atlastest.Faults
		wantType string
		check    func(t *testing.T, b []byte)
	}{
		{"Truncated", atlastest.Faults{Truncated: 1}, "application/json; charset=utf-8", func(t *testing.T, b []byte) {
			if len(b) >= len(good) || !bytes.HasPrefix(good, b) {
				t.Errorf("body of %d bytes is not a prefix of the %d-byte body", len(b), len(good))
			}
		}},
		{"HTML200", atlastest.Faults{HTML200: 1}, "text/html; charset=utf-8", func(t *testing.T, b []byte) {
			if !bytes.HasPrefix(b, []byte("<!DOCTYPE html>")) {
				t.Errorf("body = %.60s, want an HTML page", b)
			}
		}},
		{"WrongContentType", atlastest.Faults{WrongContentType: 1}, "text/plain; charset=utf-8", func(t *testing.T, b []byte) {
			if !bytes.Equal(b, good) {
				t.Errorf("body differs from the valid body")
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, atlastest.Options{Rate: 1000, Faults: tt.faults})
			r := get(t, s, path, bearer...)
			if r.status != 200 || r.header.Get("Content-Type") != tt.wantType {
				t.Fatalf("status %d type %q, want 200 %q", r.status, r.header.Get("Content-Type"), tt.wantType)
			}
			if cl := r.header.Get("Content-Length"); cl != strconv.Itoa(len(r.body)) {
				t.Errorf("Content-Length %s, body %d bytes", cl, len(r.body))
			}
			tt.check(t, r.body)
			wantCharged(t, s, 1, 0, 1)
		})
	}
	t.Run("Hang", func(t *testing.T) {
		// A minute's hang (Close wakes it) that a client time-out must cut well short of, even
		// on a loaded machine.
		s := newServer(t, atlastest.Options{Rate: 1000, Faults: atlastest.Faults{Hang: time.Minute}})
		c := &http.Client{Timeout: 150 * time.Millisecond}
		start := time.Now()
		_, err := c.Get(s.URL + path)
		if err == nil || time.Since(start) > 30*time.Second {
			t.Errorf("err = %v after %v, want a client timeout", err, time.Since(start))
		}
	})
	t.Run("MixedCharging", func(t *testing.T) {
		s := newServer(t, atlastest.Options{Rate: 100000, Keys: map[string]int64{"k": 1000}, FailRate: 0.2,
			Faults: atlastest.Faults{RateLimited: 0.1, Truncated: 0.1, HTML200: 0.1, WrongContentType: 0.1}})
		for i := 0; i < 300; i++ {
			get(t, s, "/atlas/site-similar?url=example.com", "X-API-Key", "k")
		}
		st := s.Stats()
		if st.Charged != int64(st.OK+st.Broken) || st.Charged != 1000-s.Credits("k") || int64(st.Fetches[atlastest.Fetch{Endpoint: "site-similar", Domain: "example.com"}]) != st.Charged {
			t.Errorf("stats inconsistent: charged %d ok %d broken %d credits left %d fetches %v", st.Charged, st.OK, st.Broken, s.Credits("k"), st.Fetches)
		}
		if st.Requests != 300 || st.ByEndpoint["site-similar"] != 300 || st.ByStatus[200] != st.OK+st.Broken {
			t.Errorf("stats: %+v", st)
		}
		if st.Broken == 0 || st.OK == 0 || st.ByStatus[429] == 0 {
			t.Errorf("faults did not all occur: %+v", st)
		}
	})
}

func wantCharged(t *testing.T, s *atlastest.Server, charged int64, ok, broken int) {
	t.Helper()
	st := s.Stats()
	if st.Charged != charged || st.OK != ok || st.Broken != broken {
		t.Errorf("stats charged %d ok %d broken %d, want %d %d %d", st.Charged, st.OK, st.Broken, charged, ok, broken)
	}
	if got := s.Credits(atlastest.DefaultKey); got != 500-charged {
		t.Errorf("credits = %d, want %d", got, 500-charged)
	}
}

// TestLatencyAndClose: the server adds its latency (200-300 ms) to a request and reports it in
// X-Gateway-Latency-Ms, and Close waits for a request in its latency (answered, not cut). On
// loopback only what load cannot break is checked: at least the latency passed, and the
// server's figure is no more than the client saw; the waits are hang guards (a minute). That
// the figure is the latency drawn, within 200-300 ms, is TestLatencyInFakeTime's.
func TestLatencyAndClose(t *testing.T) {
	s := atlastest.NewServer(atlastest.Options{Rate: 1000, LatencyMin: 200 * time.Millisecond, LatencyMax: 300 * time.Millisecond})
	done := make(chan reply, 1)
	start := time.Now()
	go func() {
		req, _ := http.NewRequest(http.MethodGet, s.URL+"/atlas/country-metadata", nil)
		req.Header.Set(bearer[0], bearer[1])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- reply{status: -1}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- reply{resp.StatusCode, resp.Header, b}
	}()
	// Wait for the request to arrive (not a fixed sleep: on a loaded machine it may take
	// longer); a hang guard, not a bound.
	for deadline := time.Now().Add(time.Minute); s.InFlight() == 0 && s.Stats().Requests == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the request did not reach the server within a minute")
		}
	}
	s.Close() // waits for the in-flight request (in its 200-300 ms latency)
	select {
	case r := <-done:
		el := time.Since(start)
		if r.status != 200 {
			t.Fatalf("in-flight request got %d, want 200", r.status)
		}
		if el < 200*time.Millisecond {
			t.Errorf("answered after %v, want at least the 200ms latency", el)
		}
		// The server's clock runs from the request's arrival to its headers, inside the
		// client's: its figure can be no larger, however loaded the machine.
		if ms, _ := strconv.Atoi(r.header.Get("X-Gateway-Latency-Ms")); ms < 200 || int64(ms) > el.Milliseconds() {
			t.Errorf("X-Gateway-Latency-Ms = %d, want at least the 200ms latency and at most the %v the client waited", ms, el)
		}
	case <-time.After(time.Minute): // a hang guard, not a bound
		t.Fatal("request did not finish within a minute")
	}
}

// TestLatencyInFakeTime: in fake time (testing/synctest, the handler called in memory), a
// request waits the latency drawn, within LatencyMin-LatencyMax (200-300 ms), and
// X-Gateway-Latency-Ms reports exactly that wait.
func TestLatencyInFakeTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, err := atlastest.NewHandler(atlastest.Options{Month: testMonth, Rate: 1000, LatencyMin: 200 * time.Millisecond, LatencyMax: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		for range 20 {
			req := httptest.NewRequest(http.MethodGet, "/atlas/country-metadata", nil)
			req.Header.Set(bearer[0], bearer[1])
			rec := httptest.NewRecorder()
			start := time.Now()
			h.ServeHTTP(rec, req)
			took := time.Since(start)
			if rec.Code != 200 {
				t.Fatalf("status %d, want 200", rec.Code)
			}
			if took < 200*time.Millisecond || took > 300*time.Millisecond {
				t.Errorf("the request took %v, want the latency, 200-300ms", took)
			}
			if ms, _ := strconv.Atoi(rec.Header().Get("X-Gateway-Latency-Ms")); int64(ms) != took.Milliseconds() {
				t.Errorf("X-Gateway-Latency-Ms = %d, want the %v the request took", ms, took)
			}
		}
	})
}

func TestLegacy(t *testing.T) {
	s := newServer(t, atlastest.Options{Rate: 1000, Legacy: true})
	for _, tt := range []struct {
		path   string
		decode func([]byte) error
	}{
		{"/atlas/site-overview?url=example.com", func(b []byte) error { _, err := schema.DecodeOverview(b); return err }},
		{"/atlas/site-similar?url=example.com", func(b []byte) error { _, err := schema.DecodeSimilar(b); return err }},
		{"/atlas/country-metadata", func(b []byte) error { _, err := schema.DecodeCountries(b); return err }},
	} {
		t.Run(tt.path, func(t *testing.T) {
			r := get(t, s, tt.path, bearer...)
			if r.status != 200 {
				t.Fatalf("status %d", r.status)
			}
			m := object(t, r.body)
			if m["success"] != true || m["status"] != nil {
				t.Errorf("legacy body has success=%v status=%v", m["success"], m["status"])
			}
			if err := tt.decode(r.body); !errors.Is(err, schema.ErrLegacyV1) && !strings.Contains(tt.path, "country") {
				t.Errorf("decode err = %v, want ErrLegacyV1", err)
			}
			if strings.Contains(tt.path, "country") && !bytes.Contains(r.body, []byte(`"alpha-2":"AD"`)) {
				t.Errorf("legacy countries lack hyphenated keys: %.200s", r.body)
			}
		})
	}
}

func TestOptionsValidation(t *testing.T) {
	tests := []struct {
		name string
		opts atlastest.Options
	}{
		{"NegativeRate", atlastest.Options{Rate: -1}},
		{"FailRateAboveOne", atlastest.Options{FailRate: 1.5}},
		{"BadMonth", atlastest.Options{Month: "2026-13"}},
		{"NegativeMonthTurnAfter", atlastest.Options{MonthTurnAfter: -time.Second}},
		{"LatencyInverted", atlastest.Options{LatencyMin: time.Second, LatencyMax: time.Millisecond}},
		{"MarketplaceHostOnly", atlastest.Options{MarketplaceHost: "x"}},
		{"RequireBearerWithoutListing", atlastest.Options{MarketplaceRequireBearer: true}},
		{"FaultsSumAboveOne", atlastest.Options{Faults: atlastest.Faults{Reset: 0.6, Truncated: 0.6}}},
		{"EmptyKey", atlastest.Options{Keys: map[string]int64{"": 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := atlastest.NewHandler(tt.opts); err == nil {
				t.Fatal("NewHandler accepted invalid options")
			}
			defer func() {
				if recover() == nil {
					t.Error("NewServer did not panic")
				}
			}()
			atlastest.NewServer(tt.opts).Close()
		})
	}
	if _, err := atlastest.NewHandler(atlastest.Options{}); err != nil {
		t.Errorf("zero Options rejected: %v", err)
	}
}

func TestParseFlagsHelpers(t *testing.T) {
	keyTests := []struct {
		in      string
		want    map[string]int64
		wantErr bool
	}{
		{"demo-key=500", map[string]int64{"demo-key": 500}, false},
		{"a=1, b=-2", map[string]int64{"a": 1, "b": -2}, false},
		{"a", nil, true}, {"a=x", nil, true}, {"=5", nil, true}, {"a=1,a=2", nil, true},
	}
	for _, tt := range keyTests {
		t.Run("Keys/"+tt.in, func(t *testing.T) {
			got, err := atlastest.ParseKeys(tt.in)
			if (err != nil) != tt.wantErr || fmt.Sprint(got) != fmt.Sprint(tt.want) && !tt.wantErr {
				t.Fatalf("ParseKeys(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
			if err != nil && tt.in == "a=1,a=2" && strings.Contains(err.Error(), "a") && strings.Contains(err.Error(), "=a") {
				t.Errorf("error leaks the key: %v", err)
			}
		})
	}
	latTests := []struct {
		in      string
		lo, hi  time.Duration
		wantErr bool
	}{
		{"0", 0, 0, false}, {"200ms", 200 * time.Millisecond, 200 * time.Millisecond, false},
		{"200ms-800ms", 200 * time.Millisecond, 800 * time.Millisecond, false},
		{"1s-10ms", 0, 0, true}, {"fast", 0, 0, true}, {"10-20", 0, 0, true},
	}
	for _, tt := range latTests {
		t.Run("Latency/"+tt.in, func(t *testing.T) {
			lo, hi, err := atlastest.ParseLatency(tt.in)
			if (err != nil) != tt.wantErr || lo != tt.lo || hi != tt.hi {
				t.Errorf("ParseLatency(%q) = %v, %v, %v; want %v, %v, err %v", tt.in, lo, hi, err, tt.lo, tt.hi, tt.wantErr)
			}
		})
	}
}
