package atlastest_test

import (
	"fmt"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"sitewatch/pipeline/atlas/atlastest"
)

// One process serves the direct gateway and a marketplace listing at once, each with its
// own rate; the listing's quota runs out, says when it resets, and comes back whole then. In
// fake time (testing/synctest, the handler in memory): on the real clock a loaded machine
// could stretch the burst across a second, or send the request meant to come 400 ms before
// the reset after it.
func TestListingQuotaResetAndOwnRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const host, mkey = "intel.example", "mk-secret"
		mh := []string{"X-Marketplace-Host", host, "X-Marketplace-Key", mkey}
		reset := time.Now().Add(1500 * time.Millisecond).Truncate(time.Second).Add(time.Second)
		h, err := atlastest.NewHandler(atlastest.Options{Month: testMonth, Rate: 5, MarketplaceRate: 2, MarketplaceHost: host, MarketplaceKey: mkey,
			MarketplaceQuota: 2, MarketplaceQuotaReset: reset})
		if err != nil {
			t.Fatal(err)
		}

		alignToSecond()
		var statuses []int
		for i := range 3 {
			r := serveMem(h, fmt.Sprintf("/site-overview?url=m%d.example.com", i), mh...)
			statuses = append(statuses, r.status)
			if got := r.header.Get("X-RateLimit-Limit"); got != "2" {
				t.Errorf("listing X-RateLimit-Limit = %q, want its own 2", got)
			}
			if got := r.header.Get("X-Ratelimit-Requests-Reset"); got != strconv.FormatInt(reset.Unix(), 10) {
				t.Errorf("x-ratelimit-requests-reset = %q, want %d (--quota-reset)", got, reset.Unix())
			}
		}
		if fmt.Sprint(statuses) != "[200 200 429]" {
			t.Fatalf("listing statuses = %v, want two 200s then 429 (its rate of 2/s)", statuses)
		}
		if r := serveMem(h, "/atlas/site-overview?url=d.example.com", bearer...); r.status != 200 || r.header.Get("X-RateLimit-Limit") != "5" {
			t.Fatalf("direct: status %d limit %q, want 200 and the gateway's 5 (the listing's rate is its own)", r.status, r.header.Get("X-RateLimit-Limit"))
		}
		time.Sleep(time.Until(reset.Add(-400 * time.Millisecond)))
		if r := serveMem(h, "/site-overview?url=m9.example.com", mh...); r.status != 429 || r.header.Get("X-Ratelimit-Requests-Remaining") != "0" {
			t.Fatalf("quota spent: status %d remaining %q, want 429 and 0", r.status, r.header.Get("X-Ratelimit-Requests-Remaining"))
		}
		time.Sleep(time.Until(reset) + 50*time.Millisecond)
		r := serveMem(h, "/site-overview?url=m9.example.com", mh...)
		if r.status != 200 || r.header.Get("X-Ratelimit-Requests-Remaining") != "1" {
			t.Fatalf("after the reset: status %d remaining %q, want 200 and 1 (the whole quota back)", r.status, r.header.Get("X-Ratelimit-Requests-Remaining"))
		}
		if got, want := r.header.Get("X-Ratelimit-Requests-Reset"), strconv.FormatInt(reset.AddDate(0, 1, 0).Unix(), 10); got != want {
			t.Errorf("next reset = %s, want a month after the first (%s)", got, want)
		}
	})
}
