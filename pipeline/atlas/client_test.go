package atlas

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/model"
	"sitewatch/schema"
)

// canary is the API key of every test: it must never show up in an error or a log line.
const (
	canary       = "sk-canary-3f9a1c7e5b2d"
	canaryMarket = "mk-canary-8e2b4d6f0a1c"
)

// logBuffer is a goroutine-safe sink for the client's slog output.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func newServer(t testing.TB, opts atlastest.Options) *atlastest.Server {
	t.Helper()
	if opts.Keys == nil {
		opts.Keys = map[string]int64{canary: 1000}
	}
	if opts.Rate == 0 {
		opts.Rate = 50
	}
	srv := atlastest.NewServer(opts)
	t.Cleanup(srv.Close)
	return srv
}

func newClient(t testing.TB, srv *atlastest.Server, cfg Config) *Client {
	t.Helper()
	if cfg.BaseURL == "" {
		cfg.BaseURL = srv.URL
	}
	if cfg.APIKey == "" && cfg.Mode != ModeMarketplace {
		cfg.APIKey = canary
	}
	if cfg.RateLimit == 0 {
		cfg.RateLimit = 50
	}
	if cfg.RetryInitial == 0 {
		cfg.RetryInitial = 5 * time.Millisecond
	}
	if cfg.RetryMax == 0 {
		cfg.RetryMax = 50 * time.Millisecond
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	logs := &logBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { assertNoKey(t, "log output", logs.String()) })
	return c
}

// canaryForms holds every encoding of the test keys the client must never let out.
var canaryForms = newSecrets(canary, canaryMarket)

func assertNoKey(t testing.TB, what, s string) {
	t.Helper()
	if canaryForms.in([]byte(s)) {
		t.Errorf("%s contains a key (in some encoding): %q", what, s)
	}
}

// domainReqs returns n site-overview requests for distinct domains.
func domainReqs(n int) []model.Request {
	reqs := make([]model.Request, n)
	for i := range reqs {
		reqs[i] = model.Request{Endpoint: schema.EndpointOverview, Domain: fmt.Sprintf("site%03d.example.com", i)}
	}
	return reqs
}

// run calls FetchAll and returns what was handed over, checking the key stays secret
// and handle is never called concurrently.
func run(t testing.TB, ctx context.Context, c *Client, reqs []model.Request, onResult func(n int, r model.Result)) ([]model.Result, error) {
	t.Helper()
	var got []model.Result
	var busy sync.Mutex
	err := c.FetchAll(ctx, reqs, func(r model.Result) {
		if !busy.TryLock() {
			t.Errorf("handle called concurrently")
			return
		}
		defer busy.Unlock()
		got = append(got, r)
		if r.Err != nil {
			assertNoKey(t, "result error", r.Err.Error())
		}
		if onResult != nil {
			onResult(len(got), r)
		}
	})
	if err != nil {
		assertNoKey(t, "FetchAll error", err.Error())
	}
	return got, err
}

func countOK(rs []model.Result) int {
	n := 0
	for _, r := range rs {
		if r.Err == nil {
			n++
		}
	}
	return n
}

func TestFetchAllOK(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"Bearer", Config{}},
		{"XAPIKey", Config{UseXAPIKey: true}},
		{"Serial", Config{Concurrency: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, atlastest.Options{LatencyMin: 5 * time.Millisecond, LatencyMax: 20 * time.Millisecond})
			c := newClient(t, srv, tt.cfg)
			reqs := []model.Request{{Endpoint: schema.EndpointCountries}}
			for _, r := range domainReqs(6) {
				reqs = append(reqs, r, model.Request{Endpoint: schema.EndpointSimilar, Domain: r.Domain})
			}
			got, err := run(t, context.Background(), c, reqs, nil)
			if err != nil {
				t.Fatalf("FetchAll: %v", err)
			}
			if len(got) != len(reqs) {
				t.Fatalf("handed over %d results, want %d", len(got), len(reqs))
			}
			for _, r := range got {
				if r.Err != nil {
					t.Errorf("%s %s: %v", r.Endpoint, r.Domain, r.Err)
					continue
				}
				if err := schema.Validate(r.Endpoint, r.Body); err != nil {
					t.Errorf("%s %s: body does not validate: %v", r.Endpoint, r.Domain, err)
				}
				assertDecoded(t, r)
				if r.Charged != 1 {
					t.Errorf("%s %s: Charged = %d, want 1", r.Endpoint, r.Domain, r.Charged)
				}
				if r.Attempts != 1 || r.FetchedAt.IsZero() || r.FetchedAt.Location() != time.UTC {
					t.Errorf("%s %s: attempts %d, fetched at %v; want 1 attempt and a UTC time", r.Endpoint, r.Domain, r.Attempts, r.FetchedAt)
				}
			}
			st, ss := c.Stats(), srv.Stats()
			if got, want := st.CreditsSpent, int64(len(reqs)); got != want {
				t.Errorf("CreditsSpent = %d, want %d", got, want)
			}
			if got, want := int64(ss.Charged), int64(len(reqs)); got != want {
				t.Errorf("server charged %d, want %d", got, want)
			}
			if got, want := st.CreditsRemaining, srv.Credits(canary); got != want {
				t.Errorf("CreditsRemaining = %d, server says %d", got, want)
			}
			if st.Requests != int64(len(reqs)) || st.Succeeded != int64(len(reqs)) || st.Retries != 0 {
				t.Errorf("Stats = %+v, want %d requests, all succeeded, no retries", st, len(reqs))
			}
		})
	}
}

