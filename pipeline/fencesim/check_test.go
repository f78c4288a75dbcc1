package fencesim

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"sitewatch/pipeline/answerlog"
)

// stats are a schedule's figures: what the checker excused, for the report.
type stats struct {
	payments, repaid, lostRuns, maxRepaid int
}

// check returns every violation of the documented guarantees in a played schedule, and its
// figures. It excuses exactly what the guarantees bound, and nothing by time alone:
//
//  1. One payer: the calls of two runs never interleave (each run's calls, from the first
//     sent to the last answered or killed, lie outside every other run's).
//  2. Paid again only what a run lost: every payment of a call after its first is of
//     another run than the earlier ones, and each earlier payment was lost to the repayer
//     when it pulled: never answered, or answered after the payer's last cut the bucket
//     acknowledged before that pull, and not held by the repayer's own warehouse or by a
//     publish before the pull. No run loses more than the bound (simBound) to repayers.
//  3. The bucket's ledger is what was paid: at the end it holds a payment of every call,
//     every acknowledged payment, every answered payment of a machine whose warehouse was
//     not wiped after it, and nothing the API did not charge.
func (s *sim) check() ([]string, stats) {
	var bad []string
	var st stats
	if s.hung {
		bad = append(bad, fmt.Sprintf("the schedule was not done within %s (a hang)", simLimit))
	}
	bad = append(bad, s.checkOnePayer()...)
	repeats, st := s.checkRepeats()
	bad = append(bad, repeats...)
	return append(bad, s.checkBucket()...), st
}

type span struct {
	run         string
	machine     int
	first, last time.Duration
}

func (s *sim) checkOnePayer() []string {
	spans := map[string]*span{}
	var order []*span
	for _, p := range s.ledger {
		sp := spans[p.run]
		if sp == nil {
			sp = &span{run: p.run, machine: p.machine, first: p.start}
			spans[p.run] = sp
			order = append(order, sp)
		}
		sp.last = max(sp.last, p.end)
	}
	var bad []string
	for i, a := range order {
		for _, b := range order[i+1:] {
			if a.first < b.last && b.first < a.last {
				bad = append(bad, fmt.Sprintf("two payers: %s (m%d) paid from %+.3fs to %+.3fs, %s (m%d) from %+.3fs to %+.3fs",
					a.run, a.machine, a.first.Seconds(), a.last.Seconds(), b.run, b.machine, b.first.Seconds(), b.last.Seconds()))
			}
		}
	}
	return bad
}

func (s *sim) runByID(id string) *runRec {
	for _, r := range s.runs {
		if r.id == id {
			return r
		}
	}
	return nil
}

func (s *sim) checkRepeats() ([]string, stats) {
	st := stats{payments: len(s.ledger)}
	byCall := map[string][]*payment{}
	for _, p := range s.ledger {
		byCall[p.call] = append(byCall[p.call], p)
	}
	var bad []string
	lost := map[string]map[string]bool{} // run → calls of it paid again
	for c := range simCalls {
		ps := byCall[call(c)]
		for k, p := range ps {
			repayer := s.runByID(p.run)
			for _, q := range ps[:k] {
				if q.run == p.run {
					bad = append(bad, fmt.Sprintf("%s paid %s twice", p.run, p.call))
					continue
				}
				if why := s.heldAt(q, repayer); why != "" {
					bad = append(bad, fmt.Sprintf("%s paid %s again at %+.3fs, though %s", p.run, p.call, p.start.Seconds(), why))
					continue
				}
				if lost[q.run] == nil {
					lost[q.run] = map[string]bool{}
				}
				lost[q.run][q.call] = true
			}
			if k > 0 {
				st.repaid++
			}
		}
	}
	runs := make([]string, 0, len(lost))
	for run := range lost {
		runs = append(runs, run)
	}
	sort.Strings(runs)
	for _, run := range runs {
		n := len(lost[run])
		st.lostRuns++
		st.maxRepaid = max(st.maxRepaid, n)
		if n > s.bound {
			bad = append(bad, fmt.Sprintf("%s lost %d paid calls to a later payer, more than the bound %d", run, n, s.bound))
		}
	}
	return bad, st
}

// heldAt says why payment q was not lost to run r when r pulled ("" when it was lost).
func (s *sim) heldAt(q *payment, r *runRec) string {
	if !q.committed {
		return "" // killed before its answer: nothing of it anywhere
	}
	payer := s.runByID(q.run)
	var acked time.Duration = -1
	for _, a := range payer.acks {
		if a.at < r.pullAt {
			acked = max(acked, a.cut)
		}
	}
	if q.end < acked {
		return fmt.Sprintf("%s's answer (%+.3fs) was in the bucket: its log's cut at %+.3fs was acknowledged before the pull at %+.3fs",
			q.run, q.end.Seconds(), acked.Seconds(), r.pullAt.Seconds())
	}
	if q.machine == r.machine && !slices.ContainsFunc(s.wipes[q.machine], func(w time.Duration) bool { return w > q.end && w < r.pullAt }) {
		return fmt.Sprintf("m%d's warehouse held %s's answer (%+.3fs)", q.machine, q.run, q.end.Seconds())
	}
	return ""
}

// checkBucket reads the bucket at the end (every segment left and the month's ledger)
// without faults, as a fresh restore would.
func (s *sim) checkBucket() []string {
	cl := client{b: s.b, m: -1}
	ctx := context.Background()
	s.b.mu.Lock()
	objs := s.b.logObjects()
	s.b.mu.Unlock()
	rows, _, err := answerlog.Read(ctx, cl, objs)
	if err != nil {
		return []string{fmt.Sprintf("the bucket's answer log does not read: %v", err)}
	}
	charges := rows.Charges
	if body, _, found, _ := cl.GetSmall(ctx, monthKey); found {
		published, err := parseLedger(body)
		if err != nil {
			return []string{err.Error()}
		}
		charges = append(charges, published...)
	}
	inBucket, callHeld := map[string]bool{}, map[string]bool{}
	for _, c := range charges {
		inBucket[c.RunID+"/"+c.Domain] = true
		callHeld[c.Domain] = true
	}
	var bad []string
	paid := map[string]bool{}
	for _, p := range s.ledger {
		key := p.run + "/" + p.call
		paid[key] = true
		if inBucket[key] || !p.committed {
			continue
		}
		if why := s.mustBeInBucket(p); why != "" {
			bad = append(bad, fmt.Sprintf("the bucket lacks %s's payment of %s though %s", p.run, p.call, why))
		}
	}
	for key := range inBucket {
		if !paid[key] {
			bad = append(bad, fmt.Sprintf("the bucket holds a charge the API never made: %s", key))
		}
	}
	for c := range simCalls {
		if !callHeld[call(c)] {
			bad = append(bad, fmt.Sprintf("the bucket holds no payment of %s", call(c)))
		}
	}
	sort.Strings(bad)
	return bad
}

// mustBeInBucket says why answered payment p must be in the bucket at the end ("" if it may
// be lost).
func (s *sim) mustBeInBucket(p *payment) string {
	for _, a := range s.runByID(p.run).acks {
		if p.end < a.cut {
			return fmt.Sprintf("its log's cut at %+.3fs was acknowledged at %+.3fs", a.cut.Seconds(), a.at.Seconds())
		}
	}
	if !slices.ContainsFunc(s.wipes[p.machine], func(w time.Duration) bool { return w > p.end }) {
		return fmt.Sprintf("m%d's warehouse was never wiped after it", p.machine)
	}
	return ""
}
