package config

import (
	"strings"
	"testing"
)

// TestAttention reads the attention section: absent = zero (the ranking's defaults), set
// values kept, out-of-range values named with their line.
func TestAttention(t *testing.T) {
	cfg, err := Parse("domains.yaml", []byte(base+"domains: [a.com]\n"), env())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Attention != (AttentionConfig{}) {
		t.Errorf("attention left out: %+v, want zero (the defaults)", cfg.Attention)
	}
	cfg, err = Parse("domains.yaml", []byte(base+"attention:\n  min_visits: 50000\n  threshold: 4.5\ndomains: [a.com]\n"), env())
	if err != nil {
		t.Fatal(err)
	}
	if want := (AttentionConfig{MinVisits: 50000, Threshold: 4.5}); cfg.Attention != want {
		t.Errorf("attention = %+v, want %+v", cfg.Attention, want)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"attention:\n  min_visits: -1\n", "attention.min_visits: -1 is negative"},
		{"attention:\n  threshold: 0\n", "attention.threshold: 0 is out of range"},
		{"attention:\n  min_visit: 10\n", `unknown key "min_visit" under attention (known keys: min_visits, threshold)`},
	} {
		_, err := Parse("domains.yaml", []byte(base+tc.yaml+"domains: [a.com]\n"), env())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want it to say %q", tc.yaml, err, tc.want)
		}
	}
}
