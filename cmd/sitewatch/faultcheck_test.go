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

// why a charge may repeat another, or fall in another machine's window.
const (
	exemptNone      = ""
	exemptPartition = "charged while its runner was cut from the bucket"
	exemptProbe     = "the probe of an up-to-date run"
	exemptKill      = "caught by kill -9 before its commit"
)

// exemption says why c, a charge of p, is allowed to repeat another ("" when it is not).
func (s *faultSchedule) exemption(p *process, c faultCharge) string {
	for _, k := range s.cuts {
		if k.runner == p.runner && within(c.at, k.from, k.to) {
			return exemptPartition
		}
	}
	if p.exit == 0 && len(p.charges) == 1 && strings.Contains(p.output, "up to date") {
		return exemptProbe
	}
	if !p.killedAt.IsZero() && within(c.at, p.killedAt.Add(-faultKillLost), p.killedAt) {
		return exemptKill
	}
	return exemptNone
}

// check asserts the four invariants of the schedule (TestFaultSchedules).
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
		s.t.Errorf("charge made while no run of its runner was alive (a call that outlived its process): %s", c)
	}
	s.t.Logf("%d runners, %d charges, %d processes, %d partitions", len(s.runners), len(charges), len(s.procs), len(s.cuts))
	s.checkPartitionBound(runs)
	s.checkNoOverlap(runs)
	s.checkPaidOnce(runs)
	s.checkLedger(runs)
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
			s.t.Errorf("runner %d's run paid %d calls while cut from the bucket, more than rate × (margin + api.timeout) = %d", p.runner, n, faultPartitionBound)
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
				s.t.Errorf("two machines paid at once: runner %d charged %s–%s, runner %d charged %s–%s",
					p.runner, pf.Format("15:04:05.000"), pl.Format("15:04:05.000"), q.runner, qf.Format("15:04:05.000"), ql.Format("15:04:05.000"))
			}
		}
	}
}

// checkPaidOnce: no (endpoint, domain) of the month charged twice but for the exemptions.
func (s *faultSchedule) checkPaidOnce(runs []*process) {
	byKey := map[string][]string{}
	counted := map[string]int{}
	exempt := map[string]int{}
	for _, p := range runs {
		for _, c := range p.charges {
			why := s.exemption(p, c)
			byKey[c.key()] = append(byKey[c.key()], c.String()+" "+why)
			if why == exemptNone {
				counted[c.key()]++
			} else {
				exempt[why]++
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(counted)) {
		if counted[k] > 1 {
			s.t.Errorf("%s was paid %d times, none of them explained by a partition, a kill or an up-to-date probe:\n  %s",
				k, counted[k], strings.Join(byKey[k], "\n  "))
		}
	}
	if len(exempt) > 0 {
		s.t.Logf("charges that may repeat others: %v", exempt)
	}
}

// checkLedger: the bucket's ledger of the month is what was charged, less only answers a
// kill -9 caught before their commit (restored into a fresh directory to read it).
func (s *faultSchedule) checkLedger(runs []*process) {
	ledger, err := s.bucketLedger()
	if err != nil {
		s.t.Errorf("read the bucket's ledger: %v", err)
		return
	}
	charged, lost := map[string]int{}, map[string]int{}
	for _, p := range runs {
		for _, c := range p.charges {
			charged[c.key()]++
			if s.exemption(p, c) == exemptKill {
				lost[c.key()]++
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(ledger)) {
		if ledger[k] > charged[k] {
			s.t.Errorf("the bucket's ledger holds %d credits for %s, the simulators charged %d", ledger[k], k, charged[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(charged)) {
		if missing := charged[k] - ledger[k]; missing > lost[k] {
			s.t.Errorf("%s was charged %d times but the bucket's ledger holds %d (%d lost to kill -9 at most)", k, charged[k], ledger[k], lost[k])
		}
	}
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
					s.t.Errorf("%s: the version written by run %s dropped run %s, which the version of run %s held (a stale writer overwrote it)",
						key, v.runID, r, vs[i-1].runID)
				}
			}
		}
	}
	month := s.seen.versions[s.seen.keys[0]]
	if len(month) == 0 {
		s.t.Errorf("no manifest of %s was ever seen in the bucket", testMonth)
		return
	}
	final := month[len(month)-1]
	for r := range all {
		if !final.runs[r] {
			s.t.Errorf("the month's final manifest (run %s) lacks run %s, which an earlier manifest held", final.runID, r)
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
