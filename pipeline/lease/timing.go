package lease

import "time"

// Timing is the fence's arithmetic, all of it derived from the lease's TTL and the longest
// call the holder may have in flight (api.timeout). Every instant in it is read on one
// machine's monotonic clock; no two machines' clocks are ever compared.
type Timing struct {
	TTL time.Duration
	// Margin absorbs the difference between two machines' clock *rates* over a TTL (and
	// scheduling delays). It is also the admission window: a holder admits a paid call only
	// while its last confirmation was sent less than Margin ago, so a runner cut from the
	// bucket pays for at most Margin (rate × Margin calls, plus those already in flight).
	Margin time.Duration
	// Confirm is how often the holder confirms its lease (a GET, or a renewal PUT every
	// Renew): three times per Margin, so one slow confirmation does not pause paid calls.
	Confirm time.Duration
	// Renew is how often the holder rewrites the lease (a new version: a taker's watch starts over).
	Renew time.Duration
	// InFlight bounds a call admitted before the fence closed: it ends within it (api.timeout).
	InFlight time.Duration
}

// Bounds of the margin: at least 2 s (a round trip to a distant bucket, twice), at most
// 15 s (what a cut-off runner may keep paying), never more than a quarter of the TTL.
const (
	minMargin = 2 * time.Second
	maxMargin = 15 * time.Second
)

// TimingFor returns the timing of a lease of ttl whose holder's calls last at most inFlight.
func TimingFor(ttl, inFlight time.Duration) Timing {
	m := min(max(ttl/20, minMargin), maxMargin, ttl/4)
	return Timing{TTL: ttl, Margin: m, Confirm: m / 3, Renew: ttl / 3, InFlight: inFlight}
}

// fence is what a holder may do at an instant.
type fence int

const (
	fenceOpen   fence = iota // admit paid calls
	fencePaused              // no confirmation sent within Margin: admit nothing until one succeeds
	fenceLost                // the last renewal was sent TTL−Margin ago: a taker may act soon
)

func (f fence) String() string {
	return [...]string{"open", "paused", "lost"}[f]
}

// fenceAt is the holder's fence at now, given when its last successful renewal (a PUT that
// wrote a new version) and its last successful confirmation of any kind were sent.
//
// Why it is safe: a taker first sees the version written by the last renewal no earlier than
// that renewal was sent, and then waits TakerWait of its own clock. The holder admits its
// last call before renewSent+TTL−Margin of its clock and that call ends within InFlight:
// 2·Margin before the taker can act, so the two never pay at once as long as their clock
// rates differ by less than RateTolerance.
func (t Timing) fenceAt(now, renewSent, confirmSent time.Time) fence {
	switch {
	case !now.Before(renewSent.Add(t.TTL - t.Margin)):
		return fenceLost
	case !now.Before(confirmSent.Add(t.Margin)):
		return fencePaused
	default:
		return fenceOpen
	}
}

// lostAt is when the fence closes for good without a new renewal.
func (t Timing) lostAt(renewSent time.Time) time.Time { return renewSent.Add(t.TTL - t.Margin) }

// TakerWait is how long a taker watches a lease version unchanged, on its own monotonic
// clock from the moment it first saw it, before it may take that version over: the longer
// of its own and the holder's TTL, plus the margin of that TTL, plus the longer of the two
// in-flight bounds (so a call the holder admitted just before its fence closed has ended).
func (t Timing) TakerWait(holder Record) time.Duration {
	ttl := max(t.TTL, holder.ttl())
	inFlight := max(t.InFlight, holder.inFlight())
	return ttl + TimingFor(ttl, inFlight).Margin + inFlight
}

// RateTolerance is the largest difference between two machines' clock rates the fence
// tolerates, as a fraction: the holder's TTL−Margin+InFlight, on a clock slow by half of it,
// must stay shorter in real time than the taker's TTL+Margin+InFlight on a clock fast by the
// other half, so 2·Margin / (TTL+InFlight).
func (t Timing) RateTolerance() float64 {
	return float64(2*t.Margin) / float64(t.TTL+t.InFlight)
}
