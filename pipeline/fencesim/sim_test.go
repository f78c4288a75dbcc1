package fencesim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"sitewatch/pipeline/answerlog"
	"sitewatch/pipeline/lease"
	"sitewatch/pipeline/model"
	"sitewatch/pipeline/publish"
	"sitewatch/pipeline/warehouse"
	"sitewatch/schema"
)

// The simulated month and settings: the (36 domains at 3/s, answers in 100–300 ms,
// lease_ttl 6 s), with 30 paid calls so that the faults, drawn for the first 6 s, land
// while the month is being paid.
const (
	simCalls       = 30
	simMonth       = "2026-10"
	simMachines    = 3
	simRate        = 3                      // api.rate_limit, calls/s
	simLatencyMin  = 100 * time.Millisecond // the API's answer latency
	simLatencyMax  = 300 * time.Millisecond
	simTimeout     = time.Second // api.timeout: the lease's in-flight bound
	simTTL         = 6 * time.Second
	simLogInterval = answerlog.DefaultInterval // 500 ms
	simChaos       = 6 * time.Second           // faults are drawn for this long
	simLimit       = 10 * time.Minute          // a schedule not done by then hangs (a failure)
)

// simBound is the guarantees table's bound on what a takeover pays again of one lost run:
// ⌈rate × (log_interval + margin + d)⌉ + 1, d the longest call in flight (simLatencyMax).
func simBound() int {
	margin := lease.TimingFor(simTTL, simTimeout).Margin
	window := simLogInterval + margin + simLatencyMax
	return int((int64(window)*simRate+int64(time.Second)-1)/int64(time.Second)) + 1
}

// Offsets within the millisecond (every drawn duration is whole milliseconds): each machine
// acts at instants of its own, and a fault on it at instants of their own, so no two actors
// ever wake at the same fake instant and a seed replays in one order.
const (
	offsetMachine = 100 * time.Microsecond // × (machine+1): a machine's runs start on its own instants
	offsetCut     = 50 * time.Microsecond  // + the machine's: a cut starts
	offsetHeal    = 60 * time.Microsecond  // a cut heals
	offsetKill    = 70 * time.Microsecond  // kill -9
	offsetStart   = 80 * time.Microsecond  // a machine started
	offsetAnswer  = 37 * time.Microsecond  // an answer arrives, after its whole-ms latency
)

// Streams of the seed: each actor draws from its own.
const (
	streamChaos   uint64 = 2
	streamMachine uint64 = 100 // + machine
)

func stream(seed, actor uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, actor)) }

func drawDuration(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rng.IntN(int((hi-lo)/time.Millisecond)+1))*time.Millisecond
}

// call is the i-th paid call of the month.
func call(i int) string { return fmt.Sprintf("d%02d.example", i) }

// payment is one charge of the global ledger: the API's view of who paid what, when.
type payment struct {
	call      string
	machine   int
	run       string
	start     time.Duration // admitted and sent (since the schedule began)
	end       time.Duration // answered (committed) or abandoned by a kill
	committed bool
}

// ack is one cut of a run's answer log the bucket acknowledged: everything the run
// committed before cut is in the bucket since at.
type ack struct{ at, cut time.Duration }

// runRec is what the checker knows of one run.
type runRec struct {
	id      string
	machine int
	pulled  bool
	pullAt  time.Duration
	acks    []ack
	outcome string
}

// sim is one seeded schedule.
type sim struct {
	seed      uint64
	answerLog bool    // the test-only switch: false runs every machine without its answer log
	script    []fault // faults to make instead of drawn ones (a scenario)
	b         *bucket
	t0        time.Time
	bound     int

	mu       sync.Mutex
	events   []event
	ledger   []*payment
	runs     []*runRec
	wipes    map[int][]time.Duration
	machines []*machine
	hung     bool
}

type event struct {
	at      time.Duration
	machine int // -1: the chaos
	text    string
}

func (s *sim) since() time.Duration { return time.Since(s.t0) }

func (s *sim) logf(machine int, format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, event{at: s.since(), machine: machine, text: fmt.Sprintf(format, args...)})
}

// eventLog is the schedule's events in time order, the chaos's first at an instant, then
// each machine's in the order it logged them (only a machine's loop goroutine logs, and no
// two actors act at one instant: see the offsets).
func (s *sim) eventLog() string {
	s.mu.Lock()
	evs := append([]event(nil), s.events...)
	s.mu.Unlock()
	sort.SliceStable(evs, func(i, j int) bool {
		a, b := evs[i], evs[j]
		if a.at != b.at {
			return a.at < b.at
		}
		return a.machine < b.machine
	})
	var sb strings.Builder
	for _, e := range evs {
		who := "chaos"
		if e.machine >= 0 {
			who = fmt.Sprintf("m%d", e.machine)
		}
		fmt.Fprintf(&sb, "%12s %-5s %s\n", fmt.Sprintf("+%.6fs", e.at.Seconds()), who, e.text)
	}
	return sb.String()
}

