package fencesim

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// defaultSeeds is how many schedules TestSimulatedSchedules plays by default: about 3 s of
// CPU, 2.8 ms a schedule (SITEWATCH_SIM_SEEDS=N for more).
const defaultSeeds = 1000

// runSchedule plays seed's schedule in a bubble of its own and checks it.
func runSchedule(t *testing.T, seed uint64, answerLog bool) (*sim, []string, stats) {
	t.Helper()
	s := newSim(seed, answerLog)
	synctest.Test(t, func(*testing.T) { s.play() })
	bad, st := s.check()
	return s, bad, st
}

// seeds are the schedules to play: SITEWATCH_SIM_SEED (one, or several comma-separated)
// replays exactly those; otherwise SITEWATCH_SIM_SEEDS (default n) consecutive seeds from a
// first one drawn at random, logged.
func seeds(t *testing.T, n int) []uint64 {
	t.Helper()
	if v := os.Getenv("SITEWATCH_SIM_SEED"); v != "" {
		var out []uint64
		for _, f := range strings.Split(v, ",") {
			seed, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
			if err != nil {
				t.Fatalf("SITEWATCH_SIM_SEED=%q: %q is not a seed (a non-negative integer): %v", v, f, err)
			}
			out = append(out, seed)
		}
		return out
	}
	if v := os.Getenv("SITEWATCH_SIM_SEEDS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("SITEWATCH_SIM_SEEDS=%q: want a number of schedules, at least 1", v)
		}
	}
	first := uint64(time.Now().UnixNano()) % 1_000_000_000
	t.Logf("seeds %d to %d (SITEWATCH_SIM_SEED=N replays one)", first, first+uint64(n)-1)
	out := make([]uint64, n)
	for i := range out {
		out[i] = first + uint64(i)
	}
	return out
}

// TestSimulatedSchedules (issue 42) plays seeded fault schedules of three machines paying one
// month through the real lease and answer log (kill -9, kill -9 with the warehouse wiped,
// cuts shorter and longer than a takeover, machines started mid-run) and checks each against
// the documented guarantees: one payer at a time, a takeover repays at most what the lost
// payer paid after its last acknowledged segment (≤ simBound calls), and the bucket's
// ledger ends holding every charge it must.
func TestSimulatedSchedules(t *testing.T) {
	var total stats
	failed := 0
	start := time.Now()
	list := seeds(t, raceSeeds)
	for _, seed := range list {
		s, bad, st := runSchedule(t, seed, true)
		total.payments += st.payments
		total.repaid += st.repaid
		total.lostRuns += st.lostRuns
		total.maxRepaid = max(total.maxRepaid, st.maxRepaid)
		if len(bad) > 0 {
			failed++
			if failed <= 3 {
				t.Errorf("seed %d (SITEWATCH_SIM_SEED=%d replays it):\n  %s\nevents:\n%s", seed, seed, strings.Join(bad, "\n  "), s.eventLog())
			}
		}
	}
	elapsed := time.Since(start)
	t.Logf("%d schedules in %s (%.0f/s): %d payments of %d calls each, %d repaid by %d lost runs (at most %d of one run; bound %d); %d failed",
		len(list), elapsed.Round(time.Millisecond), float64(len(list))/elapsed.Seconds(), total.payments, simCalls, total.repaid, total.lostRuns, total.maxRepaid, simBound(), failed)
}

// TestScheduleReplays: a seed plays the same events at the same fake instants every time
// (what SITEWATCH_SIM_SEED relies on), and two seeds play different schedules.
func TestScheduleReplays(t *testing.T) {
	for seed := uint64(1); seed <= 50; seed++ {
		first, _, _ := runSchedule(t, seed, true)
		again, _, _ := runSchedule(t, seed, true)
		if a, b := first.eventLog(), again.eventLog(); a != b {
			t.Fatalf("seed %d played two different schedules:\n%s\n\nthen\n%s", seed, a, b)
		}
		other, _, _ := runSchedule(t, seed+1000, true)
		if other.eventLog() == first.eventLog() {
			t.Fatalf("seeds %d and %d played the same schedule", seed, seed+1000)
		}
	}
}

// TestCheckerFailsWithoutTheAnswerLog: with the answer log switched off, a payer killed with
// its warehouse wiped, or cut off past a takeover, loses everything it paid to the next
// payer, and the checker must say so for some of the first seeds (the checker can fail).
func TestCheckerFailsWithoutTheAnswerLog(t *testing.T) {
	const n = 50
	failed := 0
	var example string
	for seed := uint64(1); seed <= n; seed++ {
		_, bad, _ := runSchedule(t, seed, false)
		if len(bad) > 0 {
			failed++
			if example == "" {
				example = fmt.Sprintf("seed %d: %s", seed, bad[0])
			}
		}
	}
	if failed == 0 {
		t.Fatalf("the checker passed all %d schedules without the answer log", n)
	}
	t.Logf("without the answer log the checker failed %d of %d schedules, e.g. %s", failed, n, example)
}

// scenario plays one scripted schedule: machine 0 pays the month, fault f hits it 5 s in
// (15 calls paid), and machine 1 starts half a second later.
func scenario(t *testing.T, f fault, answerLog bool) (*sim, []string, stats) {
	t.Helper()
	s := newSim(1, answerLog)
	f.at, f.machine = 5*time.Second, 0
	s.script = []fault{f, {at: 5500 * time.Millisecond, kind: faultStart, machine: 1}}
	synctest.Test(t, func(*testing.T) { s.play() })
	bad, st := s.check()
	return s, bad, st
}

var scenarios = []struct {
	name  string
	fault fault
}{
	{"CutFor30s", fault{kind: faultCut, length: 30 * time.Second}},
	{"KilledAndWiped", fault{kind: faultKillWipe}},
}

// TestLostPayerCostsTheTakerOnlyItsLastSegment (issue 42's "done when", in fake time): a
// payer cut off for 30 s in the middle of the month while another machine takes over, or
// killed with its warehouse wiped and the month run again elsewhere: the taker repays at
// most the bound, with one payer at a time and the bucket's ledger holding every charge.
// Without the answer log the taker repays everything the payer paid (the checker fails: it can).
func TestLostPayerCostsTheTakerOnlyItsLastSegment(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			s, bad, st := scenario(t, sc.fault, true)
			if len(bad) > 0 || st.lostRuns != 1 {
				t.Fatalf("%d lost runs, want 1; violations:\n  %s\nevents:\n%s", st.lostRuns, strings.Join(bad, "\n  "), s.eventLog())
			}
			t.Logf("repaid %d of %d paid calls (bound %d)", st.maxRepaid, paidBy(s, "r01-m0"), simBound())
			s, bad, st = scenario(t, sc.fault, false)
			if len(bad) == 0 {
				t.Fatalf("without the answer log the checker passed (repaid %d):\n%s", st.maxRepaid, s.eventLog())
			}
			t.Logf("without the answer log: %s", bad[0])
		})
	}
}

// paidBy counts the payments of run.
func paidBy(s *sim, run string) int {
	n := 0
	for _, p := range s.ledger {
		if p.run == run {
			n++
		}
	}
	return n
}
