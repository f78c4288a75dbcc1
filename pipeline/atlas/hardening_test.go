package atlas

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/model"
	"sitewatch/schema"
)

// A server that always answers 200 with a broken body: each call refetches once, and the
// run stops when the waste budget is used up, within the bound MaxCredits reports. One call at
// a time sends exactly the budget's 3 refetches. Four at a time send at most 3: the stop comes
// when a refetch finds the 3 reserved, and a reserved refetch still waiting for its turn when
// the stop lands is never sent (its reservation is returned) — how many were sent by then is
// the scheduler's choice (1 of 3 was seen at load 15), so no lower bound holds there.
func TestBrokenBodiesRefetchedOnceWithinBudget(t *testing.T) {
	tests := []struct {
		name   string
		faults atlastest.Faults
	}{
		{"HTML200", atlastest.Faults{HTML200: 1}},
		{"Truncated", atlastest.Faults{Truncated: 1}},
		{"Reset", atlastest.Faults{Reset: 1}},
	}
	for _, tt := range tests {
		for _, concurrency := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s/concurrency=%d", tt.name, concurrency), func(t *testing.T) {
				brokenBodiesWithinBudget(t, tt.faults, concurrency)
			})
		}
	}
}

// brokenBodiesWithinBudget runs 20 calls, concurrency at a time, against a server whose every
// answer is broken by faults.
func brokenBodiesWithinBudget(t *testing.T, faults atlastest.Faults, concurrency int) {
	srv := newServer(t, atlastest.Options{Faults: faults})
	cfg := Config{MaxAttempts: 12, MaxWastedCredits: 3, Concurrency: concurrency, Clock: newFakeClock()}
	c := newClient(t, srv, cfg)
	reqs := domainReqs(20)
	got, err := run(t, context.Background(), c, reqs, nil)
	if !errors.Is(err, model.ErrWasteBudget) || !model.IsStop(err) {
		t.Fatalf("FetchAll = %v, want the model.ErrWasteBudget stop", err)
	}
	t.Logf("stop error: %v", err)
	ss, st := srv.Stats(), c.Stats()
	if concurrency == 1 && st.Refetches != 3 {
		t.Errorf("Refetches = %d one call at a time, want the budget's 3", st.Refetches)
	}
	if st.Refetches > 3 {
		t.Errorf("Refetches = %d, more than the budget of 3", st.Refetches)
	}
	var charged int64
	for _, r := range got {
		charged += r.Charged
		if r.Attempts > 2 {
			t.Errorf("%s: %d attempts: a broken charged body may be refetched once", r.Domain, r.Attempts)
		}
	}
	if int64(ss.Charged) != charged || st.CreditsSpent != charged || st.WastedCredits != charged {
		t.Errorf("server charged %d, results say %d, CreditsSpent %d, WastedCredits %d: want all equal",
			ss.Charged, charged, st.CreditsSpent, st.WastedCredits)
	}
	if most := MaxCredits(len(reqs), cfg); int(ss.Charged) > most {
		t.Errorf("charged %d, more than the bound MaxCredits = %d", ss.Charged, most)
	}
}

func TestMaxCreditsIsAnUpperBound(t *testing.T) {
	srv := newServer(t, atlastest.Options{Faults: atlastest.Faults{HTML200: 0.3, Truncated: 0.2, Reset: 0.1}, FailRate: 0.2})
	cfg := Config{MaxAttempts: 12, Concurrency: 6, Clock: newFakeClock()}
	c := newClient(t, srv, cfg)
	reqs := domainReqs(40)
	_, err := run(t, context.Background(), c, reqs, nil)
	if err != nil && !errors.Is(err, model.ErrWasteBudget) {
		t.Fatalf("FetchAll = %v", err)
	}
	if most, got := MaxCredits(len(reqs), cfg), int(srv.Stats().Charged); got > most || most != len(reqs)+DefaultMaxWastedCredits {
		t.Errorf("charged %d, MaxCredits %d: want charged within calls + the default waste budget (%d)", got, most, len(reqs)+DefaultMaxWastedCredits)
	}
	if got := MaxCredits(100, Config{MaxCreditsPerRun: 50}); got != 50 {
		t.Errorf("MaxCredits under a 50-credit cap = %d", got)
	}
}