// newRun registers a run of machine m; run IDs are numbered in the order runs start, which
// a seed replays (machines start at instants of their own).
func (s *sim) newRun(m int) *runRec {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := &runRec{id: fmt.Sprintf("r%02d-m%d", len(s.runs)+1, m), machine: m}
	s.runs = append(s.runs, r)
	return r
}

func (s *sim) pay(p *payment) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ledger = append(s.ledger, p)
}

func (s *sim) update(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
}

// machine is one runner: its warehouse (the charges it holds), its stream, its runs.
type machine struct {
	id  int
	s   *sim
	cl  client
	rng *rand.Rand // drawn only by the machine's loop goroutine

	mu      sync.Mutex
	local   map[string]model.Charge // run/call → the ledger row: the warehouse
	kill    context.CancelFunc      // the run in progress's
	running bool
}

func (m *machine) offset() time.Duration { return time.Duration(m.id+1) * offsetMachine }

// sleepOnOwnInstant sleeps at least d, until the next instant of this machine's own.
func (m *machine) sleepOnOwnInstant(ctx context.Context, d time.Duration) error {
	target := time.Now().Add(d)
	at := target.Truncate(time.Millisecond).Add(m.offset())
	if at.Before(target) {
		at = at.Add(time.Millisecond)
	}
	return sleep(ctx, time.Until(at))
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// start starts the machine's loop unless it runs; it reports whether it started it.
func (m *machine) start(ctx context.Context, wg *sync.WaitGroup) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.running {
		return false
	}
	m.running = true
	wg.Add(1)
	go func() {
		defer wg.Done()
		m.loop(ctx)
	}()
	return true
}

// loop runs the month until a run of it completes, pausing between attempts (the recipe
// `run --restore-if-missing; publish`, retried until it exits 0).
func (m *machine) loop(ctx context.Context) {
	defer func() { m.mu.Lock(); m.running = false; m.mu.Unlock() }()
	pause := time.Duration(0)
	for {
		if m.sleepOnOwnInstant(ctx, pause) != nil {
			return
		}
		rctx, kill := context.WithCancel(ctx)
		m.mu.Lock()
		m.kill = kill
		m.mu.Unlock()
		done := m.run(rctx)
		m.mu.Lock()
		m.kill = nil
		m.mu.Unlock()
		kill()
		if done || ctx.Err() != nil {
			return
		}
		pause = drawDuration(m.rng, 200*time.Millisecond, 1500*time.Millisecond)
	}
}

// killRun is kill -9 of the run in progress, if any; wipe deletes the warehouse too.
func (m *machine) killRun(wipe bool) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	what := "nothing running"
	if m.kill != nil {
		m.kill()
		m.kill = nil
		what = "run killed"
	}
	if wipe {
		m.local = map[string]model.Charge{}
		m.s.update(func() { m.s.wipes[m.id] = append(m.s.wipes[m.id], m.s.since()) })
		what += ", warehouse wiped"
	}
	return what
}

func (m *machine) holds() map[string]bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	held := map[string]bool{}
	for _, c := range m.local {
		held[c.Domain] = true
	}
	return held
}

func (m *machine) keep(rows []model.Charge) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range rows {
		m.local[c.RunID+"/"+c.Domain] = c
	}
}

func (m *machine) rows() []model.Charge {
	m.mu.Lock()
	defer m.mu.Unlock()
	rows := make([]model.Charge, 0, len(m.local))
	for _, c := range m.local {
		rows = append(rows, c)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].RunID+rows[i].Domain < rows[j].RunID+rows[j].Domain })
	return rows
}

