package sources

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"sitewatch/pipeline/atlas"
	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/model"
	"sitewatch/schema"
)

const (
	keyA, keyB  = "key-a-0123456789", "key-b-0123456789"
	listingHost = "intel.example"
	listingKey  = "listing-0123456789"
)

func newSim(t *testing.T, opts atlastest.Options) *atlastest.Server {
	t.Helper()
	opts.Month = "2026-11"
	if opts.Rate == 0 {
		opts.Rate = 200
	}
	srv := atlastest.NewServer(opts)
	t.Cleanup(srv.Close)
	return srv
}

func newSource(t *testing.T, name string, room int64, cfg atlas.Config) *Source {
	t.Helper()
	if cfg.RateLimit == 0 {
		cfg.RateLimit = 200
	}
	c, err := atlas.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &Source{Name: name, Client: c, Room: room}
}

func requests(n int) []model.Request {
	reqs := make([]model.Request, n)
	for i := range reqs {
		reqs[i] = model.Request{Endpoint: schema.EndpointOverview, Domain: fmt.Sprintf("site%03d.example.com", i)}
	}
	return reqs
}

// fetchAll runs m.FetchAll and returns the calls each source paid for, checking that every
// call succeeded once and handle was never called concurrently.
func fetchAll(t *testing.T, m *Multi, reqs []model.Request, onResult ...func(model.Result)) (map[string]int, error) {
	t.Helper()
	var inHandle atomic.Int32
	paid, seen := map[string]int{}, map[model.Request]bool{}
	err := m.FetchAll(context.Background(), reqs, func(res model.Result) {
		if inHandle.Add(1) > 1 {
			t.Error("handle called concurrently")
		}
		defer inHandle.Add(-1)
		if res.Err != nil {
			t.Errorf("%s via %s: %v", res.Domain, res.Source, res.Err)
			return
		}
		if seen[res.Request] {
			t.Errorf("%s handed over twice", res.Domain)
		}
		seen[res.Request] = true
		paid[res.Source] += int(res.Charged)
		for _, f := range onResult {
			f(res)
		}
	})
	if err == nil && len(seen) != len(reqs) {
		t.Errorf("%d of %d calls handed over", len(seen), len(reqs))
	}
	return paid, err
}

func assertNoDoubleFetch(t *testing.T, srv *atlastest.Server) {
	t.Helper()
	for f, n := range srv.Stats().Fetches {
		if n > 1 {
			t.Errorf("%s %s paid %d times", f.Endpoint, f.Domain, n)
		}
	}
}

// The marketplace quota pays first, up to its room; direct credits pay the rest; both work at once.
func TestMultiSpendsInOrder(t *testing.T) {
	srv := newSim(t, atlastest.Options{Keys: map[string]int64{keyA: 100}, MarketplaceHost: listingHost, MarketplaceKey: listingKey, MarketplaceQuota: 5})
	market := newSource(t, "marketplace", 5, atlas.Config{BaseURL: srv.URL, Mode: atlas.ModeMarketplace, MarketplaceHost: listingHost, MarketplaceKey: listingKey})
	direct := newSource(t, "direct", 100, atlas.Config{BaseURL: srv.URL, APIKey: keyA})
	paid, err := fetchAll(t, NewMulti([]*Source{market, direct}), requests(12))
	if err != nil {
		t.Fatalf("FetchAll: %v", err)
	}
	if paid["marketplace"] != 5 || paid["direct"] != 7 {
		t.Errorf("paid %v, want marketplace 5 (its whole quota) and direct 7", paid)
	}
	if got := srv.MarketplaceRemaining(); got != 0 {
		t.Errorf("quota left %d, want 0", got)
	}
	assertNoDoubleFetch(t, srv)
}

// A source that answers 402 mid-run (its wallet spent elsewhere after the plan) hands its
// remaining calls to the next source; nothing is paid twice.
func TestMulti402HandsOver(t *testing.T) {
	srv := newSim(t, atlastest.Options{Keys: map[string]int64{keyA: 100, keyB: 100}})
	a := newSource(t, "a", 10, atlas.Config{BaseURL: srv.URL, APIKey: keyA, Concurrency: 1})
	b := newSource(t, "b", 100, atlas.Config{BaseURL: srv.URL, APIKey: keyB})
	var fromA int
	paid, err := fetchAll(t, NewMulti([]*Source{a, b}), requests(10), func(res model.Result) {
		if res.Source == "a" {
			if fromA++; fromA == 3 {
				srv.SetCredits(keyA, 0) // spent elsewhere: the plan counted 10, a's next call meets a 402
			}
		}
	})
	if err != nil {
		t.Fatalf("FetchAll: %v (b could pay for everything a could not)", err)
	}
	// a's fourth call may have started before its third result emptied the wallet.
	if paid["a"] < 3 || paid["a"] > 4 || paid["a"]+paid["b"] != 10 {
		t.Errorf("paid %v, want a 3 or 4 (then 402) and b the rest of 10", paid)
	}
	if srv.Stats().ByStatus[402] == 0 {
		t.Error("a never met its 402: the test did not test the hand-over")
	}
	assertNoDoubleFetch(t, srv)
}