// Issue 11: a charged answer refused afterwards is still counted, per result and in Stats.
func TestRefusedBodiesAreCharged(t *testing.T) {
	t.Run("Drift", func(t *testing.T) {
		srv := newServer(t, atlastest.Options{Faults: atlastest.Faults{Drift: 1}})
		c := newClient(t, srv, Config{})
		got, err := run(t, context.Background(), c, domainReqs(3), nil)
		if err != nil {
			t.Fatalf("FetchAll: %v", err)
		}
		for _, r := range got {
			if !errors.Is(r.Err, model.ErrSchemaDrift) || r.Charged != 1 || r.Body != nil || r.Overview != nil {
				t.Errorf("%s: Err %v, charged %d, body kept %v: want drift, 1 credit, nothing kept", r.Domain, r.Err, r.Charged, r.Body != nil)
			}
		}
		if st := c.Stats(); st.CreditsSpent != 3 || st.WastedCredits != 3 || st.Refetches != 0 {
			t.Errorf("Stats %+v: want 3 spent, 3 wasted, no refetch", st)
		}
	})
	t.Run("LegacyV1", func(t *testing.T) {
		srv := newServer(t, atlastest.Options{Legacy: true})
		c := newClient(t, srv, Config{})
		got, _ := run(t, context.Background(), c, domainReqs(3), nil)
		if len(got) != 1 || got[0].Charged != 1 {
			t.Fatalf("results %+v: want one legacy result charged 1", got)
		}
		if st := c.Stats(); st.CreditsSpent != int64(srv.Stats().Charged) || st.CreditsSpent != 1 {
			t.Errorf("CreditsSpent %d, server charged %d: a legacy body is charged", st.CreditsSpent, srv.Stats().Charged)
		}
	})
}

// balanceServer answers every call 200 with body, charging cost from a wallet of credits,
// and reports the balance header as balance(remaining).
func balanceServer(t *testing.T, body []byte, credits, cost int64, balance func(int64) string) (*atomicCounter, string) {
	calls := &atomicCounter{}
	var mu sync.Mutex
	srv := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		calls.add()
		mu.Lock()
		credits -= cost
		left := credits
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Gateway-Credit-Cost", strconv.FormatInt(cost, 10))
		if b := balance(left); b != "" {
			w.Header().Set("X-Gateway-Remaining-Credits", b)
		}
		w.Header().Set("X-RateLimit-Limit", "50")
		w.Write(body)
	})
	return calls, srv.URL
}

type atomicCounter struct{ n atomic.Int64 }

func (a *atomicCounter) add()         { a.n.Add(1) }
func (a *atomicCounter) value() int64 { return a.n.Load() }

func TestReserveFailsClosed(t *testing.T) {
	body := goodBody(t, schema.EndpointOverview)
	for _, junk := range []string{"", "lots", "NaN", "1e999", "+Inf"} {
		t.Run(fmt.Sprintf("Balance%q", junk), func(t *testing.T) {
			calls, u := balanceServer(t, body, 1000, 1, func(int64) string { return junk })
			c := newClient(t, nil, Config{BaseURL: u, MinCredits: 995, Concurrency: 8})
			_, err := run(t, context.Background(), c, domainReqs(20), nil)
			if !errors.Is(err, model.ErrBalanceUnknown) || !model.IsStop(err) {
				t.Fatalf("FetchAll = %v, want the model.ErrBalanceUnknown stop", err)
			}
			t.Logf("stop error: %v", err)
			if n := calls.value(); n != 1 {
				t.Errorf("%d calls made without a readable balance, want 1", n)
			}
		})
	}
	t.Run("NoReserveRunsOn", func(t *testing.T) {
		calls, u := balanceServer(t, body, 1000, 1, func(int64) string { return "lots" })
		c := newClient(t, nil, Config{BaseURL: u, Concurrency: 8})
		if _, err := run(t, context.Background(), c, domainReqs(5), nil); err != nil || calls.value() != 5 {
			t.Fatalf("FetchAll = %v after %d calls; without a reserve an unreadable balance does not stop the run", err, calls.value())
		}
	})
}