// run is one run of the month: take the lease, pull, pay what is not held under the fence,
// close the answer log, publish when complete, release. It reports whether the month is
// complete and published.
func (m *machine) run(ctx context.Context) bool {
	r := m.s.newRun(m.id)
	l := lease.New(m.cl, lease.Options{TTL: simTTL, InFlight: simTimeout, Command: "run " + r.id})
	h, err := l.Hold(ctx)
	if err != nil {
		m.end(r, "no lease: "+short(err))
		return false
	}
	m.s.logf(m.id, "%s holds the lease", r.id)
	defer func() {
		if ctx.Err() == nil { // kill -9 releases nothing: the lease expires
			h.Release()
		}
	}()
	folds, err := m.pull(ctx, r)
	if err != nil {
		m.end(r, "pull failed: "+short(err))
		return false
	}
	w, stop := m.startLog(ctx, r, h)
	paid, err := m.pay(ctx, r, h, w)
	if ctx.Err() != nil { // kill -9: the log's last cut is never made
		m.end(r, fmt.Sprintf("killed after %d paid calls", paid))
		return false
	}
	acked := stop()
	if err != nil {
		m.end(r, fmt.Sprintf("stopped after %d paid calls: %s", paid, short(err)))
		return false
	}
	if err := m.publish(ctx, h, folds, acked); err != nil {
		m.end(r, fmt.Sprintf("paid %d calls; publish failed: %s", paid, short(err)))
		return false
	}
	m.end(r, fmt.Sprintf("complete: paid %d calls, published", paid))
	return true
}

func (m *machine) end(r *runRec, outcome string) {
	m.s.update(func() { r.outcome = outcome })
	m.s.logf(m.id, "%s ends: %s", r.id, outcome)
}

// short is an error's last clause (the lease's messages are long).
func short(err error) string {
	if errors.Is(err, context.Canceled) {
		return "killed"
	}
	var held *lease.HeldError
	if errors.As(err, &held) {
		return "held by " + held.Holder.Command
	}
	msg := err.Error()
	if i := strings.Index(msg, ": "); i > 0 && errors.Is(err, lease.ErrLost) {
		msg = "lease lost (" + msg[i+2:min(len(msg), i+60)] + "…)"
	}
	return msg
}

// pull takes every run's segments and the month's published ledger into the warehouse, as
// the run's sync does; it returns the segments read (the publish folds them).
func (m *machine) pull(ctx context.Context, r *runRec) ([]publish.LogObject, error) {
	m.s.update(func() { r.pulled, r.pullAt = true, m.s.since() })
	objs, err := m.cl.ListLogs(ctx)
	if err != nil {
		return nil, err
	}
	rows, read, err := answerlog.Read(ctx, m.cl, objs)
	if err != nil {
		return nil, err
	}
	m.keep(rows.Charges)
	published, _, err := m.readMonth(ctx)
	if err != nil {
		return nil, err
	}
	m.keep(published)
	m.s.logf(m.id, "%s pulled %d segments (%d charges) and %d published charges: %d of %d calls held",
		r.id, len(read), len(rows.Charges), len(published), len(m.holds()), simCalls)
	return read, nil
}

// monthKey holds the month's published ledger (the month's tables, in one object): a line
// "run call" per charge (JSON of whole rows was a fifth of the simulation's time).
const monthKey = "sitewatch/run_calls/snapshot_month=" + simMonth + "/ledger.txt"

func (m *machine) readMonth(ctx context.Context) ([]model.Charge, string, error) {
	body, etag, found, err := m.cl.GetSmall(ctx, monthKey)
	if err != nil || !found {
		return nil, "", err
	}
	rows, err := parseLedger(body)
	return rows, etag, err
}

func formatLedger(rows []model.Charge) []byte {
	var b strings.Builder
	for _, c := range rows {
		fmt.Fprintf(&b, "%s %s\n", c.RunID, c.Domain)
	}
	return []byte(b.String())
}

func parseLedger(body []byte) ([]model.Charge, error) {
	var rows []model.Charge
	for _, line := range strings.Split(strings.TrimSuffix(string(body), "\n"), "\n") {
		run, domain, ok := strings.Cut(line, " ")
		if !ok {
			return nil, fmt.Errorf("the month's ledger %s: line %q is not \"run call\"", monthKey, line)
		}
		rows = append(rows, model.Charge{RunID: run, SnapshotMonth: simMonth, Domain: domain, Endpoint: schema.EndpointOverview, HTTPStatus: 200, Credits: 1, Outcome: "stored"})
	}
	return rows, nil
}

// recordingFence passes the log's acknowledgements to the lease and records them.
type recordingFence struct {
	h *lease.Held
	s *sim
	r *runRec
}

func (f recordingFence) Logged(cut time.Time) {
	f.s.update(func() { f.r.acks = append(f.r.acks, ack{at: f.s.since(), cut: cut.Sub(f.s.t0)}) })
	f.h.Logged(cut)
}

func (f recordingFence) Renewals() <-chan struct{} { return f.h.Renewals() }

