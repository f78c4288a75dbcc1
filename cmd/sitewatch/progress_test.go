package main

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"sitewatch/pipeline"
	"sitewatch/pipeline/model"
)

func TestProgressLineFitsTheTerminal(t *testing.T) {
	pr := pipeline.Progress{Month: "2026-10", DomainsDone: 1234, DomainsTotal: 10000, CallsDone: 2468, CallsTotal: 20001,
		Elapsed: time.Minute, ETA: 7 * time.Minute, RatePerSecond: 41.2}
	for _, width := range []int{120, 80, 60, 30, 10} {
		line := fitLine(progressSegments(pr, model.Stats{RateLimited: 17}, "98765", "7m0s"), width)
		if n := utf8.RuneCountInString(line); n >= width {
			t.Errorf("width %d: line of %d runes would wrap: %q", width, n, line)
		}
		if width >= 30 && !strings.Contains(line, "12%") {
			t.Errorf("width %d: no percentage in %q", width, line)
		}
	}
	if line := fitLine(progressSegments(pr, model.Stats{}, "?", "-"), 120); !strings.Contains(line, "ETA 7m0s") && !strings.Contains(line, "ETA -") {
		t.Errorf("wide line lacks the ETA: %q", line)
	}
	pr.Stopping = true
	line := fitLine(progressSegments(pr, model.Stats{InFlight: 4}, "?", "-"), 200)
	if !strings.Contains(line, "waiting for 4 calls in flight") || !strings.Contains(line, "press Ctrl-C again to abort") {
		t.Errorf("stopping line = %q", line)
	}
}
