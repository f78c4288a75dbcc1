package pipeline

import (
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// TestScheduleDecisions: the schedule's clock arithmetic, without waiting: the last tick, and
// when it wakes next for each state of the cycle.
func TestScheduleDecisions(t *testing.T) {
	monthly, err := cron.ParseStandard("0 6 2 * *")
	if err != nil {
		t.Fatal(err)
	}
	s := &scheduler{sched: monthly, retryEvery: 6 * time.Hour}
	now := at("2026-11-23T10:00:00Z")
	if got, want := s.lastTick(now), at("2026-11-02T06:00:00Z"); !got.Equal(want) {
		t.Errorf("lastTick = %s, want %s", got, want)
	}
	if got := s.lastTick(at("2026-11-02T05:59:59Z")); !got.Equal(at("2026-10-02T06:00:00Z")) {
		t.Errorf("lastTick just before a tick = %s, want the month before's", got)
	}
	secondly, _ := cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow).Parse("* * * * * *")
	if got := (&scheduler{sched: secondly}).lastTick(now); !got.Equal(now) {
		t.Errorf("lastTick of a per-second schedule = %s, want now", got)
	}
	cases := []struct {
		name string
		cur  cycle
		want time.Time
	}{
		{"CatchUp", cycle{start: at("2026-11-02T06:00:00Z")}, now},
		{"Retry", cycle{start: at("2026-11-02T06:00:00Z"), lastRun: at("2026-11-23T09:00:00Z")}, at("2026-11-23T15:00:00Z")},
		{"RetryOverdue", cycle{start: at("2026-11-02T06:00:00Z"), lastRun: at("2026-11-20T09:00:00Z")}, now},
		{"TurnedRetryNow", cycle{start: at("2026-11-02T06:00:00Z"), lastRun: now, retryNow: true}, now},
		{"Satisfied", cycle{start: at("2026-11-02T06:00:00Z"), lastRun: now, satisfied: true}, at("2026-12-02T06:00:00Z")},
		{"RetryAfterNextTick", cycle{start: at("2026-11-02T06:00:00Z"), lastRun: at("2026-12-02T03:00:00Z")}, at("2026-12-02T06:00:00Z")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s.cur = tc.cur
			clock := now
			if tc.name == "RetryAfterNextTick" {
				clock = at("2026-12-02T04:00:00Z")
			}
			if got, _ := s.nextWake(clock); !got.Equal(tc.want) {
				t.Errorf("nextWake = %s, want %s", got, tc.want)
			}
		})
	}
	// Up to date on a month completed before the tick is "no new data yet"; after it, done.
	s.cur = cycle{start: at("2026-11-02T06:00:00Z")}
	if s.satisfies(&Summary{Status: StatusUpToDate, CompleteSince: at("2026-10-05T00:00:00Z")}) {
		t.Error("up to date on a month completed before the tick satisfies the cycle; the schedule would stop waiting for new data")
	}
	if !s.satisfies(&Summary{Status: StatusUpToDate, CompleteSince: at("2026-11-03T00:00:00Z")}) {
		t.Error("up to date on a month completed since the tick does not satisfy the cycle")
	}
	if s.satisfies(&Summary{Status: StatusStoppedCredits}) {
		t.Error("a run stopped for credits satisfies the cycle")
	}
}