// A call that costs 3 credits counts as 3 for the reserve and for the cap.
func TestCreditCostAboveOne(t *testing.T) {
	body := goodBody(t, schema.EndpointOverview)
	t.Run("Cap", func(t *testing.T) {
		calls, u := balanceServer(t, body, 1000, 3, func(n int64) string { return strconv.FormatInt(n, 10) })
		c := newClient(t, nil, Config{BaseURL: u, MaxCreditsPerRun: 10, Concurrency: 8})
		_, err := run(t, context.Background(), c, domainReqs(20), nil)
		if !errors.Is(err, model.ErrRunBudget) {
			t.Fatalf("FetchAll = %v, want model.ErrRunBudget", err)
		}
		if spent := c.Stats().CreditsSpent; spent > 10 || calls.value() != 3 {
			t.Errorf("%d calls spent %d credits under a cap of 10, want 3 calls and 9 credits", calls.value(), spent)
		}
	})
	t.Run("Reserve", func(t *testing.T) {
		calls, u := balanceServer(t, body, 30, 3, func(n int64) string { return strconv.FormatInt(n, 10) })
		c := newClient(t, nil, Config{BaseURL: u, MinCredits: 20, Concurrency: 8})
		_, err := run(t, context.Background(), c, domainReqs(20), nil)
		if !errors.Is(err, model.ErrCreditReserve) {
			t.Fatalf("FetchAll = %v, want model.ErrCreditReserve", err)
		}
		if left := c.Stats().CreditsRemaining; left < 20 || calls.value() != 3 {
			t.Errorf("%d calls left %d credits under a reserve of 20, want 3 calls leaving 21", calls.value(), left)
		}
	})
}

func TestRetryAfterOn503(t *testing.T) {
	var calls atomic.Int64
	body := goodBody(t, schema.EndpointOverview)
	srv := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Gateway-Remaining-Credits", "100")
		w.Write(body)
	})
	clock := newFakeClock()
	c := newClient(t, nil, Config{BaseURL: srv.URL, Clock: clock})
	r := c.Fetch(context.Background(), domainReqs(1)[0])
	if r.Err != nil || r.Attempts != 2 {
		t.Fatalf("Fetch: %v after %d attempts, want success on the second", r.Err, r.Attempts)
	}
	if waited := clock.Since(); waited < 7*time.Second {
		t.Errorf("retried after %v, before the 503's Retry-After of 7s", waited)
	}
}

// Permanent 429s: the run waits at most MaxRateLimitWait in all, then stops as resumable.
func TestRateLimitWaitIsBounded(t *testing.T) {
	srv := newServer(t, atlastest.Options{Faults: atlastest.Faults{RateLimited: 1, RetryAfter: 2 * time.Minute}})
	clock := newFakeClock()
	c := newClient(t, srv, Config{MaxRateLimitWait: 10 * time.Minute, MaxRateLimited: 1000, Concurrency: 4, Clock: clock})
	start := time.Now()
	_, err := run(t, context.Background(), c, domainReqs(10), nil)
	if !errors.Is(err, model.ErrRateLimitWait) || !model.IsStop(err) {
		t.Fatalf("FetchAll = %v, want the model.ErrRateLimitWait stop", err)
	}
	t.Logf("stop error: %v", err)
	st := c.Stats()
	if st.RateLimitWaited > 10*time.Minute || st.RateLimitWaited < 8*time.Minute {
		t.Errorf("RateLimitWaited = %v, want close to but within the 10m bound", st.RateLimitWaited)
	}
	if d := time.Since(start); d > 60*time.Second { // on the real clock the waits would take 10 minutes
		t.Errorf("took %v of real time on a fake clock", d)
	}
	if srv.Stats().Charged != 0 {
		t.Errorf("429s charged %d", srv.Stats().Charged)
	}
}