func TestRateLimitStorm(t *testing.T) {
	// The 429 pauses pass on a fake clock; the simulator's own limit is out of reach.
	srv := newServer(t, atlastest.Options{Rate: 100000, Faults: atlastest.Faults{RateLimited: 0.3, RetryAfter: time.Second}})
	clock := newFakeClock()
	c := newClient(t, srv, Config{MaxAttempts: 12, Clock: clock})
	// The simulator draws each 429 at 30 %: over 10 requests no storm at all came 1 time in
	// 36 (0.7^10; it went red in CI), over 60 it comes 1 time in 2 billion (0.7^60).
	reqs := domainReqs(60)
	got, err := run(t, context.Background(), c, reqs, nil)
	if err != nil {
		t.Fatalf("FetchAll: %v", err)
	}
	if len(got) != len(reqs) || countOK(got) != len(reqs) {
		t.Fatalf("got %d results, %d ok; want %d ok", len(got), countOK(got), len(reqs))
	}
	st, ss := c.Stats(), srv.Stats()
	if st.RateLimited == 0 {
		t.Errorf("no 429 seen; the storm did not happen")
	}
	if got, want := int64(ss.ByStatus[http.StatusTooManyRequests]), st.RateLimited; got != want {
		t.Errorf("server answered %d 429s, client counted %d", got, want)
	}
	if got, want := st.Retries, st.RateLimited; got != want {
		t.Errorf("Retries = %d, want one per 429 (%d)", got, want)
	}
	if got, want := int64(ss.Charged), int64(len(reqs)); got != want {
		t.Errorf("charged %d credits for %d requests; 429s must cost nothing", got, want)
	}
	if st.RateLimitWaited < time.Second || clock.Since() < st.RateLimitWaited {
		t.Errorf("RateLimitWaited = %v, clock moved %v: want at least one 1s pause, waited out", st.RateLimitWaited, clock.Since())
	}
}

func TestRateLimitedExhausted(t *testing.T) {
	tests := []struct {
		name          string
		maxRetryAfter time.Duration
		wantPauseMin  time.Duration
		wantPauseMax  time.Duration
	}{
		{"HonoursRetryAfter", 0, time.Second, 1250 * time.Millisecond},
		{"CappedByMaxRetryAfter", 100 * time.Millisecond, 100 * time.Millisecond, 150 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, atlastest.Options{Faults: atlastest.Faults{RateLimited: 1, RetryAfter: time.Second}})
			clock := newFakeClock()
			c := newClient(t, srv, Config{MaxAttempts: 2, MaxRateLimited: 2, MaxRetryAfter: tt.maxRetryAfter, Clock: clock})
			r := c.Fetch(context.Background(), domainReqs(1)[0])
			elapsed := clock.Since()
			var e *model.Error
			if !errors.Is(r.Err, model.ErrRateLimited) || !errors.As(r.Err, &e) {
				t.Fatalf("Err = %v, want an *model.Error wrapping model.ErrRateLimited", r.Err)
			}
			assertNoKey(t, "error", r.Err.Error())
			if r.Attempts != 2 || e.Status != http.StatusTooManyRequests {
				t.Errorf("attempts %d, status %d; want 2 attempts, 429", r.Attempts, e.Status)
			}
			if e.RetryAfter < tt.wantPauseMin || e.RetryAfter > tt.wantPauseMax {
				t.Errorf("RetryAfter = %v, want within [%v, %v]", e.RetryAfter, tt.wantPauseMin, tt.wantPauseMax)
			}
			if elapsed < tt.wantPauseMin {
				t.Errorf("retried after %v, before the %v pause ended", elapsed, tt.wantPauseMin)
			}
			if c.Err() != nil {
				t.Errorf("a 429 stopped the client: %v", c.Err())
			}
			// Two 429s slow the bucket to 0.9² of the limit; good answers win it back.
			if st := c.Stats(); math.Abs(st.PacedRate-0.81*st.RateLimit) > 1e-9 {
				t.Errorf("PacedRate = %v after two 429s, want 0.81 × %v", st.PacedRate, st.RateLimit)
			}
		})
	}
}

