package fencesim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sitewatch/pipeline/model"
	"strings"
	"sync"
	"time"
)

// The fault model: the real-process soak's (cmd/sitewatch/faultplan_test.go), with its
// `restore --force` replaced by a machine started while another may be paying.
//
// Drawn, one fault every 300–1200 ms for simChaos: kill -9 of a machine's run (25 %); kill
// -9 and its warehouse deleted (15 %); a cut between one machine and the bucket (35 %: two
// in three 0.3–2.8 s, shorter than a takeover, one in three 6–30 s, longer, lasting past
// the chaos; one in four of them cuts only the writes of the answer log's segments, which the
// soak's proxy cannot do: the fence's second reason alone); a machine started (25 %; one
// already running is left alone). Machine 0 starts at once, and every machine not running
// starts when the chaos ends.
type faultKind int

const (
	faultKill faultKind = iota
	faultKillWipe
	faultCut
	faultStart
	faultLogCut // the machine's answer log cannot write for length; its lease works
)

const (
	shortCutMin, shortCutMax = 300 * time.Millisecond, 2800 * time.Millisecond
	longCutMin, longCutMax   = 6 * time.Second, 30 * time.Second
)

type fault struct {
	at      time.Duration
	kind    faultKind
	machine int
	length  time.Duration // faultCut
}

func (f fault) String() string {
	switch f.kind {
	case faultKill:
		return fmt.Sprintf("+%s kill -9 m%d", f.at, f.machine)
	case faultKillWipe:
		return fmt.Sprintf("+%s kill -9 m%d and wipe its warehouse", f.at, f.machine)
	case faultCut:
		return fmt.Sprintf("+%s cut m%d for %s", f.at, f.machine, f.length)
	case faultLogCut:
		return fmt.Sprintf("+%s m%d cannot write its answer log for %s", f.at, f.machine, f.length)
	default:
		return fmt.Sprintf("+%s start m%d", f.at, f.machine)
	}
}

func drawFaults(rng *rand.Rand) []fault {
	var plan []fault
	for at := time.Duration(0); ; {
		at += drawDuration(rng, 300*time.Millisecond, 1200*time.Millisecond)
		if at >= simChaos {
			return plan
		}
		f := fault{at: at, machine: rng.IntN(simMachines)}
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
			if rng.IntN(4) == 0 {
				f.kind = faultLogCut
			}
		default:
			f.kind = faultStart
		}
		plan = append(plan, f)
	}
}

func describeFaults(plan []fault) string {
	lines := make([]string, len(plan))
	for i, f := range plan {
		lines[i] = f.String()
	}
	return strings.Join(lines, "; ")
}

func newSim(seed uint64, answerLog bool) *sim {
	s := &sim{seed: seed, answerLog: answerLog, b: newBucket(seed), bound: simBound(), wipes: map[int][]time.Duration{}}
	for i := range simMachines {
		s.machines = append(s.machines, &machine{id: i, s: s, cl: client{b: s.b, m: i},
			rng: stream(seed, streamMachine+uint64(i)), local: map[string]model.Charge{}})
	}
	return s
}

// play runs the schedule to its end: every machine's month complete, every cut healed (or
// simLimit passed: s.hung). Call it inside a synctest bubble.
func (s *sim) play() {
	s.t0 = time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	plan, how := s.script, "scripted"
	if plan == nil {
		plan, how = drawFaults(stream(s.seed, streamChaos)), "drawn"
	}
	s.logf(-1, "seed %d, answer log %v, %s faults: %s", s.seed, s.answerLog, how, describeFaults(plan))
	watchdog := time.AfterFunc(simLimit, func() { s.update(func() { s.hung = true }); cancel() })
	defer watchdog.Stop()
	s.machines[0].start(ctx, &wg)
	for _, f := range plan {
		s.apply(ctx, &wg, f)
	}
	_ = sleep(ctx, time.Until(s.t0.Add(simChaos)))
	for _, m := range s.machines {
		if m.start(ctx, &wg) {
			s.logf(-1, "the chaos ends: m%d starts", m.id)
		}
	}
	wg.Wait()
	s.b.late.Wait()
}

// apply waits for f's instant (its machine's, shifted by the fault's own offset) and makes it.
func (s *sim) apply(ctx context.Context, wg *sync.WaitGroup, f fault) {
	m := s.machines[f.machine]
	offset := map[faultKind]time.Duration{faultKill: offsetKill, faultKillWipe: offsetKill, faultCut: offsetCut, faultLogCut: offsetCut, faultStart: offsetStart}[f.kind]
	if sleep(ctx, time.Until(s.t0.Add(f.at+m.offset()+offset))) != nil {
		return
	}
	switch f.kind {
	case faultKill, faultKillWipe:
		s.logf(-1, "kill -9 m%d: %s", m.id, m.killRun(f.kind == faultKillWipe))
	case faultCut, faultLogCut:
		k := cutKey{m: m.id, logOnly: f.kind == faultLogCut}
		s.b.cut(k)
		if f.kind == faultLogCut {
			s.logf(-1, "m%d cannot write its answer log for %s", m.id, f.length)
		} else {
			s.logf(-1, "cut m%d for %s", m.id, f.length)
		}
		wg.Add(1)
		time.AfterFunc(f.length+offsetHeal-offsetCut, func() {
			defer wg.Done()
			if s.b.heal(k) {
				s.logf(-1, "m%d connected again", m.id)
			}
		})
	case faultStart:
		if m.start(ctx, wg) {
			s.logf(-1, "start m%d", m.id)
		}
	}
}