// Every source exhausted: the fetch stops for credits (exit 3) with the calls nobody paid
// for left undone, and a later FetchAll does not call at all.
func TestMultiAllExhausted(t *testing.T) {
	srv := newSim(t, atlastest.Options{Keys: map[string]int64{keyA: 2, keyB: 3}})
	a := newSource(t, "a", 2, atlas.Config{BaseURL: srv.URL, APIKey: keyA})
	b := newSource(t, "b", 3, atlas.Config{BaseURL: srv.URL, APIKey: keyB})
	m := NewMulti([]*Source{a, b})
	paid, err := fetchAll(t, m, requests(8))
	if !IsHandoff(err) {
		t.Fatalf("FetchAll = %v, want a credit stop", err)
	}
	if paid["a"] != 2 || paid["b"] != 3 {
		t.Errorf("paid %v, want a 2 and b 3", paid)
	}
	before := srv.Stats().Requests
	if err := m.FetchAll(context.Background(), requests(1), func(model.Result) {}); !IsHandoff(err) {
		t.Errorf("second FetchAll = %v, want the credit stop", err)
	}
	if got := srv.Stats().Requests; got != before {
		t.Errorf("%d requests after every source stopped", got-before)
	}
	assertNoDoubleFetch(t, srv)
}

// A Stop stops every source and FetchAll returns its reason; the calls the stop left unsent
// are never sent (the 100 calls take 10 s or more at 5/s a source). That it stops them at once,
// not when the calls already handed to each source's workers have had their turn at its rate
// limiter (3.3 s later), is TestMultiStopInFakeTime's: a loaded machine stretches the real
// clock, so here the time is only guarded against a hang, at ten times the 3 s the test once
// held it to.
func TestMultiStop(t *testing.T) {
	srv := newSim(t, atlastest.Options{Keys: map[string]int64{keyA: 1000, keyB: 1000}, Rate: 5})
	a := newSource(t, "a", -1, atlas.Config{BaseURL: srv.URL, APIKey: keyA, RateLimit: 5})
	b := newSource(t, "b", -1, atlas.Config{BaseURL: srv.URL, APIKey: keyB, RateLimit: 5})
	m := NewMulti([]*Source{a, b})
	reason := fmt.Errorf("signal: interrupt")
	time.AfterFunc(300*time.Millisecond, func() { m.Stop(reason) })
	start := time.Now()
	err := m.FetchAll(context.Background(), requests(100), func(model.Result) {})
	took := time.Since(start)
	t.Logf("FetchAll ended %v after the start, a stop at 300ms", took.Round(time.Millisecond))
	if err != reason {
		t.Errorf("FetchAll = %v, want the stop reason", err)
	}
	if n := srv.Stats().Requests; n >= 100 {
		t.Errorf("the server saw %d requests for 100 calls: the stop did not stop the fetch", n)
	}
	if took >= 30*time.Second { // a hang guard, not a bound
		t.Errorf("FetchAll took %v after a stop at 300 ms", took)
	}
}

// TestMultiStopInFakeTime: in fake time (testing/synctest, the simulator called in memory, so
// no call is in flight at the stop), a Stop at 300 ms ends FetchAll exactly then: it ends every
// source's wait for its rate limiter at once, and no request is sent after it. A stop that
// left the calls already handed to each source's workers to their turn would end 3.3 s later.
func TestMultiStopInFakeTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim, err := atlastest.NewHandler(atlastest.Options{Month: "2026-11", Keys: map[string]int64{keyA: 1000, keyB: 1000}, Rate: 5})
		if err != nil {
			t.Fatal(err)
		}
		hc := &http.Client{Transport: atlastest.Transport{Handler: sim}}
		base := "http://127.0.0.1:1"
		a := newSource(t, "a", -1, atlas.Config{BaseURL: base, APIKey: keyA, RateLimit: 5, HTTPClient: hc})
		b := newSource(t, "b", -1, atlas.Config{BaseURL: base, APIKey: keyB, RateLimit: 5, HTTPClient: hc})
		m := NewMulti([]*Source{a, b})
		reason := fmt.Errorf("signal: interrupt")
		const stopAt = 300 * time.Millisecond
		var atStop int
		time.AfterFunc(stopAt, func() { atStop = sim.Stats().Requests; m.Stop(reason) })
		start := time.Now()
		err = m.FetchAll(context.Background(), requests(100), func(model.Result) {})
		if err != reason {
			t.Errorf("FetchAll = %v, want the stop reason", err)
		}
		if took := time.Since(start); took != stopAt {
			t.Errorf("FetchAll ended %v after the start, want at the stop (%v)", took, stopAt)
		}
		if n := sim.Stats().Requests; n != atStop || n == 0 {
			t.Errorf("the server saw %d requests by the stop and %d in all: want some, and none after it", atStop, n)
		}
	})
}

// A marketplace quota that runs out mid-run (spent elsewhere after the plan) hands the rest
// of its share to the direct wallet.
func TestMultiQuotaRunsOut(t *testing.T) {
	srv := newSim(t, atlastest.Options{Keys: map[string]int64{keyA: 100}, MarketplaceHost: listingHost, MarketplaceKey: listingKey, MarketplaceQuota: 3})
	market := newSource(t, "marketplace", 10, atlas.Config{BaseURL: srv.URL, Mode: atlas.ModeMarketplace, MarketplaceHost: listingHost, MarketplaceKey: listingKey})
	direct := newSource(t, "direct", 100, atlas.Config{BaseURL: srv.URL, APIKey: keyA})
	paid, err := fetchAll(t, NewMulti([]*Source{market, direct}), requests(10))
	if err != nil {
		t.Fatalf("FetchAll: %v", err)
	}
	if paid["marketplace"] != 3 || paid["direct"] != 7 {
		t.Errorf("paid %v, want marketplace 3 (its quota) and direct 7", paid)
	}
	assertNoDoubleFetch(t, srv)
}