// startLog starts the run's answer log as answerlog.Starter does (WatchLog, then the
// writer's loop); stop makes its last cut and returns the segments acknowledged. Without
// the answer log (the test-only switch) there is neither.
func (m *machine) startLog(ctx context.Context, r *runRec, h *lease.Held) (*answerlog.Writer, func() map[string]publish.SeenLog) {
	if !m.s.answerLog {
		return nil, func() map[string]publish.SeenLog { return nil }
	}
	// The writer's Attempt is the margin (as answerlog.Starter sets it) plus 13 µs: at exactly
	// 1.5 s, three intervals, a hung write's deadline fell on a tick of the writer's own loop,
	// and whether the ticker dropped that tick or kept it raced (a seed did not replay).
	margin := lease.TimingFor(simTTL, simTimeout).Margin
	w := answerlog.New(m.cl, answerlog.Options{RunID: r.id, Interval: simLogInterval, Attempt: margin + 13*time.Microsecond, Fence: recordingFence{h: h, s: m.s, r: r}})
	h.WatchLog(simLogInterval)
	lctx, cancel := context.WithCancel(ctx)
	go w.Run(lctx)
	return w, func() map[string]publish.SeenLog {
		defer cancel()
		return w.Close(ctx, 3*margin)
	}
}

// pay pays every call the warehouse does not hold, one at a time at the API's rate, each
// admitted by the fence; an answer is committed (to the warehouse and the log) when it
// arrives. It returns how many it paid.
func (m *machine) pay(ctx context.Context, r *runRec, h *lease.Held, w *answerlog.Writer) (int, error) {
	held := m.holds()
	next := time.Now()
	paid := 0
	for i := range simCalls {
		c := call(i)
		if held[c] {
			continue
		}
		if err := sleep(ctx, time.Until(next)); err != nil {
			return paid, err
		}
		if err := h.Admit(ctx); err != nil {
			return paid, err
		}
		p := &payment{call: c, machine: m.id, run: r.id, start: m.s.since()}
		m.s.pay(p)
		paid++
		next = time.Now().Add(time.Second / simRate)
		latency := drawDuration(m.rng, simLatencyMin, simLatencyMax) + offsetAnswer
		err := sleep(ctx, latency)
		m.s.update(func() { p.end = m.s.since() })
		if err != nil {
			m.s.logf(m.id, "%s paid %s, killed before its answer", r.id, c)
			return paid, err
		}
		m.commit(r, p, w)
	}
	return paid, nil
}

// commit stores an answer: its ledger row in the warehouse and in the log's next cut (the
// warehouse's OnCommit callback).
func (m *machine) commit(r *runRec, p *payment, w *answerlog.Writer) {
	at := m.s.t0.Add(p.start)
	charge := model.Charge{RunID: r.id, SnapshotMonth: simMonth, Domain: p.call, Endpoint: schema.EndpointOverview,
		HTTPStatus: 200, Credits: 1, FetchedAt: at, Outcome: "stored"}
	m.keep([]model.Charge{charge})
	if w != nil {
		w.Take(warehouse.LogRows{
			Raws:    []warehouse.LogRaw{{SnapshotMonth: simMonth, Domain: p.call, Endpoint: schema.EndpointOverview, FetchedAt: at, Body: []byte("{}"), Encoding: "identity", RunID: r.id}},
			Charges: []model.Charge{charge},
		})
	}
	m.s.update(func() { p.committed = true })
	m.s.logf(m.id, "%s paid %s (sent %+.6fs)", r.id, p.call, p.start.Seconds())
}

// publish writes the warehouse's ledger of the month to the bucket (merged into what is
// there, If-Match: nothing another machine published is dropped) and folds the segments it
// read and wrote: their rows are in it now.
func (m *machine) publish(ctx context.Context, h *lease.Held, read []publish.LogObject, acked map[string]publish.SeenLog) error {
	if err := context.Cause(h.Context()); err != nil {
		return err
	}
	for {
		old, etag, err := m.readMonth(ctx)
		if err != nil {
			return err
		}
		m.keep(old)
		body := formatLedger(m.rows())
		_, err = m.cl.PutConditional(ctx, monthKey, body, etag)
		if errors.Is(err, publish.ErrPrecondition) {
			continue
		}
		if err != nil {
			return err
		}
		break
	}
	folds := len(read) + len(acked)
	for _, o := range read {
		_ = m.cl.DeleteConditional(ctx, o.Key, o.ETag) // gone or changed: a later publish folds it
	}
	keys := make([]string, 0, len(acked))
	for key := range acked {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		_ = m.cl.DeleteConditional(ctx, key, acked[key].ETag)
	}
	m.s.logf(m.id, "published %d charges, folded %d segments", len(m.rows()), folds)
	return nil
}