// TestServerRateLimitBelowFloor: a server limit below model.MinServerRateLimit (here 1e-6
// calls/s, one every 11 days) stops the client after the one call that told it, instead of
// pacing the rest to it. Counted (one call) and told by the stop error; the time is only
// guarded against a hang (a minute): paced at 1e-6/s, FetchAll would not return for days.
func TestServerRateLimitBelowFloor(t *testing.T) {
	body := goodBody(t, schema.EndpointOverview)
	var calls atomic.Int64
	srv := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Gateway-Remaining-Credits", "100")
		w.Header().Set("X-RateLimit-Limit", "1e-6")
		w.Write(body)
	})
	c := newClient(t, nil, Config{BaseURL: srv.URL, Concurrency: 4})
	done := make(chan error, 1)
	go func() {
		_, err := run(t, context.Background(), c, domainReqs(5), nil)
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute): // a hang guard, not a bound
		t.Fatalf("FetchAll still running a minute after its start (%d calls): paced to the server's 1e-6/s instead of stopped", calls.Load())
	}
	if !errors.Is(err, model.ErrServerRateLimit) || !model.IsStop(err) {
		t.Fatalf("FetchAll = %v, want model.ErrServerRateLimit", err)
	}
	t.Logf("stop error: %v", err)
	if n := calls.Load(); n != 1 {
		t.Errorf("%d calls; want the one that told the limit", n)
	}
}

// stopWaits are the waits a stop must wake, each 20 s or more: the rate limiter's (0.05
// calls/s), a 429 pause (Retry-After 100 s), a backoff (a minute, ±50 %).
var stopWaits = []struct {
	name string
	opts atlastest.Options
	cfg  Config
}{
	{"RateLimiter", atlastest.Options{}, Config{RateLimit: 0.05, Concurrency: 4}},
	{"RateLimitPause", atlastest.Options{Faults: atlastest.Faults{RateLimited: 1, RetryAfter: 100 * time.Second}},
		Config{MaxRetryAfter: 200 * time.Second, Concurrency: 4}},
	{"Backoff", atlastest.Options{FailRate: 1}, Config{RetryInitial: time.Minute, RetryMax: time.Minute, Concurrency: 4}},
}

// stillClock is a client clock on which no wait ever ends (After never fires): only a stop
// can end the client's waits.
type stillClock struct{}

func (stillClock) Now() time.Time                       { return time.Now() }
func (stillClock) After(time.Duration) <-chan time.Time { return nil }

// A stop wakes every wait: the rate limiter's, a long 429 pause, a backoff (stopWaits). On
// loopback the client waits on a clock on which no wait ends by itself, so a wait the stop
// did not wake never ends: the guard is a hang's (a minute), not a bound a loaded machine
// may stretch while the calls in flight finish. That the stop wakes them at once is
// TestStopWakesEveryWaitInFakeTime's.
func TestStopWakesEveryWait(t *testing.T) {
	for _, tt := range stopWaits {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, tt.opts)
			cfg := tt.cfg
			cfg.BaseURL, cfg.APIKey, cfg.Clock = srv.URL, canary, stillClock{}
			c, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- c.FetchAll(context.Background(), domainReqs(10), func(model.Result) {}) }()
			time.Sleep(300 * time.Millisecond)
			stopped := time.Now()
			reason := errors.New("signal: terminated")
			c.Stop(reason)
			select {
			case err := <-done:
				if !errors.Is(err, reason) {
					t.Errorf("FetchAll = %v, want the stop reason", err)
				}
				t.Logf("FetchAll returned %v after the stop", time.Since(stopped).Round(time.Millisecond))
			case <-time.After(time.Minute): // a hang guard: on stillClock an unwoken wait never ends
				t.Fatal("FetchAll still waiting a minute after Stop")
			}
			if srv.Stats().Requests == 0 {
				t.Error("no request reached the server: the test did not test a wait after one")
			}
		})
	}
}

