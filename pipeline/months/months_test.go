package months

import (
	"strings"
	"testing"
	"time"
)

func TestFetchable(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	jan := time.Date(2027, 1, 3, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		month, newest string
		now           time.Time
		want          bool
	}{
		{"2026-11", "", now, true},
		{"2026-10", "", now, true},         // the API may not have turned yet
		{"2026-10", "2026-11", now, false}, // it has: a later month is held
		{"2026-09", "", now, false},
		{"2026-01", "2026-01", now, false},
		{"2026-12", "", jan, true}, // across a year
		{"2026-11", "", jan, false},
	} {
		if got := Fetchable(tt.month, tt.newest, tt.now); got != tt.want {
			t.Errorf("Fetchable(%s, newest %q, %s) = %v, want %v", tt.month, tt.newest, tt.now.Format("2006-01-02"), got, tt.want)
		}
	}
	if a := FinishAdvice("2026-09", "", now); strings.Contains(a, "sitewatch run") || !strings.Contains(a, "can no longer be fetched") {
		t.Errorf("advice for a past month: %q", a)
	}
	if a := FinishAdvice("2026-11", "", now); !strings.Contains(a, "`sitewatch run`") || strings.Contains(a, "--snapshot") {
		t.Errorf("advice for the current month: %q", a)
	}
}
