package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"sitewatch/pipeline/fetchtest"
	"sitewatch/schema"
)

// events is a fake Observer: it names each event it is told, in order. Progress reports
// are kept only when final (the ticker's depend on the clock, not on the run's rules).
type events struct {
	mu    sync.Mutex
	names []string
	last  map[string]Event // the latest event of each kind
}

func (e *events) Event(_ context.Context, ev Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var name string
	switch ev := ev.(type) {
	case RunStarted:
		name = "started"
	case CallLanded:
		name = "landed " + callName(ev.Request)
	case CallFailed:
		name = fmt.Sprintf("failed %s %d", callName(ev.Request), ev.Status)
	case RunStopping:
		name = "stopping"
	case ProgressReport:
		if !ev.Last {
			return
		}
		name = "progress last"
	case RunFinished:
		name = "finished " + ev.Summary.Status
		if !ev.MonthLoaded {
			name += " (no month loaded)"
		}
	default:
		name = fmt.Sprintf("%T", ev)
	}
	e.names = append(e.names, name)
	if e.last == nil {
		e.last = map[string]Event{}
	}
	e.last[strings.Fields(name)[0]] = ev
}

// landed is the calls the observer was told landed, in order.
func (e *events) landed() []string {
	var out []string
	for _, n := range e.names {
		if c, ok := strings.CutPrefix(n, "landed "); ok {
			out = append(out, c)
		}
	}
	return out
}

// watched gives c a fresh recording observer.
func watched(c *core) *events {
	e := &events{}
	c.obs = e
	return e
}

// TestObserverEvents checks what a run tells its observer, in order, for scripted fetches:
// it starts, every answer stored lands (in the order the API answered), every failure is told
// with its status, the run's own stop is told before it ends, the last progress report comes
// before the end, and the end carries the settled status.
func TestObserverEvents(t *testing.T) {
	var obs *events
	runCases(t, []coreCase{{
		name:       "CompleteMonth",
		domains:    []string{"a.com", "b.com"},
		setup:      func(c *core) { obs = watched(c) },
		wantStatus: StatusComplete,
		wantCalls:  []string{"o:a.com", "c", "s:a.com", "o:b.com", "s:b.com"},
		check: func(t *testing.T, c *core, o outcome) {
			want := []string{"started", "landed o:a.com", "landed c", "landed s:a.com", "landed o:b.com", "landed s:b.com",
				"progress last", "finished complete"}
			if !slices.Equal(obs.names, want) {
				t.Errorf("events\n got %q\nwant %q", obs.names, want)
			}
			rep := obs.last["progress"].(ProgressReport)
			if !rep.Planned || rep.Month != jun || rep.CallsDone != 5 || rep.DomainsDone != 2 || rep.Stats.CreditsSpent != 5 {
				t.Errorf("last progress %+v, want planned, %s, 5 calls, 2 domains, 5 credits", rep, jun)
			}
			if st := obs.last["started"].(RunStarted); st.RunID != o.sum.RunID || st.Domains != 2 {
				t.Errorf("started %+v, want run %s of 2 domains", st, o.sum.RunID)
			}
		},
	}, {
		name:    "RejectedDomainAndRateLimit",
		domains: []string{"a.com", "b.com"},
		setup: func(c *core) {
			obs = watched(c)
			c.api.Script(schema.EndpointOverview, "b.com", fetchtest.Answer{Status: 400})
			c.api.Script(schema.EndpointSimilar, "a.com", fetchtest.Answer{Status: 429})
		},
		wantExit:   1,
		wantStatus: StatusFailed,
		check: func(t *testing.T, c *core, o outcome) {
			for _, n := range []string{"failed o:b.com 400", "failed s:a.com 429"} {
				if !slices.Contains(obs.names, n) {
					t.Errorf("events %q lack %q", obs.names, n)
				}
			}
			if slices.Contains(obs.names, "stopping") {
				t.Errorf("events %q: a per-call failure stopped the run", obs.names)
			}
			if got := obs.names[len(obs.names)-1]; got != "finished failed" {
				t.Errorf("last event %q, want finished failed", got)
			}
		},
	}, {
		name: "StorageFailureIsToldBeforeTheEnd",
		setup: func(c *core) {
			obs = watched(c)
			c.store.FailStore, c.store.StoreOK = errors.New("disk full"), 2
		},
		wantExit:    1,
		wantStatus:  StatusFailed,
		ledgerShort: 1,
		check: func(t *testing.T, c *core, o outcome) {
			want := []string{"started", "landed o:a.com", "landed c", "stopping", "progress last", "finished failed"}
			if !slices.Equal(obs.names, want) {
				t.Errorf("events\n got %q\nwant %q", obs.names, want)
			}
			if stop := obs.last["stopping"].(RunStopping); !errors.Is(stop.Cause, c.store.FailStore) {
				t.Errorf("stopping cause %v, want the storage failure", stop.Cause)
			}
		},
	}, {
		name: "MismatchLoadsNoMonth",
		setup: func(c *core) {
			obs = watched(c)
			c.opts.Snapshot = may
		},
		wantExit:   5,
		wantStatus: StatusMonthMismatch,
		check: func(t *testing.T, c *core, o outcome) {
			if got, want := obs.names[len(obs.names)-1], "finished month_mismatch (no month loaded)"; got != want {
				t.Errorf("last event %q, want %q", got, want)
			}
			if got := obs.landed(); len(got) != 0 {
				t.Errorf("landed %v under a month the run does not load", got)
			}
		},
	}})
}