// TestStopWakesEveryWaitInFakeTime: in fake time (testing/synctest, the simulator called in
// memory, so no call is in flight at the stop), a stop 300 ms after the start ends FetchAll
// exactly then, whichever of stopWaits it waits in; an unwoken wait would end 20 s or more
// later.
func TestStopWakesEveryWaitInFakeTime(t *testing.T) {
	for _, tt := range stopWaits {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				opts := tt.opts
				opts.Keys, opts.Rate = map[string]int64{canary: 1000}, 50
				sim, err := atlastest.NewHandler(opts)
				if err != nil {
					t.Fatal(err)
				}
				cfg := tt.cfg
				cfg.BaseURL, cfg.APIKey, cfg.HTTPClient = "http://127.0.0.1:1", canary, &http.Client{Transport: atlastest.Transport{Handler: sim}}
				c, err := New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				const stopAt = 300 * time.Millisecond
				reason := errors.New("signal: terminated")
				time.AfterFunc(stopAt, func() { c.Stop(reason) })
				start := time.Now()
				err = c.FetchAll(context.Background(), domainReqs(10), func(model.Result) {})
				if !errors.Is(err, reason) {
					t.Errorf("FetchAll = %v, want the stop reason", err)
				}
				if took := time.Since(start); took != stopAt {
					t.Errorf("FetchAll ended %v after the start, want at the stop (%v)", took, stopAt)
				}
				if sim.Stats().Requests == 0 {
					t.Error("no request reached the simulator: the test did not test a wait after one")
				}
			})
		})
	}
}

// Servers that reflect the key in every place a client prints: nothing of it leaves.
func TestReflectedKeyNeverLeaves(t *testing.T) {
	auth := "Bearer " + canary
	forms := map[string]string{
		"plain":       canary,
		"query":       url.QueryEscape(canary + "/x"),
		"lowerhex":    strings.ToLower(url.QueryEscape(auth)),
		"base64auth":  base64.StdEncoding.EncodeToString([]byte(auth)),
		"base64url":   base64.RawURLEncoding.EncodeToString([]byte(canary)),
		"bearerquery": url.QueryEscape(auth),
	}
	body := goodBody(t, schema.EndpointOverview)
	for name, form := range forms {
		cases := []struct {
			name string
			h    http.HandlerFunc
			want error
		}{
			{"ContentType", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", `text/html; key="`+form+`"`)
				w.Write([]byte("<html>oops</html>"))
			}, model.ErrServer},
			{"ErrorBody", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprintf(w, `{"error":"BAD_%s","message":"your key %s is odd"}`, form, form)
			}, model.ErrBadRequest},
			{"Location", func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "https://elsewhere.example/?k="+form, http.StatusFound)
			}, model.ErrMisconfigured},
			{"Body200", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("X-Gateway-Remaining-Credits", "100")
				w.Write(bytes.Replace(body, []byte(`"success"`), []byte(`"success","echo":"`+form+`"`), 1))
			}, model.ErrSecretInBody},
		}
		for _, tc := range cases {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				srv := hostile(t, tc.h)
				c := newClient(t, nil, Config{BaseURL: srv.URL, MaxAttempts: 2})
				r := c.Fetch(context.Background(), domainReqs(1)[0])
				if !errors.Is(r.Err, tc.want) {
					t.Fatalf("Err = %v, want %v", r.Err, tc.want)
				}
				assertNoKey(t, "error", r.Err.Error())
				assertNoKey(t, "error fields", fmt.Sprintf("%+v", r.Err))
				if r.Body != nil || r.Overview != nil {
					t.Errorf("a body reflecting the key was handed over")
				}
				if tc.want == model.ErrSecretInBody {
					var e *model.Error
					if !errors.As(r.Err, &e) || e.Code != "SECRET_IN_BODY" || r.Charged != 1 || r.Attempts != 1 {
						t.Errorf("Err %+v, charged %d, attempts %d: want SECRET_IN_BODY, charged 1, not refetched", r.Err, r.Charged, r.Attempts)
					}
				}
			})
		}
	}
}

// A caller's http.Client that follows redirects must not carry the key to another host.
func TestNoRedirectWhateverTheHTTPClient(t *testing.T) {
	var leaked atomic.Int64
	target := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" || r.Header.Get("X-API-Key") != "" || r.Header.Get("X-Marketplace-Key") != "" {
			leaked.Add(1)
		}
		w.WriteHeader(http.StatusOK)
	})
	src := hostile(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/atlas/website?url=x", http.StatusTemporaryRedirect)
	})
	follow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return nil }}
	for _, cfg := range []Config{
		{BaseURL: src.URL, HTTPClient: follow},
		{BaseURL: src.URL, HTTPClient: follow, UseXAPIKey: true},
		{BaseURL: src.URL, HTTPClient: follow, Mode: ModeMarketplace, MarketplaceHost: "h", MarketplaceKey: canaryMarket},
	} {
		c := newClient(t, nil, cfg)
		r := c.Fetch(context.Background(), domainReqs(1)[0])
		if !errors.Is(r.Err, model.ErrMisconfigured) {
			t.Errorf("Err = %v, want model.ErrMisconfigured for a redirect", r.Err)
		}
	}
	if n := leaked.Load(); n != 0 {
		t.Errorf("the redirect target received the key %d times", n)
	}
	if follow.CheckRedirect == nil {
		t.Errorf("the caller's http.Client was modified")
	}
}

