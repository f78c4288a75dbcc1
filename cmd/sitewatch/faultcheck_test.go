//go:build faultsoak

package main

import (
	"database/sql"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// faultPartitionBound is the most charges a partitioned run may make after its cut: calls
// admitted until its fence closes (the margin) at the rate, each ending within api.timeout.
var faultPartitionBound = int(math.Ceil(float64(faultRate) * (faultMargin + faultTimeout).Seconds()))

// faultRepayBound is the most calls of one run that others may pay again (docs/sharing.md,
// the guarantees table): what it paid after the last segment of its answer log the bucket
// acknowledged. A run admits a paid call only while that segment's cut is younger than
// log_interval + margin, a call admitted then ends within api.timeout, and the rate limiter
// lets one call more through at once (its burst).
var faultRepayBound = int(math.Ceil(float64(faultRate)*(faultLogInterval+faultMargin+faultTimeout).Seconds())) + 1

// faultProbesPerRun is what a run may pay again of a month's site-overview calls by design:
// its probe (of a held domain when the month is complete, or a bracket's opening) and a
// bracket's closing probe (docs/design.md, "The probe").
const faultProbesPerRun = 2

// why a charge may fall in another machine's window.
const (
	exemptNone      = ""
	exemptPartition = "charged while its runner was cut from the bucket"
)

// exemption says why c, a charge of p, may fall outside p's window of paying ("" when not).
func (s *faultSchedule) exemption(p *process, c faultCharge) string {
	for _, k := range s.cuts {
		if k.runner == p.runner && within(c.at, k.from, k.to) {
			return exemptPartition
		}
	}
	return exemptNone
}

// check asserts the invariants of the schedule (TestFaultSchedules).
func (s *faultSchedule) check() {
	var charges []faultCharge
	for _, r := range s.runners {
		charges = append(charges, r.log.all()...)
	}
	sortCharges(charges)
	var runs []*process
	for _, p := range s.procs {
		if p.command == "run" {
			runs = append(runs, p)
		}
	}
	for _, c := range attribute(runs, charges) {
		s.report("charge made while no run of its runner was alive (a call that outlived its process): %s", c)
	}
	s.t.Logf("%d runners, %d charges, %d processes, %d partitions; bounds: %d repaid a run, %d paid a cut run",
		len(s.runners), len(charges), len(s.procs), len(s.cuts), faultRepayBound, faultPartitionBound)
	s.checkPartitionBound(runs)
	s.checkNoOverlap(runs)
	s.checkPaid(runs)
	s.checkManifests()
}

// checkPartitionBound: a partitioned run's charges during its cut are bounded by the fence.
func (s *faultSchedule) checkPartitionBound(runs []*process) {
	for _, p := range runs {
		n := 0
		for _, c := range p.charges {
			if s.exemption(p, c) == exemptPartition {
				n++
			}
		}
		if n > faultPartitionBound {
			s.report("runner %d's run paid %d calls while cut from the bucket, more than rate × (margin + api.timeout) = %d", p.runner, n, faultPartitionBound)
		}
	}
}

// window is when a run was charged, leaving out what its partition explains.
func (s *faultSchedule) window(p *process) (first, last time.Time, ok bool) {
	for _, c := range p.charges {
		if s.exemption(p, c) == exemptPartition {
			continue
		}
		if !ok || c.at.Before(first) {
			first = c.at
		}
		if !ok || c.at.After(last) {
			last = c.at
		}
		ok = true
	}
	return first, last, ok
}

// checkNoOverlap: no two machines were charged in overlapping windows.
func (s *faultSchedule) checkNoOverlap(runs []*process) {
	for i, p := range runs {
		pf, pl, ok := s.window(p)
		if !ok {
			continue
		}
		for _, q := range runs[i+1:] {
			qf, ql, ok := s.window(q)
			if !ok || q.runner == p.runner {
				continue
			}
			if !pl.Before(qf) && !ql.Before(pf) {
				s.report("two machines paid at once: runner %d charged %s–%s, runner %d charged %s–%s",
					p.runner, pf.Format("15:04:05.000"), pl.Format("15:04:05.000"), q.runner, qf.Format("15:04:05.000"), ql.Format("15:04:05.000"))
			}
		}
	}
}

// paidBy is one charge and the run that made it.
type paidBy struct {
	c faultCharge
	p *process
}

// checkPaid: the bucket's ledger of the month, read from a fresh restore, against the charges.
// Every payment of an (endpoint, domain) after its first is a probe by design (a site-overview
// call, at most faultProbesPerRun a run) or a call the earlier payer lost: paid after its
// answer log's last segment acknowledged before the next payer pulled (a cut payer's last
// segment may still land later, so the final ledger cannot tell which payment was lost). No run
// may lose more than faultRepayBound calls, none may pay a call twice itself, the ledger holds
// every charge but at most those repeats, and nothing that was not charged.
func (s *faultSchedule) checkPaid(runs []*process) {
	ledger, err := s.bucketLedger()
	if err != nil {
		s.t.Errorf("read the bucket's ledger: %v", err)
		return
	}
	byKey := map[string][]paidBy{}
	for _, p := range runs {
		for _, c := range p.charges {
			byKey[c.key()] = append(byKey[c.key()], paidBy{c, p})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(ledger)) {
		if ledger[k] > len(byKey[k]) {
			s.report("the bucket's ledger holds %d credits for %s, the simulators charged %d", ledger[k], k, len(byKey[k]))
		}
	}
	lost := map[*process][]string{}
	probes := map[*process]int{}
	missing := 0
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		paid := byKey[k]
		slices.SortFunc(paid, func(a, b paidBy) int { return a.c.at.Compare(b.c.at) })
		if ledger[k] == 0 {
			s.report("the bucket's ledger holds none of the %d payments of %s", len(paid), k)
		}
		missing += max(len(paid)-ledger[k], 0)
		for i := 1; i < len(paid); i++ {
			prev, again := paid[i-1], paid[i]
			switch {
			case again.p == prev.p:
				s.report("%s was paid twice by one run of runner %d: %s, then %s", k, again.p.runner, prev.c, again.c)
			case again.c.endpoint == "site-overview" && probes[again.p] < faultProbesPerRun:
				probes[again.p]++ // the repayer's probe
			default:
				lost[prev.p] = append(lost[prev.p], fmt.Sprintf("%s, paid again: %s", prev.c, again.c))
			}
		}
	}
	total := 0
	for p, calls := range lost {
		total += len(calls)
		if len(calls) > faultRepayBound {
			s.report("runner %d's run %s–%s (exit %d) lost %d calls that another run paid again, more than ⌈rate × (log_interval + margin + api.timeout)⌉ + 1 = %d:\n  %s",
				p.runner, p.start.Format("15:04:05.000"), p.end.Format("15:04:05.000"), p.exit, len(calls), faultRepayBound, strings.Join(calls, "\n  "))
		}
	}
	if allowed := total + sumValues(probes); missing > allowed {
		s.report("the bucket's ledger lacks %d payments; only the %d repeated ones (%d lost, %d probes) may be missing", missing, allowed, total, sumValues(probes))
	}
	s.t.Logf("paid again: %d calls lost by %d runs (bound %d a run), %d probes; the ledger lacks %d payments", total, len(lost), faultRepayBound, sumValues(probes), missing)
}

func sumValues[K comparable](m map[K]int) (n int) {
	for _, v := range m {
		n += v
	}
	return n
}

// bucketLedger restores the bucket into a fresh directory and returns its ledger of the
// month: credits by "endpoint domain".
func (s *faultSchedule) bucketLedger() (map[string]int, error) {
	dir := s.t.TempDir()
	cfg := filepath.Join(dir, "domains.yaml")
	body := fmt.Sprintf("schedule: \"0 6 2 * *\"\napi:\n  base_url: http://127.0.0.1:1\nwarehouse:\n  duckdb: data/w.duckdb\n  parquet: data/parquet\n"+
		"publish:\n  url: s3://team-bucket/%s\n  endpoint: %s\n  region: us-east-1\n  path_style: true\ndomains:\n  - %q\n", s.prefix, s.gw.Endpoint, s.domains[0])
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		return nil, err
	}
	out, err := exec.Command(s.bin, "restore", "--config", cfg).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("restore: %v\n%s", err, out)
	}
	db, err := sql.Open("duckdb", filepath.Join(dir, "data", "w.duckdb")+"?access_mode=read_only")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.Query(`SELECT endpoint, domain, sum(credits) FROM run_calls WHERE snapshot_month = ? GROUP BY ALL`, testMonth)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	ledger := map[string]int{}
	for rows.Next() {
		var ep, d string
		var n int
		if err := rows.Scan(&ep, &d, &n); err != nil {
			return nil, err
		}
		ledger[ep+" "+d] = n
	}
	return ledger, rows.Err()
}

