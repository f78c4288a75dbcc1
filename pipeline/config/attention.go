package config

// AttentionConfig is the attention section of domains.yaml: the two knobs of the
// needs-attention ranking (sql/views/needs_attention.sql) that `changes`, the report, the
// webhook digest and /metrics lead with. A zero field means the ranking's default (10,000
// visits, threshold 3), which is also what the needs_attention view uses when queried
// directly.
type AttentionConfig struct {
	// MinVisits is the size floor: a domain's traffic, rank, AI or channel move is listed only
	// when it had at least this many visits in the month or the month before.
	MinVisits int64
	// Threshold is how many of its usual swings a move must reach (|z|) to be listed.
	Threshold float64
}

// validateAttention checks the attention section's ranges.
func (c *Config) validateAttention(bad func(key, format string, args ...any)) {
	if c.Attention.MinVisits < 0 {
		bad("attention.min_visits", "%d is negative; give a number of visits (0 = the default, 10000)", c.Attention.MinVisits)
	}
	if c.present["attention.threshold"] && !(c.Attention.Threshold > 0 && c.Attention.Threshold <= 100) {
		bad("attention.threshold", "%g is out of range; give a number of usual swings above 0 (e.g. 3, the default)", c.Attention.Threshold)
	}
}
