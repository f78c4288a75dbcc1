package config

import "time"

// DefaultLeaseTTL is how long a bucket lease lasts without renewal (publish.lease_ttl): a
// runner killed while holding it blocks others at most this long.
const DefaultLeaseTTL = 10 * time.Minute

// minLeaseTTL leaves room for a renewal (every third of the TTL) to reach a slow endpoint;
// maxLeaseTTL bounds how long a killed holder blocks the bucket (twice the TTL at most).
const (
	minLeaseTTL = 2 * time.Second
	maxLeaseTTL = 24 * time.Hour
)

// LeaseOn says whether runs and publishes take the bucket lease (publish.lease, default on).
func (p PublishConfig) LeaseOn() bool { return p.Lease != "off" && p.Lease != "false" }

// LeaseDuration is publish.lease_ttl, or DefaultLeaseTTL.
func (p PublishConfig) LeaseDuration() time.Duration {
	if p.LeaseTTL.Duration <= 0 {
		return DefaultLeaseTTL
	}
	return p.LeaseTTL.Duration
}

// DefaultLogInterval is publish.log_interval's default: a run holding the lease writes its new
// answers to the bucket at least this often. Short, because it bounds what a takeover may pay
// again (rate × (log_interval + margin + api.timeout)); it costs at most 2 PUTs a second while
// answers arrive, none while none do.
const DefaultLogInterval = 500 * time.Millisecond

// minLogInterval and maxLogInterval bound publish.log_interval.
const (
	minLogInterval = 100 * time.Millisecond
	maxLogInterval = time.Minute
)

// LogEvery is publish.log_interval, or DefaultLogInterval.
func (p PublishConfig) LogEvery() time.Duration {
	if p.LogInterval.Duration <= 0 {
		return DefaultLogInterval
	}
	return p.LogInterval.Duration
}

func (c *Config) validateLease(bad func(key, format string, args ...any)) {
	if d := c.Publish.LogInterval.Duration; c.present["publish.log_interval"] && (d < minLogInterval || d > maxLogInterval) {
		bad("publish.log_interval", "%v is out of range: use %v to %v (default %v); it bounds what a takeover may pay again", d, minLogInterval, maxLogInterval, DefaultLogInterval)
	}
	switch c.Publish.Lease {
	case "", "on", "off", "true", "false":
	default:
		bad("publish.lease", "%q is not on or off", c.Publish.Lease)
	}
	if d := c.Publish.LeaseTTL.Duration; c.present["publish.lease_ttl"] && (d < minLeaseTTL || d > maxLeaseTTL) {
		bad("publish.lease_ttl", "%v is out of range: use %v to %v (default %v); a killed holder blocks the bucket up to twice this long", d, minLeaseTTL, maxLeaseTTL, DefaultLeaseTTL)
	}
}