// checkManifests: no version of a manifest dropped a run an earlier version held, and the
// month's final manifest holds every run any version held.
func (s *faultSchedule) checkManifests() {
	s.seen.mu.Lock()
	defer s.seen.mu.Unlock()
	all := map[string]bool{}
	for key, vs := range s.seen.versions {
		for i, v := range vs {
			for r := range v.runs {
				all[r] = true
			}
			if i == 0 {
				continue
			}
			for r := range vs[i-1].runs {
				if !v.runs[r] {
					s.report("%s: the version written by run %s dropped run %s, which the version of run %s held (a stale writer overwrote it)",
						key, v.runID, r, vs[i-1].runID)
				}
			}
		}
	}
	month := s.seen.versions[s.seen.keys[0]]
	if len(month) == 0 {
		s.report("no manifest of %s was ever seen in the bucket", testMonth)
		return
	}
	final := month[len(month)-1]
	for r := range all {
		if !final.runs[r] {
			s.report("the month's final manifest (run %s) lacks run %s, which an earlier manifest held", final.runID, r)
		}
	}
}

// parquetRuns returns the distinct run_id values of a run_calls Parquet file.
func parquetRuns(path string) ([]string, error) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.Query(`SELECT DISTINCT run_id FROM read_parquet(?)`, path)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