func TestFailRateBurst(t *testing.T) {
	srv := newServer(t, atlastest.Options{FailRate: 0.4, LatencyMax: 10 * time.Millisecond})
	c := newClient(t, srv, Config{MaxAttempts: 12})
	reqs := domainReqs(25)
	got, err := run(t, context.Background(), c, reqs, nil)
	if err != nil {
		t.Fatalf("FetchAll: %v", err)
	}
	if countOK(got) != len(reqs) {
		for _, r := range got {
			if r.Err != nil {
				t.Errorf("%s: %v", r.Domain, r.Err)
			}
		}
		t.Fatalf("%d of %d ok", countOK(got), len(reqs))
	}
	st, ss := c.Stats(), srv.Stats()
	failed := ss.ByStatus[500] + ss.ByStatus[502] + ss.ByStatus[504]
	if failed == 0 {
		t.Fatalf("server injected no failures: %+v", ss.ByStatus)
	}
	if got, want := st.Retries, int64(failed); got != want {
		t.Errorf("Retries = %d, want one per 5xx (%d)", got, want)
	}
	if got, want := int64(ss.Charged), int64(len(reqs)); got != want {
		t.Errorf("charged %d for %d requests; 5xx are free", got, want)
	}
	if got, want := st.CreditsSpent, int64(len(reqs)); got != want {
		t.Errorf("CreditsSpent = %d, want %d", got, want)
	}
	for status, n := range ss.ByStatus {
		if st.ByStatus[status] != int64(n) {
			t.Errorf("client counted %d answers %d, server sent %d", st.ByStatus[status], status, n)
		}
	}
}

func TestServerErrorExhausted(t *testing.T) {
	srv := newServer(t, atlastest.Options{FailRate: 1})
	c := newClient(t, srv, Config{MaxAttempts: 3})
	got, err := run(t, context.Background(), c, domainReqs(2), nil)
	if err != nil {
		t.Fatalf("FetchAll = %v; a failing request must not stop the run", err)
	}
	for _, r := range got {
		var e *model.Error
		if !errors.Is(r.Err, model.ErrServer) || !errors.As(r.Err, &e) || e.Status < 500 || r.Attempts != 3 {
			t.Errorf("%s: Err = %v after %d attempts, want an model.ErrServer 5xx after 3", r.Domain, r.Err, r.Attempts)
		}
	}
}