func TestBodyCaps(t *testing.T) {
	body := goodBody(t, schema.EndpointOverview)
	padded := func(n int) []byte { return append(bytes.Clone(body), bytes.Repeat([]byte(" "), n)...) }
	t.Run("OverTheCap", func(t *testing.T) {
		for _, chunked := range []bool{false, true} {
			big := padded(2 << 20)
			srv := hostile(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("X-Gateway-Remaining-Credits", "100")
				if !chunked {
					w.Header().Set("Content-Length", strconv.Itoa(len(big)))
				}
				w.Write(big)
			})
			c := newClient(t, nil, Config{BaseURL: srv.URL, MaxBodyBytes: 1 << 20})
			r := c.Fetch(context.Background(), domainReqs(1)[0])
			if !errors.Is(r.Err, model.ErrBodyTooLarge) || r.Attempts != 1 || r.Charged != 1 {
				t.Errorf("chunked %v: Err %v after %d attempts, charged %d; want model.ErrBodyTooLarge, 1 attempt, charged", chunked, r.Err, r.Attempts, r.Charged)
			}
			if c.heldBytes != 0 {
				t.Errorf("chunked %v: %d bytes still held", chunked, c.heldBytes)
			}
		}
	})
	t.Run("InFlightBudget", func(t *testing.T) {
		big := padded(600 << 10)
		var chunked atomic.Int64
		var peak, held atomic.Int64
		srv := hostile(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Gateway-Remaining-Credits", "100000")
			if chunked.Add(1)%2 == 0 {
				w.Header().Set("Content-Length", strconv.Itoa(len(big)))
			}
			w.Write(big[:len(big)/2])
			w.(http.Flusher).Flush()
			time.Sleep(20 * time.Millisecond)
			w.Write(big[len(big)/2:])
		})
		const budget = 2 << 20
		c := newClient(t, nil, Config{BaseURL: srv.URL, MaxBodyBytes: 1 << 20, MaxInflightBytes: budget, Concurrency: 12, RateLimit: 1000})
		err := c.FetchAll(context.Background(), domainReqs(24), func(r model.Result) {
			if r.Err != nil {
				t.Errorf("%s: %v", r.Domain, r.Err)
			}
			c.mu.Lock()
			held.Store(c.heldBytes)
			c.mu.Unlock()
			peak.Store(max(peak.Load(), held.Load()))
		})
		if err != nil {
			t.Fatalf("FetchAll: %v", err)
		}
		if p := c.peakHeld; p > budget || p < int64(len(big)) {
			t.Errorf("peak bytes held %d, want between one body (%d) and the budget %d", p, len(big), budget)
		}
		if c.heldBytes != 0 {
			t.Errorf("%d bytes still held after the run", c.heldBytes)
		}
	})
}

