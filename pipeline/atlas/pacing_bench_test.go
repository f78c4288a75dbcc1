package atlas

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/model"
)

// pacingFigures are the figures of one pacing run.
type pacingFigures struct {
	rateRatio    float64 // successful calls per second over the steady window ÷ the limit
	probeRatio   float64 // the same from the very first send, so including the one-call probe
	share429     float64 // share of HTTP answers that were 429
	chargedRatio float64 // credits charged ÷ calls requested
}

// measurePacing runs calls overview requests through a client built from cfg against a
// simulator at limit requests/s with 200–800 ms latency. The steady window runs from the
// second send to the last send: the client sends one probe call alone and waits for its
// answer (so the credit reserve cannot be overshot before the balance is known), a one-off
// cost of one latency that the probe figure includes; the tail of the last answers never
// counts.
func measurePacing(b *testing.B, cfg Config, limit, calls int) pacingFigures {
	b.Helper()
	srv := atlastest.NewServer(atlastest.Options{
		Keys:       map[string]int64{canary: int64(calls) * 4},
		Rate:       limit,
		LatencyMin: 200 * time.Millisecond,
		LatencyMax: 800 * time.Millisecond,
	})
	defer srv.Close()
	cfg.BaseURL, cfg.APIKey, cfg.RateLimit = srv.URL, canary, float64(limit)
	c, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	var sends []time.Time
	c.onSend = func(t time.Time) {
		mu.Lock()
		defer mu.Unlock()
		sends = append(sends, t)
	}
	ok := 0
	err = c.FetchAll(context.Background(), domainReqs(calls), func(r model.Result) {
		if r.Err == nil {
			ok++
		} else {
			b.Errorf("%s: %v", r.Domain, r.Err)
		}
	})
	if err != nil {
		b.Fatalf("FetchAll: %v", err)
	}
	ss := srv.Stats()
	first, second, last := sends[0], sends[1], sends[len(sends)-1]
	return pacingFigures{
		rateRatio:    float64(ok-2) / last.Sub(second).Seconds() / float64(limit),
		probeRatio:   float64(ok-1) / last.Sub(first).Seconds() / float64(limit),
		share429:     float64(ss.ByStatus[http.StatusTooManyRequests]) / float64(ss.Requests),
		chargedRatio: float64(ss.Charged) / float64(calls),
	}
}

// BenchmarkPacing measures how much of the rate limit the client uses, against an
// in-process simulator at 20 requests/s and 200–800 ms latency: 600 calls with the default
// concurrency, then 60 calls one at a time for comparison (at ~0.5 s per call the serial
// client cannot come near the limit; more calls would only take longer). Targets for the
// paced client: rate/limit >= 0.97, 429 share <= 0.01, charged/call exactly 1.
// probe-rate/limit is rate/limit measured from the first send instead of the second.
//
//	go test -run '^$' -bench Pacing -benchtime 1x -count 3 ./pipeline/atlas/
func BenchmarkPacing(b *testing.B) {
	const limit = 20
	for range b.N {
		paced := measurePacing(b, Config{}, limit, 600)
		serial := measurePacing(b, Config{Concurrency: 1}, limit, 60)
		b.ReportMetric(paced.rateRatio, "rate/limit")
		b.ReportMetric(paced.probeRatio, "probe-rate/limit")
		b.ReportMetric(paced.share429, "429/answer")
		b.ReportMetric(paced.chargedRatio, "charged/call")
		b.ReportMetric(serial.rateRatio, "serial-rate/limit")
		b.ReportMetric(serial.probeRatio, "serial-probe-rate/limit")
		b.ReportMetric(serial.share429, "serial-429/answer")
		b.ReportMetric(serial.chargedRatio, "serial-charged/call")
	}
	b.ReportMetric(0, "ns/op") // wall time is not the figure here
}