func TestOutOfCreditsMidBatch(t *testing.T) {
	srv := newServer(t, atlastest.Options{LatencyMin: 20 * time.Millisecond, LatencyMax: 80 * time.Millisecond})
	c := newClient(t, srv, Config{Concurrency: 8})
	reqs := domainReqs(60)
	got, err := run(t, context.Background(), c, reqs, func(n int, r model.Result) {
		if n == 10 {
			srv.SetCredits(canary, 0) // the wallet empties behind the client's back
		}
	})
	var e *model.Error
	if !errors.Is(err, model.ErrOutOfCredits) || !errors.As(err, &e) {
		t.Fatalf("FetchAll = %v, want an *model.Error wrapping model.ErrOutOfCredits", err)
	}
	t.Logf("stop error: %v", err)
	if e.Status != http.StatusPaymentRequired || e.RemainingBalance == nil {
		t.Errorf("stop error %+v: want status 402 with remainingBalance", e)
	}
	ss := srv.Stats()
	if ss.ByStatus[http.StatusPaymentRequired] == 0 {
		t.Fatalf("no 402 was answered; statuses %v", ss.ByStatus)
	}
	if got, want := countOK(got), ss.Charged; got != int(want) {
		t.Errorf("%d results handed over ok, server charged %d: every charged call must be handed over", got, want)
	}
	attempts := 0
	for _, r := range got {
		attempts += r.Attempts
	}
	if attempts != int(ss.Requests) {
		t.Errorf("server saw %d requests, handed-over results account for %d: a call was lost", ss.Requests, attempts)
	}
	if len(got) >= len(reqs) {
		t.Errorf("all %d requests started; a 402 must stop new ones", len(got))
	}
	// The stop is sticky: nothing more is sent.
	before := srv.Stats().Requests
	if err := c.FetchAll(context.Background(), domainReqs(3), func(model.Result) { t.Error("handed a result after the stop") }); !errors.Is(err, model.ErrOutOfCredits) {
		t.Errorf("second FetchAll = %v, want model.ErrOutOfCredits", err)
	}
	if after := srv.Stats().Requests; after != before {
		t.Errorf("%d requests sent after the stop", after-before)
	}
}

func TestStopsBeforeCredits(t *testing.T) {
	tests := []struct {
		name        string
		credits     int64
		cfg         Config
		want        error
		wantCharged int
	}{
		{"ReserveStop", 20, Config{MinCredits: 5}, model.ErrCreditReserve, 15},
		{"EmptyWalletWithoutA402", 3, Config{}, model.ErrOutOfCredits, 3},
		{"RunBudget", 100, Config{MaxCreditsPerRun: 7}, model.ErrRunBudget, 7},
		{"BudgetTighterThanReserve", 100, Config{MaxCreditsPerRun: 4, MinCredits: 90}, model.ErrRunBudget, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, atlastest.Options{Keys: map[string]int64{canary: tt.credits},
				LatencyMin: 10 * time.Millisecond, LatencyMax: 60 * time.Millisecond})
			tt.cfg.Concurrency = 10
			c := newClient(t, srv, tt.cfg)
			got, err := run(t, context.Background(), c, domainReqs(40), nil)
			if !errors.Is(err, tt.want) {
				t.Fatalf("FetchAll = %v, want %v", err, tt.want)
			}
			ss := srv.Stats()
			if int(ss.Charged) != tt.wantCharged || countOK(got) != tt.wantCharged || len(got) != tt.wantCharged {
				t.Errorf("charged %d, handed %d (%d ok); want exactly %d of each", ss.Charged, len(got), countOK(got), tt.wantCharged)
			}
			if n := ss.ByStatus[http.StatusPaymentRequired]; n != 0 {
				t.Errorf("%d answers were 402; the client must stop before the wallet is empty", n)
			}
		})
	}
}

func TestMarketplace(t *testing.T) {
	const host = "atlas.marketplace.example"
	tests := []struct {
		name          string
		requireBearer bool
		apiKey        string
		want          error
	}{
		{"NoBearer", false, "", nil},
		{"WithBearer", false, canary, nil},
		{"RequiredBearerGiven", true, canary, nil},
		{"RequiredBearerMissing", true, "", model.ErrUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, atlastest.Options{MarketplaceHost: host, MarketplaceKey: canaryMarket,
				MarketplaceRequireBearer: tt.requireBearer, MarketplaceQuota: 500})
			c := newClient(t, srv, Config{Mode: ModeMarketplace, MarketplaceHost: host,
				MarketplaceKey: canaryMarket, APIKey: tt.apiKey})
			reqs := append(domainReqs(4), model.Request{Endpoint: schema.EndpointCountries})
			got, err := run(t, context.Background(), c, reqs, nil)
			if !errors.Is(err, tt.want) {
				t.Fatalf("FetchAll = %v, want %v", err, tt.want)
			}
			if tt.want != nil {
				if len(got) != 1 || srv.Stats().Requests != 1 {
					t.Errorf("handed %d results, server saw %d requests; want 1 and 1 (one call until the first answer)", len(got), srv.Stats().Requests)
				}
				return
			}
			if countOK(got) != len(reqs) {
				t.Fatalf("%d of %d ok: %v", countOK(got), len(reqs), got[0].Err)
			}
			if q := c.Stats().QuotaRemaining; q != 500-int64(len(reqs)) {
				t.Errorf("QuotaRemaining = %d, want %d", q, 500-len(reqs))
			}
		})
	}
}

