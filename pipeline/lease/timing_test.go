package lease

import (
	"testing"
	"time"
)

// TestTimingFor: the margin is a twentieth of the TTL within 2–15 s and never more than a
// quarter of it; the holder confirms three times per margin and renews every third of the TTL.
func TestTimingFor(t *testing.T) {
	for _, tc := range []struct {
		ttl, margin time.Duration
	}{
		{2 * time.Second, 500 * time.Millisecond},
		{6 * time.Second, 1500 * time.Millisecond},
		{30 * time.Second, 2 * time.Second},
		{time.Minute, 3 * time.Second},
		{10 * time.Minute, 15 * time.Second},
		{24 * time.Hour, 15 * time.Second},
	} {
		got := TimingFor(tc.ttl, 30*time.Second)
		if got.Margin != tc.margin || got.Confirm != tc.margin/3 || got.Renew != tc.ttl/3 {
			t.Errorf("TimingFor(%v) = margin %v confirm %v renew %v, want margin %v confirm %v renew %v",
				tc.ttl, got.Margin, got.Confirm, got.Renew, tc.margin, tc.margin/3, tc.ttl/3)
		}
	}
}

// TestFenceAt: the money path's table. A holder admits paid calls only while its last
// confirmation was sent within the margin and its last renewal within TTL−margin.
func TestFenceAt(t *testing.T) {
	tm := TimingFor(10*time.Minute, 30*time.Second) // margin 15s
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	for _, tc := range []struct {
		name                string
		now, renew, confirm time.Duration
		want                fence
	}{
		{"just renewed", 0, 0, 0, fenceOpen},
		{"confirmed 14.9s ago", 14900 * time.Millisecond, 0, 0, fenceOpen},
		{"confirmation 15s old: paused", 15 * time.Second, 0, 0, fencePaused},
		{"confirmed by a GET long after the renewal", 5 * time.Minute, 0, 4*time.Minute + 50*time.Second, fenceOpen},
		{"a GET cannot stretch the renewal: lost at TTL-margin", 585 * time.Second, 0, 584 * time.Second, fenceLost},
		{"just before TTL-margin", 584*time.Second + 999*time.Millisecond, 0, 584 * time.Second, fenceOpen},
		{"cut off for a minute", 70 * time.Second, 0, 10 * time.Second, fencePaused},
		{"cut off past TTL-margin", 10 * time.Minute, 0, 10 * time.Second, fenceLost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tm.fenceAt(at(tc.now), at(tc.renew), at(tc.confirm)); got != tc.want {
				t.Errorf("fenceAt = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestTakerWait: a taker waits the longer TTL and in-flight bound of itself and the holder,
// plus the margin of that TTL.
func TestTakerWait(t *testing.T) {
	own := TimingFor(10*time.Minute, 30*time.Second)
	for _, tc := range []struct {
		name   string
		holder Record
		want   time.Duration
	}{
		{"same settings", Record{TTLMillis: 600_000, InFlightMillis: 30_000}, 10*time.Minute + 15*time.Second + 30*time.Second},
		{"an old record without them", Record{}, 10*time.Minute + 15*time.Second + 30*time.Second},
		{"the holder's longer TTL", Record{TTLMillis: 3_600_000, InFlightMillis: 30_000}, time.Hour + 15*time.Second + 30*time.Second},
		{"the holder's longer api.timeout", Record{TTLMillis: 60_000, InFlightMillis: 120_000}, 10*time.Minute + 15*time.Second + 2*time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := own.TakerWait(tc.holder); got != tc.want {
				t.Errorf("TakerWait = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestFenceKeepsPayersApart checks the fence's promise in real time, for clock rates that
// differ: the holder's last call (admitted before its fence closed, lasting up to InFlight)
// ends before a taker that first saw the holder's last version can take over. Within the
// rate tolerance it holds for every TTL; beyond it, it fails (so the bound is tight).
func TestFenceKeepsPayersApart(t *testing.T) {
	for _, ttl := range []time.Duration{2 * time.Second, 6 * time.Second, time.Minute, 10 * time.Minute, 24 * time.Hour} {
		tm := TimingFor(ttl, 30*time.Second)
		holderEnds := func(rate float64) float64 { // real seconds after the renewal was sent
			return (tm.TTL - tm.Margin + tm.InFlight).Seconds() * rate
		}
		takerActs := func(rate float64) float64 { // the taker saw the version at the earliest instant
			return tm.TakerWait(Record{}).Seconds() * rate
		}
		tol := tm.RateTolerance()
		// The holder's clock slow (its seconds last longer), the taker's fast, by tol/2 each.
		slow, fast := 1+tol/2*0.99, 1-tol/2*0.99
		if holderEnds(slow) >= takerActs(fast) {
			t.Errorf("TTL %v: within the tolerance %.4f the holder's last call ends at %.3fs, the taker acts at %.3fs",
				ttl, tol, holderEnds(slow), takerActs(fast))
		}
		slow, fast = 1+tol/2*1.02, 1-tol/2*1.02
		if holderEnds(slow) < takerActs(fast) {
			t.Errorf("TTL %v: the tolerance %.4f is not tight: 2%% past it the payers are still apart", ttl, tol)
		}
	}
}
