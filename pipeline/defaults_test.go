package pipeline

import (
	"testing"

	"sitewatch/pipeline/config"
	"sitewatch/pipeline/warehouse"
)

// TestMemoryLimitDefaultsAgree: warehouse.memory_limit's default (config) is the limit a run
// passes to the warehouse, and the warehouse's own default serves the commands that open it
// without one; the README states one figure for both.
func TestMemoryLimitDefaultsAgree(t *testing.T) {
	if config.DefaultMemoryLimit != warehouse.DefaultLoadMemoryLimit {
		t.Errorf("config.DefaultMemoryLimit %q, warehouse.DefaultLoadMemoryLimit %q: one default, written twice, now differs",
			config.DefaultMemoryLimit, warehouse.DefaultLoadMemoryLimit)
	}
}
