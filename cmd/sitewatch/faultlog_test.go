//go:build faultsoak

package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"sitewatch/pipeline/atlas/atlastest"
)

// charge is one credit a simulator charged, stamped by the server when it answered 200.
type faultCharge struct {
	at       time.Time
	runner   int
	endpoint string
	domain   string
}

func (c faultCharge) key() string { return c.endpoint + " " + c.domain }

// faultChargeLog is every charge of one runner's simulator, in order.
type faultChargeLog struct {
	mu      sync.Mutex
	charges []faultCharge
	// holdAt, when set, holds every request that arrives once holdAt calls were charged until
	// held is closed: a test's fault then lands between two known charges, whatever the load.
	holdAt int
	held   chan struct{}
}

// holdAfter holds the requests after the n-th charge until release.
func (l *faultChargeLog) holdAfter(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.holdAt, l.held = n, make(chan struct{})
}

// release lets the held requests through.
func (l *faultChargeLog) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held != nil {
		close(l.held)
		l.holdAt, l.held = 0, nil
	}
}

// wait holds r while a hold is set and reached.
func (l *faultChargeLog) wait(r *http.Request) {
	l.mu.Lock()
	held := l.held
	hold := held != nil && len(l.charges) >= l.holdAt
	l.mu.Unlock()
	if hold {
		select {
		case <-held:
		case <-r.Context().Done():
		}
	}
}

func (l *faultChargeLog) all() []faultCharge {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]faultCharge(nil), l.charges...)
}

// okWriter calls onOK when the handler answers 200: the simulator charges a 200 (and only a
// 200) in the same step, so the stamp is the charge's time on the server's side.
type okWriter struct {
	http.ResponseWriter
	onOK func()
}

func (w *okWriter) WriteHeader(code int) {
	if code == http.StatusOK {
		w.onOK()
	}
	w.ResponseWriter.WriteHeader(code)
}

// loggedSimulator starts a simulator with one key for runner over loopback HTTP and logs
// every charge it makes.
func loggedSimulator(t *testing.T, runner int, opts atlastest.Options) (string, *faultChargeLog) {
	t.Helper()
	sim, err := atlastest.NewHandler(opts)
	if err != nil {
		t.Fatal(err)
	}
	log := &faultChargeLog{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		endpoint := strings.TrimPrefix(r.URL.Path, "/atlas/")
		domain, _ := atlastest.NormalizeDomain(r.URL.Query().Get("url"))
		log.wait(r)
		sim.ServeHTTP(&okWriter{ResponseWriter: w, onOK: func() {
			log.mu.Lock()
			log.charges = append(log.charges, faultCharge{at: time.Now(), runner: runner, endpoint: endpoint, domain: domain})
			log.mu.Unlock()
		}}, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, log
}

// process is one sitewatch process a runner ran.
type process struct {
	runner     int
	command    string
	start, end time.Time
	exit       int       // -1: killed
	killedAt   time.Time // zero unless killed
	output     string
	charges    []faultCharge
}

// cut is a partition of one runner from the bucket.
type cut struct {
	runner   int
	from, to time.Time
}

// within says whether at falls in [from, to].
func within(at, from, to time.Time) bool { return !at.Before(from) && !at.After(to) }

// attribute gives every charge to the run process of its runner that was alive when it was
// made; a charge no process explains is returned apart (a leaked call: a finding in itself).
func attribute(procs []*process, charges []faultCharge) (orphans []faultCharge) {
	for _, c := range charges {
		owner := (*process)(nil)
		for _, p := range procs {
			if p.runner == c.runner && p.command == "run" && within(c.at, p.start, p.end) {
				owner = p
				break
			}
		}
		if owner == nil {
			orphans = append(orphans, c)
			continue
		}
		owner.charges = append(owner.charges, c)
	}
	return orphans
}

// describe is a charge for a failure message.
func (c faultCharge) String() string {
	return fmt.Sprintf("runner %d %s %s at %s", c.runner, c.endpoint, c.domain, c.at.Format("15:04:05.000"))
}

// sortCharges orders charges by time.
func sortCharges(cs []faultCharge) {
	sort.Slice(cs, func(i, j int) bool { return cs[i].at.Before(cs[j].at) })
}
