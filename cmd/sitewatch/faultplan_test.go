package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// The fault test's knobs. Every runner uses the same lease and API settings, so the bounds
// below are the fence's for these values (pipeline/lease.TimingFor).
const (
	faultDomains     = 12                     // 25 paid calls a month: about 3 s of paying at faultRate
	faultRate        = 8                      // api.rate_limit of every runner, calls/s
	faultTTL         = 2 * time.Second        // publish.lease_ttl
	faultMargin      = 500 * time.Millisecond // the fence's margin for a 2 s TTL (a quarter of it)
	faultLogInterval = 500 * time.Millisecond // publish.log_interval
	faultTimeout     = time.Second            // api.timeout: a call admitted before the fence closed ends within it
	faultChaos       = 6 * time.Second        // how long faults are drawn per schedule (cuts may last beyond it)
	faultConverge    = 300 * time.Second      // then every runner must complete the month within this
)

// faultConverge is a liveness bound, not a measure: three runners contending for the lease on a
// loaded machine (each attempt opening DuckDB, a restore taking 12 s) once needed 150 s.

// A takeover at faultTTL: the dead holder's written expiry (up to lease_ttl after its last
// renewal), then lease_ttl + margin + api.timeout of watching: about 5.5 s. Cuts are drawn
// both shorter and longer than that.
const (
	shortCutMin, shortCutMax = 300 * time.Millisecond, 2800 * time.Millisecond
	longCutMin, longCutMax   = 6 * time.Second, 30 * time.Second
)

// The fault soak's sources of chance (TestFaultSchedules). Each actor draws from its own stream
// derived from the schedule's seed, and the chaos is drawn whole before it starts, so a seed
// gives the same faults at the same offsets and the same pauses of each runner whatever the
// processes' timing: a failing seed replays its schedule.
const (
	streamSetup  uint64 = 1   // how many runners
	streamChaos  uint64 = 2   // the faults (drawFaults)
	streamRunner uint64 = 100 // + runner index: that runner's pauses between commands
)

// stream is the random stream of one actor of the schedule with seed.
func stream(seed, actor uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, actor)) }

// drawDuration draws a duration in [lo, hi] at millisecond steps.
func drawDuration(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rng.IntN(int((hi-lo)/time.Millisecond)+1))*time.Millisecond
}

type faultKind int

const (
	faultKill     faultKind = iota // kill -9 of the runner's run in progress, if any
	faultKillWipe                  // the same, then its warehouse deleted before its next command
	faultCut                       // the runner cut from the bucket (its proxy hangs every byte) for length
	faultRestore                   // `restore --force` in the runner's directory, whatever it is doing
)

// fault is one drawn fault: at offset at from the chaos's start, on runner.
type fault struct {
	at     time.Duration
	kind   faultKind
	runner int
	length time.Duration // faultCut: how long the cut lasts
}

func (f fault) String() string {
	switch f.kind {
	case faultKill:
		return fmt.Sprintf("+%s kill -9 runner %d", f.at, f.runner)
	case faultKillWipe:
		return fmt.Sprintf("+%s kill -9 runner %d and wipe its warehouse", f.at, f.runner)
	case faultCut:
		return fmt.Sprintf("+%s cut runner %d for %s", f.at, f.runner, f.length)
	default:
		return fmt.Sprintf("+%s restore --force runner %d", f.at, f.runner)
	}
}

// The fault model: what the soak draws, and what it leaves out on purpose.
//
// Drawn, one fault every 300–1200 ms for faultChaos: kill -9 of a run (25 %); kill -9 and the
// runner's warehouse deleted before its next command, as a pod rescheduled without its disk
// (15 %); a cut between one runner and the bucket (35 %: two in three shorter than a takeover,
// 0.3–2.8 s, one in three longer, 6–30 s, lasting past the chaos); `restore --force` beside
// whatever the runner does (25 %).
//
// Outside the model, never drawn: a foreign writer deleting or rewriting the lease object
// (docs/sharing.md: the fence cannot cover a lease deleted by hand while its holder works;
// the holder notices at its next confirmation, and a runner that takes a new lease at once may
// pay for those seconds again); the API's month turning (TestMonthTurnSavesEveryPaidMonth and
// the core tests cover it on one machine).
func drawFaults(rng *rand.Rand, runners int) []fault {
	var plan []fault
	for at := time.Duration(0); ; {
		at += drawDuration(rng, 300*time.Millisecond, 1200*time.Millisecond)
		if at >= faultChaos {
			return plan
		}
		f := fault{at: at, runner: rng.IntN(runners)}
		switch n := rng.IntN(100); {
		case n < 25:
			f.kind = faultKill
		case n < 40:
			f.kind = faultKillWipe
		case n < 75:
			f.kind = faultCut
			if rng.IntN(3) < 2 {
				f.length = drawDuration(rng, shortCutMin, shortCutMax)
			} else {
				f.length = drawDuration(rng, longCutMin, longCutMax)
			}
		default:
			f.kind = faultRestore
		}
		plan = append(plan, f)
	}
}

// describeFaults is the drawn plan in one line per fault, for the log.
func describeFaults(plan []fault) string {
	lines := make([]string, len(plan))
	for i, f := range plan {
		lines[i] = f.String()
	}
	return "\n  " + strings.Join(lines, "\n  ")
}

// TestFaultPlanReplays: a seed draws the same faults and the same runner pauses every time,
// whatever order the actors draw in, and two seeds draw different plans.
func TestFaultPlanReplays(t *testing.T) {
	const seed = 902117530
	first := drawFaults(stream(seed, streamChaos), 3)
	// Another actor drawing first (a runner's pauses) must not shift the chaos's draws.
	r0 := stream(seed, streamRunner)
	pauses := []time.Duration{drawDuration(r0, 0, time.Second), drawDuration(r0, 0, time.Second)}
	again := drawFaults(stream(seed, streamChaos), 3)
	if got, want := describeFaults(again), describeFaults(first); got != want {
		t.Errorf("seed %d drew another plan the second time:\n%s\nwant\n%s", seed, got, want)
	}
	r0 = stream(seed, streamRunner)
	if got := []time.Duration{drawDuration(r0, 0, time.Second), drawDuration(r0, 0, time.Second)}; got[0] != pauses[0] || got[1] != pauses[1] {
		t.Errorf("runner 0's pauses %v, then %v: its stream does not replay", pauses, got)
	}
	if len(first) == 0 {
		t.Fatalf("seed %d drew no fault in %s", seed, faultChaos)
	}
	if other := drawFaults(stream(seed+1, streamChaos), 3); describeFaults(other) == describeFaults(first) {
		t.Errorf("seeds %d and %d drew the same plan", seed, seed+1)
	}
	for _, f := range first {
		if f.at >= faultChaos || f.runner < 0 || f.runner >= 3 {
			t.Errorf("fault %s outside the chaos window or the runners", f)
		}
	}
}