func TestMarketplaceQuotaReserve(t *testing.T) {
	const host = "atlas.marketplace.example"
	srv := newServer(t, atlastest.Options{MarketplaceHost: host, MarketplaceKey: canaryMarket, MarketplaceQuota: 10,
		LatencyMax: 30 * time.Millisecond})
	c := newClient(t, srv, Config{Mode: ModeMarketplace, MarketplaceHost: host, MarketplaceKey: canaryMarket,
		MinCredits: 3, Concurrency: 6})
	got, err := run(t, context.Background(), c, domainReqs(20), nil)
	if !errors.Is(err, model.ErrCreditReserve) {
		t.Fatalf("FetchAll = %v, want model.ErrCreditReserve", err)
	}
	if n, want := int(srv.Stats().Requests), 7; n != want || countOK(got) != want {
		t.Errorf("server saw %d requests, %d ok; want %d (quota 10, reserve 3)", n, countOK(got), want)
	}
	if q := c.Stats().QuotaRemaining; q != 3 {
		t.Errorf("QuotaRemaining = %d, want 3", q)
	}
}

func TestLegacyV1(t *testing.T) {
	srv := newServer(t, atlastest.Options{Legacy: true})
	c := newClient(t, srv, Config{})
	got, err := run(t, context.Background(), c, domainReqs(10), nil)
	if !errors.Is(err, schema.ErrLegacyV1) {
		t.Fatalf("FetchAll = %v, want schema.ErrLegacyV1", err)
	}
	if len(got) != 1 || !errors.Is(got[0].Err, schema.ErrLegacyV1) || got[0].Body != nil {
		t.Errorf("results %+v: want one result refused as legacy, no body", got)
	}
	if n := srv.Stats().Requests; n != 1 {
		t.Errorf("server saw %d requests, want 1: a legacy listing must cost one call", n)
	}
}

// lowerRateMidRun fetches 30 calls and has the server lower its limit to 3/s (setRate) once 15
// are answered; it fails unless all 30 succeed, and returns the client's rate after 2 answers.
func lowerRateMidRun(t *testing.T, c *Client, setRate func(int)) float64 {
	t.Helper()
	var mid float64
	got, err := run(t, context.Background(), c, domainReqs(30), func(n int, _ model.Result) {
		switch n {
		case 2:
			mid = c.Stats().RateLimit
		case 15:
			setRate(3)
		}
	})
	if err != nil {
		t.Fatalf("FetchAll: %v", err)
	}
	if countOK(got) != 30 {
		t.Fatalf("%d of 30 ok", countOK(got))
	}
	return mid
}

func TestRateLimitFollowsServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs at 3 requests/s")
	}
	srv := newServer(t, atlastest.Options{Rate: 20, LatencyMin: 20 * time.Millisecond, LatencyMax: 60 * time.Millisecond})
	c := newClient(t, srv, Config{RateLimit: 30})
	mid := lowerRateMidRun(t, c, srv.SetRate)
	if mid != 20 {
		t.Errorf("rate before the change = %v, want the server's 20 (config 30 is only a ceiling)", mid)
	}
	if got := c.Stats().RateLimit; got != 3 {
		t.Errorf("rate after the server lowered its limit = %v, want 3", got)
	}
	// How many answers met a 429 depends here on how late a loaded machine delivers the first
	// answer carrying the new limit (5 at load 31): the bound is the client's rule, held in fake
	// time by TestRateLimitFollowsServerInFakeTime.
	t.Logf("%d answers were 429 after the server lowered its limit", srv.Stats().ByStatus[http.StatusTooManyRequests])
	// Raising it again is followed, up to the configured ceiling.
	srv.SetRate(50)
	if r := c.Fetch(context.Background(), domainReqs(31)[30]); r.Err != nil {
		t.Fatalf("Fetch: %v", r.Err)
	}
	if got := c.Stats().RateLimit; got != 30 {
		t.Errorf("rate after the server raised its limit to 50 = %v, want the configured ceiling 30", got)
	}
}