// TestUnreachableOnFirstCall: when nothing answers at api.base_url on the first call (no such
// host, nothing listening, no TLS there), FetchAll stops with an *UnreachableError naming the
// stage after one attempt, not retried, and Probe says the same. "At once" is that one
// attempt, counted, not timed: a loaded machine (or a slow resolver) may stretch the failure
// itself. The attempt's time-out is a minute, so a stop that waited it out, not the failure,
// is told apart from any load.
func TestUnreachableOnFirstCall(t *testing.T) {
	plain := hostile(t, func(w http.ResponseWriter, r *http.Request) {})
	tests := []struct {
		name    string
		baseURL string
		stage   string
	}{
		{"ConnectionRefused", "http://" + closedPort(t), StageTCP},
		{"NotTLS", "https://" + strings.TrimPrefix(plain.URL, "http://"), StageTLS},
		{"NoSuchHost", "https://no-such-host.invalid", StageDNS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const timeout = time.Minute
			c := newClient(t, nil, Config{BaseURL: tt.baseURL, MaxAttempts: 6, Timeout: timeout, Clock: newFakeClock()})
			start := time.Now()
			got, err := run(t, context.Background(), c, domainReqs(5), nil)
			var ue *UnreachableError
			if !errors.As(err, &ue) || !errors.Is(err, model.ErrUnreachable) || !model.IsStop(err) {
				t.Fatalf("FetchAll = %v, want an *UnreachableError stop", err)
			}
			t.Logf("stop error: %v", err)
			if ue.Stage != tt.stage || !strings.Contains(err.Error(), "api.base_url") || strings.Contains(err.Error(), "\n") {
				t.Errorf("stage %q, message %q: want stage %q and one line naming api.base_url", ue.Stage, err, tt.stage)
			}
			if len(got) != 1 || got[0].Attempts != 1 {
				t.Errorf("%d results, first with %d attempts: want one attempt in all", len(got), got[0].Attempts)
			}
			if d := time.Since(start); d >= timeout {
				t.Errorf("took %v to give up: it waited out the attempt's time-out (%v), not the failure", d, timeout)
			} else {
				t.Logf("gave up after %v", d.Round(time.Millisecond))
			}
			if _, err := c.Probe(context.Background()); !errors.As(err, &ue) || ue.Stage != tt.stage {
				t.Errorf("Probe = %v, want an *UnreachableError at stage %s", err, tt.stage)
			}
		})
	}
}

// After the first answer, a refused connection is a passing outage: retried, not a stop.
func TestRefusedAfterFirstAnswerIsRetried(t *testing.T) {
	srv := newServer(t, atlastest.Options{})
	c := newClient(t, srv, Config{MaxAttempts: 3, Clock: newFakeClock()})
	if r := c.Fetch(context.Background(), domainReqs(1)[0]); r.Err != nil {
		t.Fatal(r.Err)
	}
	srv.Close()
	r := c.Fetch(context.Background(), domainReqs(2)[1])
	if !errors.Is(r.Err, model.ErrServer) || r.Attempts != 3 || c.Err() != nil {
		t.Errorf("Err %v after %d attempts, client stop %v: want model.ErrServer after 3 attempts and no stop", r.Err, r.Attempts, c.Err())
	}
	if st := c.Stats(); st.Unanswered != 0 || st.Refetches != 0 {
		t.Errorf("Unanswered %d, Refetches %d: a refused connection was never sent, so cannot be charged", st.Unanswered, st.Refetches)
	}
}

