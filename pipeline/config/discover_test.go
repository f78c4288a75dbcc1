package config

import (
	"strings"
	"testing"
)

func TestDiscoverSection(t *testing.T) {
	base := "api:\n  base_url: http://127.0.0.1:1\ndomains:\n  - example.com\n"
	t.Run("off unless set", func(t *testing.T) {
		cfg, err := Parse("d.yaml", []byte(base), func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Discover.On() {
			t.Errorf("discover on without a discover: block: %+v", cfg.Discover)
		}
	})
	t.Run("set", func(t *testing.T) {
		cfg, err := Parse("d.yaml", []byte(base+"discover:\n  add_per_month: 3\n  monthly_budget: 10\n"), func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		if !cfg.Discover.On() || cfg.Discover.AddPerMonth != 3 || cfg.Discover.MonthlyBudget != 10 {
			t.Errorf("discover = %+v", cfg.Discover)
		}
	})
	for name, c := range map[string]struct{ yaml, want string }{
		"negative budget": {"discover:\n  add_per_month: 3\n  monthly_budget: -2\n", "d.yaml:7: discover.monthly_budget: -2 is out of range"},
		"too many":        {"discover:\n  add_per_month: 500\n", "d.yaml:6: discover.add_per_month: 500 is out of range"},
		"typo":            {"discover:\n  add_per_mnth: 3\n", `unknown key "add_per_mnth" under discover (known keys: add_per_month, monthly_budget, min_visits)`},
		"not a number":    {"discover:\n  add_per_month: 1.5\n", "discover.add_per_month: `1.5` is not a whole number"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("d.yaml", []byte(base+c.yaml), func(string) string { return "" })
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
}