func TestRejectedRequests(t *testing.T) {
	tests := []struct {
		name     string
		domain   string
		want     error
		wantCode string
	}{
		{"IPAddress", "192.168.0.1", model.ErrInvalidDomain, "INVALID_DOMAIN"},
		{"Markup", "<b>x</b>", model.ErrInvalidDomain, "INVALID_DOMAIN"},
		{"Empty", "", model.ErrMissingParameter, "MISSING_PARAMETER"},
	}
	srv := newServer(t, atlastest.Options{})
	c := newClient(t, srv, Config{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := srv.Stats().Requests
			r := c.Fetch(context.Background(), model.Request{Endpoint: schema.EndpointOverview, Domain: tt.domain})
			var e *model.Error
			if !errors.Is(r.Err, tt.want) || !errors.As(r.Err, &e) {
				t.Fatalf("Err = %v, want an *model.Error wrapping %v", r.Err, tt.want)
			}
			t.Logf("error: %v", r.Err)
			if e.Status != http.StatusBadRequest || e.Code != tt.wantCode || e.Message == "" {
				t.Errorf("got status %d code %q message %q, want 400 %s with a message", e.Status, e.Code, e.Message, tt.wantCode)
			}
			if r.Attempts != 1 || srv.Stats().Requests-before != 1 {
				t.Errorf("attempts %d; a 400 must never be retried", r.Attempts)
			}
			assertNoKey(t, "error", r.Err.Error())
		})
	}
	if err := c.Err(); err != nil {
		t.Errorf("a 400 stopped the client: %v", err)
	}
	if n := srv.Stats().Charged; n != 0 {
		t.Errorf("400s charged %d credits", n)
	}
}

func TestFatalAnswers(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(cfg *Config, srvURL string)
		want    error
		wantMsg string
	}{
		{"Unauthorized", func(cfg *Config, _ string) { cfg.APIKey = canary + "-revoked" }, model.ErrUnauthorized, "check ATLAS_API_KEY"},
		{"UnauthorizedXAPIKey", func(cfg *Config, _ string) { cfg.APIKey, cfg.UseXAPIKey = canary+"x", true }, model.ErrUnauthorized, "check ATLAS_API_KEY"},
		{"DoublePrefix", func(cfg *Config, u string) { cfg.BaseURL = u + "/atlas" }, model.ErrMisconfigured, "base_url or api.mode is likely wrong"},
		{"MarketplaceModeOnDirectGateway", func(cfg *Config, _ string) {
			cfg.Mode, cfg.MarketplaceHost, cfg.MarketplaceKey = ModeMarketplace, "x.example", canaryMarket
		}, model.ErrMisconfigured, "base_url or api.mode is likely wrong"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, atlastest.Options{})
			cfg := Config{BaseURL: srv.URL, APIKey: canary, Concurrency: 5}
			tt.mutate(&cfg, srv.URL)
			c := newClient(t, srv, cfg)
			got, err := run(t, context.Background(), c, domainReqs(10), nil)
			if tt.want == nil {
				// Whatever a gateway answers to a wrong mode, it must stop the run at once.
				if !model.IsStop(err) {
					t.Fatalf("FetchAll = %v, want a stop reason", err)
				}
			} else if !errors.Is(err, tt.want) {
				t.Fatalf("FetchAll = %v, want %v", err, tt.want)
			}
			t.Logf("stop error: %v", err)
			if tt.wantMsg != "" && !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q does not say %q", err, tt.wantMsg)
			}
			if len(got) != 1 || srv.Stats().Requests != 1 {
				t.Errorf("handed %d results, server saw %d requests; want 1 and 1", len(got), srv.Stats().Requests)
			}
		})
	}
}

func TestTimeouts(t *testing.T) {
	srv := newServer(t, atlastest.Options{Faults: atlastest.Faults{Hang: 3 * time.Second}})
	c := newClient(t, srv, Config{Timeout: 100 * time.Millisecond, MaxAttempts: 2})
	r := c.Fetch(context.Background(), domainReqs(1)[0])
	var e *model.Error
	if !errors.Is(r.Err, model.ErrServer) || !errors.As(r.Err, &e) {
		t.Fatalf("Err = %v, want an *model.Error wrapping model.ErrServer", r.Err)
	}
	t.Logf("error: %v", r.Err)
	if !strings.Contains(e.Message, "api.timeout") || r.Attempts != 2 {
		t.Errorf("got %q after %d attempts, want a time-out message after 2", e.Message, r.Attempts)
	}
	if got := c.Stats().Unanswered; got != 2 {
		t.Errorf("Unanswered = %d, want 2", got)
	}
	assertNoKey(t, "error", r.Err.Error())
}

