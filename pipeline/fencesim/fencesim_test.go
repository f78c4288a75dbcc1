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

// defaultSeeds is how many schedules TestSimulatedSchedules plays by default: about 3.3 s of
// CPU, 3.3 ms a schedule (SITEWATCH_SIM_SEEDS=N for more).
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

// scenario plays one scripted schedule.
func scenario(t *testing.T, plan []fault, answerLog bool) (*sim, []string, stats) {
	t.Helper()
	s := newSim(1, answerLog)
	s.script = plan
	synctest.Test(t, func(*testing.T) { s.play() })
	bad, st := s.check()
	return s, bad, st
}

// scenarios: machine 0 pays the month alone (at 3/s, 15 calls by 5 s); then it is lost, and
// machine 1 starts.
var scenarios = []struct {
	name string
	plan []fault
}{
	{"CutFor30s", []fault{{at: 5 * time.Second, kind: faultCut, length: 30 * time.Second}, {at: 5500 * time.Millisecond, kind: faultStart, machine: 1}}},
	{"KilledAndWiped", []fault{{at: 5 * time.Second, kind: faultKillWipe}, {at: 5500 * time.Millisecond, kind: faultStart, machine: 1}}},
	// The fence's second reason alone: the lease is confirmed all along, the answer log
	// cannot write; the payer must stop paying within log_interval + margin, so a kill with
	// the warehouse wiped 3.5 s later loses no more than the bound.
	{"LogCannotWriteThenKilledAndWiped", []fault{
		{at: 5 * time.Second, kind: faultLogCut, length: 30 * time.Second},
		{at: 8500 * time.Millisecond, kind: faultKillWipe},
		{at: 9 * time.Second, kind: faultStart, machine: 1}}},
}

// TestLostPayerCostsTheTakerOnlyItsLastSegment (issue 42's "done when", in fake time): a
// payer cut off for 30 s in the middle of the month while another machine takes over, or
// killed with its warehouse wiped and the month run again elsewhere, or killed and wiped
// after its answer log could not write for a while: the taker repays at most the bound,
// with one payer at a time and the bucket's ledger holding every charge. Without the answer
// log the taker repays everything the payer paid (the checker fails: it can).
func TestLostPayerCostsTheTakerOnlyItsLastSegment(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			s, bad, st := scenario(t, sc.plan, true)
			if len(bad) > 0 || st.lostRuns != 1 {
				t.Fatalf("%d lost runs, want 1; violations:\n  %s\nevents:\n%s", st.lostRuns, strings.Join(bad, "\n  "), s.eventLog())
			}
			t.Logf("repaid %d of %d paid calls (bound %d)", st.maxRepaid, paidBy(s, "r01-m0"), simBound())
			s, bad, st = scenario(t, sc.plan, false)
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
