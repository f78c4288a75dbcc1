package atlas

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"sitewatch/pipeline/atlas/atlastest"
)

// TestRateLimitFollowsServerInFakeTime: the server lowers its limit from 20 to 3 requests/s in
// the middle of a run; the client follows it from the first answer that carries it, so only
// the requests it had sent before that answer can meet a 429 (at 20/s and 20–60 ms per call,
// at most 3). On the real clock the same count depends on how late a loaded machine delivers
// that answer (TestRateLimitFollowsServer keeps the rest of the story on loopback); in fake time
// it is the client's rule alone (1 or 2 in 20 runs, by the order of answers due at one instant).
func TestRateLimitFollowsServerInFakeTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim, err := atlastest.NewHandler(atlastest.Options{Rate: 20, LatencyMin: 20 * time.Millisecond, LatencyMax: 60 * time.Millisecond,
			Keys: map[string]int64{canary: 1000}})
		if err != nil {
			t.Fatal(err)
		}
		c, err := New(Config{BaseURL: "http://127.0.0.1:1", APIKey: canary, RateLimit: 30,
			RetryInitial: 5 * time.Millisecond, RetryMax: 50 * time.Millisecond,
			HTTPClient: &http.Client{Transport: atlastest.Transport{Handler: sim}}})
		if err != nil {
			t.Fatal(err)
		}
		if mid := lowerRateMidRun(t, c, sim.SetRate); mid != 20 || c.Stats().RateLimit != 3 {
			t.Fatalf("rate %v before the change (want 20), %v after (want 3)", mid, c.Stats().RateLimit)
		}
		n := sim.Stats().ByStatus[http.StatusTooManyRequests]
		t.Logf("%d answers were 429 after the server lowered its limit", n)
		if n > 3 {
			t.Errorf("%d answers were 429 after the server lowered its limit; want at most 3", n)
		}
	})
}