func TestRetryWarningsNameTheAttempt(t *testing.T) {
	srv := newServer(t, atlastest.Options{FailRate: 1})
	logs := &logBuffer{}
	c, err := New(Config{BaseURL: srv.URL, APIKey: canary, MaxAttempts: 3, Clock: newFakeClock(),
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	c.Fetch(context.Background(), domainReqs(1)[0])
	for _, want := range []string{"attempt 2 of 3", "attempt 3 of 3"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs do not say %q:\n%s", want, logs)
		}
	}
}

func TestProbe(t *testing.T) {
	t.Run("Ready", func(t *testing.T) {
		srv := newServer(t, atlastest.Options{Rate: 7})
		c := newClient(t, srv, Config{})
		p, err := c.Probe(context.Background())
		if err != nil {
			t.Fatalf("Probe: %v", err)
		}
		if p.Balance != srv.Credits(canary) || p.RateLimit != 7 || p.Status != http.StatusBadRequest || p.Latency <= 0 {
			t.Errorf("Probe = %+v, want balance %d, rate 7, status 400", p, srv.Credits(canary))
		}
		if ss := srv.Stats(); ss.Charged != 0 || ss.Requests != 1 {
			t.Errorf("server charged %d for %d requests: the probe is free", ss.Charged, ss.Requests)
		}
	})
	t.Run("Marketplace", func(t *testing.T) {
		const host = "atlas.marketplace.example"
		srv := newServer(t, atlastest.Options{MarketplaceHost: host, MarketplaceKey: canaryMarket, MarketplaceQuota: 500})
		c := newClient(t, srv, Config{Mode: ModeMarketplace, MarketplaceHost: host, MarketplaceKey: canaryMarket})
		p, err := c.Probe(context.Background())
		if err != nil {
			t.Fatalf("Probe: %v", err)
		}
		if p.QuotaLimit != 500 || p.QuotaRemaining != 500 || p.QuotaReset.IsZero() {
			t.Errorf("Probe = %+v, want quota 500 of 500 and a reset time", p)
		}
		if srv.Stats().Charged != 0 {
			t.Errorf("the probe was charged")
		}
	})
	// A listing whose monthly quota is used up answers every request 429 with 0 remaining, the
	// free probe too: out of credits (a run's plan gives the source no call, the next one pays),
	// not a rate limit that a wait or a lower api.rate_limit would cure.
	t.Run("MarketplaceQuotaUsedUp", func(t *testing.T) {
		const host = "atlas.marketplace.example"
		srv := newServer(t, atlastest.Options{MarketplaceHost: host, MarketplaceKey: canaryMarket, MarketplaceQuota: 2})
		c := newClient(t, srv, Config{Mode: ModeMarketplace, MarketplaceHost: host, MarketplaceKey: canaryMarket})
		if _, err := run(t, context.Background(), c, domainReqs(2), nil); err != nil {
			t.Fatalf("FetchAll of the quota's 2 calls: %v", err)
		}
		p, err := c.Probe(context.Background())
		if !errors.Is(err, model.ErrOutOfCredits) || errors.Is(err, model.ErrRateLimited) || p.QuotaRemaining != 0 || p.Status != http.StatusTooManyRequests {
			t.Errorf("Probe = %+v, %v: want model.ErrOutOfCredits with 0 quota remaining", p, err)
		}
		if err != nil && !strings.Contains(err.Error(), "quota exhausted") {
			t.Errorf("Probe error %q does not say the quota is used up", err)
		}
	})
	t.Run("Unauthorized", func(t *testing.T) {
		srv := newServer(t, atlastest.Options{})
		c := newClient(t, srv, Config{APIKey: canary + "-revoked"})
		if _, err := c.Probe(context.Background()); !errors.Is(err, model.ErrUnauthorized) {
			t.Errorf("Probe = %v, want model.ErrUnauthorized", err)
		}
	})
	t.Run("OutOfCredits", func(t *testing.T) {
		srv := newServer(t, atlastest.Options{Keys: map[string]int64{canary: 0}})
		c := newClient(t, srv, Config{})
		p, err := c.Probe(context.Background())
		var e *model.Error
		if !errors.Is(err, model.ErrOutOfCredits) || !errors.As(err, &e) || e.RemainingBalance == nil || p.Balance != 0 {
			t.Errorf("Probe = %+v, %v: want model.ErrOutOfCredits with balance 0", p, err)
		}
	})
	t.Run("WrongMode", func(t *testing.T) {
		srv := newServer(t, atlastest.Options{})
		c := newClient(t, srv, Config{BaseURL: srv.URL + "/atlas"})
		if _, err := c.Probe(context.Background()); !errors.Is(err, model.ErrMisconfigured) {
			t.Errorf("Probe = %v, want model.ErrMisconfigured", err)
		}
	})
}

// The client-level form of cmd/sitewatch's TestDriftFaultNeverRetried, deterministic:
// every answer drifts, so the check cannot pass by drawing no fault.
func TestDriftNeverRefetched(t *testing.T) {
	srv := newServer(t, atlastest.Options{Faults: atlastest.Faults{Drift: 1}})
	c := newClient(t, srv, Config{MaxWastedCredits: 1, Concurrency: 4})
	reqs := append(domainReqs(6), model.Request{Endpoint: schema.EndpointCountries})
	got, err := run(t, context.Background(), c, reqs, nil)
	if err != nil {
		t.Fatalf("FetchAll = %v: drift is per request, and never spends the refetch budget", err)
	}
	ss := srv.Stats()
	if ss.Broken != len(reqs) || len(got) != len(reqs) {
		t.Fatalf("%d drifted answers, %d results; want %d of each", ss.Broken, len(got), len(reqs))
	}
	for f, n := range ss.Fetches {
		if n > 1 {
			t.Errorf("%s %q charged %d times: a drifted body was refetched", f.Endpoint, f.Domain, n)
		}
	}
}