func TestCancel(t *testing.T) {
	// The server hangs a minute (a request whose client left is dropped at once), so a
	// FetchAll that missed the cancellation would outlast the 20 s bound by far, while a slow
	// CI machine's prompt return stays well within it.
	srv := newServer(t, atlastest.Options{Faults: atlastest.Faults{Hang: time.Minute}})
	c := newClient(t, srv, Config{Concurrency: 4})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	got, err := run(t, ctx, c, domainReqs(10), nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("FetchAll = %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("FetchAll took %v to notice the cancellation", d)
	}
	for _, r := range got {
		if !errors.Is(r.Err, context.DeadlineExceeded) {
			t.Errorf("%s: Err = %v, want the context error", r.Domain, r.Err)
		}
	}
}

func TestBroken200(t *testing.T) {
	tests := []struct {
		name   string
		faults atlastest.Faults
		retry  bool // false: the body is usable, so keeping it saves a credit
	}{
		{"Reset", atlastest.Faults{Reset: 0.4}, true},
		{"Truncated", atlastest.Faults{Truncated: 0.4}, true},
		{"HTML200", atlastest.Faults{HTML200: 0.4}, true},
		{"WrongContentType", atlastest.Faults{WrongContentType: 0.4}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, atlastest.Options{Faults: tt.faults})
			// Each call may refetch a broken body once; the run's waste budget is not the
			// point here, so it is out of reach.
			c := newClient(t, srv, Config{MaxAttempts: 12, MaxWastedCredits: 1000})
			reqs := domainReqs(15)
			got, err := run(t, context.Background(), c, reqs, nil)
			if err != nil {
				t.Fatalf("FetchAll: %v", err)
			}
			if len(got) != len(reqs) {
				t.Fatalf("%d of %d handed over", len(got), len(reqs))
			}
			for _, r := range got {
				if r.Err != nil {
					// Broken twice: given up after its one refetch, both answers charged.
					if !errors.Is(r.Err, model.ErrServer) || r.Attempts != 2 || r.Charged != 2 {
						t.Errorf("%s: Err = %v after %d attempts, %d charged; want model.ErrServer after one refetch, 2 charged", r.Domain, r.Err, r.Attempts, r.Charged)
					}
					continue
				}
				if err := schema.Validate(r.Endpoint, r.Body); err != nil {
					t.Errorf("%s: handed over a broken body: %v", r.Domain, err)
				}
				if r.Overview == nil || int64(r.Attempts) != r.Charged {
					t.Errorf("%s: decoded %v, %d attempts, %d charged: want the decoded overview and one credit per attempt", r.Domain, r.Overview != nil, r.Attempts, r.Charged)
				}
			}
			if st := c.Stats(); st.Refetches > int64(len(reqs)) || st.Refetches != st.Retries {
				t.Errorf("refetches %d, retries %d for %d calls: want at most one refetch per call", st.Refetches, st.Retries, len(reqs))
			}
			st, ss := c.Stats(), srv.Stats()
			if tt.retry && st.Retries == 0 {
				t.Fatalf("no retries: the fault was not injected")
			}
			if !tt.retry && (st.Retries != 0 || ss.Broken == 0) {
				t.Fatalf("retries %d, broken answers %d: want a kept body and no retry", st.Retries, ss.Broken)
			}
			// Broken 200s are charged: the client's count must match the server's.
			if got, want := st.CreditsSpent, int64(ss.Charged); got != want {
				t.Errorf("CreditsSpent = %d, server charged %d", got, want)
			}
			if got, want := int64(ss.Charged), int64(len(reqs))+st.Retries; got != want {
				t.Errorf("server charged %d, want one per attempt (%d)", got, want)
			}
		})
	}
}

