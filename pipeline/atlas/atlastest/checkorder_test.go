package atlastest_test

import (
	"testing"

	"sitewatch/pipeline/atlas/atlastest"
)

// TestMissingURLIsAFreeProbe checks the order of checks a preflight relies on (spec 5 and 7:
// the key, then the wallet, then the request's own validation): a request without url is
// answered 401 for a bad key, 402 for an empty wallet, and only then 400 MISSING_PARAMETER,
// always with the balance and rate headers and never charged.
func TestMissingURLIsAFreeProbe(t *testing.T) {
	const market = "market-key"
	s := newServer(t, atlastest.Options{
		Keys:            map[string]int64{"rich": 7, "broke": 0},
		Rate:            50,
		MarketplaceHost: "atlas.marketplace.example", MarketplaceKey: market, MarketplaceQuota: 40,
	})
	mk := []string{"X-Marketplace-Host", "atlas.marketplace.example", "X-Marketplace-Key", market}
	tests := []struct {
		name        string
		path        string
		hdr         []string
		wantStatus  int
		wantCode    string // MISSING_PARAMETER for a 400
		wantCredits string // X-Gateway-Remaining-Credits
		wantCost    string
		wantQuota   string // x-ratelimit-requests-remaining, marketplace only
	}{
		{"NoKey", "/atlas/site-overview", nil, 401, "", "0", "0", ""},
		{"WrongKey", "/atlas/site-overview", []string{"X-API-Key", "nope"}, 401, "", "0", "0", ""},
		{"EmptyWalletBeforeMissingURL", "/atlas/site-overview", []string{"X-API-Key", "broke"}, 402, "", "0", "1", ""},
		{"MissingURL", "/atlas/site-overview", []string{"X-API-Key", "rich"}, 400, "MISSING_PARAMETER", "7", "0", ""},
		{"EmptyURL", "/atlas/site-similar?url=", []string{"Authorization", "Bearer rich"}, 400, "MISSING_PARAMETER", "7", "0", ""},
		{"AliasMissingURL", "/atlas/website-overview", []string{"X-API-Key", "rich"}, 400, "MISSING_PARAMETER", "7", "0", ""},
		{"MarketplaceWrongKey", "/site-overview", []string{"X-Marketplace-Host", "atlas.marketplace.example", "X-Marketplace-Key", "bad"}, 401, "", "0", "0", "40"},
		{"MarketplaceMissingURL", "/site-overview", mk, 400, "MISSING_PARAMETER", "40", "0", "40"},
		{"MarketplaceBearerMissingURL", "/site-overview", append([]string{"Authorization", "Bearer rich"}, mk...), 400, "MISSING_PARAMETER", "7", "0", "40"},
		{"MarketplaceBearerEmptyWallet", "/site-overview", append([]string{"Authorization", "Bearer broke"}, mk...), 402, "", "0", "1", "40"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := get(t, s, tt.path, tt.hdr...)
			if r.status != tt.wantStatus {
				t.Fatalf("status = %d, want %d: %s", r.status, tt.wantStatus, r.body)
			}
			checkHeaders(t, r, "50")
			if tt.wantCode != "" {
				if got := errorCode(t, r.body); got != tt.wantCode {
					t.Errorf("code = %q, want %q", got, tt.wantCode)
				}
			}
			if got := r.header.Get("X-Gateway-Remaining-Credits"); got != tt.wantCredits {
				t.Errorf("X-Gateway-Remaining-Credits = %q, want %q", got, tt.wantCredits)
			}
			if got := r.header.Get("X-Gateway-Credit-Cost"); got != tt.wantCost {
				t.Errorf("X-Gateway-Credit-Cost = %q, want %q", got, tt.wantCost)
			}
			authed := tt.wantStatus != 401
			if got := r.header.Get("X-RateLimit-Remaining"); authed && got == "" {
				t.Error("an authenticated answer lacks X-RateLimit-Remaining")
			}
			if got := r.header.Get("X-Ratelimit-Requests-Remaining"); got != tt.wantQuota {
				t.Errorf("x-ratelimit-requests-remaining = %q, want %q", got, tt.wantQuota)
			}
			if tt.wantQuota != "" && r.header.Get("X-Ratelimit-Requests-Limit") != "40" {
				t.Errorf("x-ratelimit-requests-limit = %q, want 40", r.header.Get("X-Ratelimit-Requests-Limit"))
			}
		})
	}
	st := s.Stats()
	if st.Charged != 0 || s.Credits("rich") != 7 || s.Credits("broke") != 0 || s.MarketplaceRemaining() != 40 {
		t.Errorf("probes were charged: Charged %d, rich %d, broke %d, quota left %d", st.Charged, s.Credits("rich"), s.Credits("broke"), s.MarketplaceRemaining())
	}
}