func TestRetryAfterParsing(t *testing.T) {
	c := &Client{cfg: Config{MaxRetryAfter: 10 * time.Second}, clock: RealClock{}}
	tests := []struct {
		name     string
		header   string
		min, max time.Duration
	}{
		{"Seconds", "2", 2 * time.Second, 2*time.Second + 420*time.Millisecond},
		{"HTTPDate", time.Now().Add(4 * time.Second).UTC().Format(http.TimeFormat), 2 * time.Second, 5 * time.Second},
		{"Missing", "", time.Second, 1220 * time.Millisecond},
		{"Garbage", "soon", time.Second, 1220 * time.Millisecond},
		{"Capped", "3600", 10 * time.Second, 12*time.Second + 20*time.Millisecond},
		{"PastDate", "Mon, 02 Jan 2006 15:04:05 GMT", 0, 20 * time.Millisecond},
		// Converted naively, 1e10 s overflows time.Duration into a pause of milliseconds.
		{"Huge", "1e10", 10 * time.Second, 12*time.Second + 20*time.Millisecond},
		{"HugeInteger", "99999999999", 10 * time.Second, 12*time.Second + 20*time.Millisecond},
		{"Infinite", "+Inf", 10 * time.Second, 12*time.Second + 20*time.Millisecond},
		{"Negative", "-5", 0, 20 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := c.retryAfter(tt.header)
			if got < tt.min || got > tt.max {
				t.Errorf("retryAfter(%q) = %v, want within [%v, %v]", tt.header, got, tt.min, tt.max)
			}
		})
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"NoBaseURL", Config{APIKey: canary}, "api.base_url"},
		{"NotHTTP", Config{BaseURL: "ftp://x", APIKey: canary}, "api.base_url"},
		{"NoKey", Config{BaseURL: "https://x"}, "ATLAS_API_KEY"},
		{"BadMode", Config{BaseURL: "https://x", APIKey: canary, Mode: "proxy"}, "api.mode"},
		{"MarketplaceNoHost", Config{BaseURL: "https://x", Mode: ModeMarketplace, MarketplaceKey: canaryMarket}, "marketplace_host"},
		{"MarketplaceNoKey", Config{BaseURL: "https://x", Mode: ModeMarketplace, MarketplaceHost: "h"}, "ATLAS_MARKETPLACE_KEY"},
		{"NegativeRate", Config{BaseURL: "https://x", APIKey: canary, RateLimit: -1}, "api.rate_limit"},
		{"UserinfoInURL", Config{BaseURL: "ftp://user:" + canary + "@x", APIKey: canary}, "api.base_url"},
		{"UserinfoInHTTPSURL", Config{BaseURL: "https://user:" + canary + "@x", APIKey: canary}, "must not carry credentials"},
		{"PlainHTTPToAnotherHost", Config{BaseURL: "http://gateway.example", APIKey: canary}, "api.allow_insecure_http"},
		{"KeyWithCR", Config{BaseURL: "https://x", APIKey: canary + "\r"}, "carriage return"},
		{"KeyWithSpace", Config{BaseURL: "https://x", APIKey: " " + canary}, "whitespace"},
		{"KeyWithControl", Config{BaseURL: "https://x", APIKey: "sk-canary\x00-3f9a1c7e5b2d"}, "control character"},
		{"MarketplaceKeyWithNewline", Config{BaseURL: "https://x", Mode: ModeMarketplace, MarketplaceHost: "h", MarketplaceKey: canaryMarket + "\n"}, "ATLAS_MARKETPLACE_KEY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			var ce *ConfigError
			if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.As(err, &ce) {
				t.Fatalf("New = %v, want a *ConfigError naming %s", err, tt.want)
			}
			t.Logf("error: %v", err)
			assertNoKey(t, "New error", err.Error())
		})
	}
}

func TestConfigPrintsNoKey(t *testing.T) {
	cfg := Config{BaseURL: "https://gw.example", APIKey: canary, MarketplaceKey: canaryMarket}
	var logs logBuffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("config", "cfg", cfg)
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), fmt.Sprintf("%v", &cfg), logs.String()} {
		assertNoKey(t, "printed config", s)
	}
}

func TestSchemaDriftIsNotRetried(t *testing.T) {
	srv := newServer(t, atlastest.Options{Faults: atlastest.Faults{Drift: 1}})
	c := newClient(t, srv, Config{MaxAttempts: 6})
	reqs := domainReqs(3)
	got, err := run(t, context.Background(), c, reqs, nil)
	if err != nil {
		t.Fatalf("FetchAll: %v", err)
	}
	for _, r := range got {
		if !errors.Is(r.Err, model.ErrSchemaDrift) {
			t.Errorf("%s: Err = %v, want model.ErrSchemaDrift", r.Domain, r.Err)
		}
	}
	if st := c.Stats(); st.Retries != 0 || st.CreditsSpent != int64(len(reqs)) {
		t.Errorf("retries %d, credits %d: a drifted body must cost one credit, not be refetched", st.Retries, st.CreditsSpent)
	}
}
