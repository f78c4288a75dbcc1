package pipeline

import (
	"errors"
	"slices"
	"testing"

	"sitewatch/pipeline/fetchtest"
	"sitewatch/pipeline/storetest"
	"sitewatch/schema"
)

// similarLacking holds a month whose c.com lacks only its site-similar answer (newest
// overview age hours old).
func similarLacking(age float64) func(c *core) {
	return func(c *core) {
		c.store.Hold(jun, hoursAgo(age), "a.com", "b.com")
		c.store.HoldBody(jun, "c.com", schema.EndpointOverview, hoursAgo(age))
	}
}

// TestBracket checks that site-similar answers, which carry no date, are stored only between
// two site-overview answers naming the same month; otherwise their credits go on the ledger
// as month_unknown and nothing is stored.
func TestBracket(t *testing.T) {
	runCases(t, []coreCase{{
		name:       "SameMonthStoresThem",
		setup:      similarLacking(48),
		wantStatus: StatusComplete,
		// The closing probe is not the opening one's domain: no call paid twice in a run.
		wantCalls: []string{"o:a.com", "s:c.com", "o:c.com"},
		check: func(t *testing.T, c *core, o outcome) {
			wantLoaded(t, c, jun, "a.com", "b.com", "c.com")
		},
	}, {
		name:       "ClosingProbeOfAnotherMonthDropsThem",
		setup:      func(c *core) { similarLacking(48)(c); c.api.TurnAfter(2, jul) },
		wantExit:   1,
		wantStatus: StatusMonthTurned,
		wantCalls:  []string{"o:a.com", "s:c.com", "o:c.com"},
		check: func(t *testing.T, c *core, o outcome) {
			wantLedger(t, c, map[string]int64{"stored": 2, OutcomeMonthUnknown: 1})
			wantLoaded(t, c, jun, "a.com", "b.com")
			if got, want := c.store.Stored(jul, "c.com"), storetest.Overview; got != want {
				t.Errorf("%s holds %v of c.com, want %v (its own month)", jul, got, want)
			}
		},
	}, {
		name: "FailedClosingProbeTriesAnotherDomain",
		setup: func(c *core) {
			similarLacking(48)(c)
			c.api.Script(schema.EndpointOverview, "c.com", fetchtest.Answer{Status: 500})
		},
		wantStatus: StatusComplete,
		wantCalls:  []string{"o:a.com", "s:c.com", "o:c.com", "o:b.com"},
		check: func(t *testing.T, c *core, o outcome) {
			wantLoaded(t, c, jun, "a.com", "b.com", "c.com")
		},
	}, {
		// b.com's probe answered 500 (never charged), so its overview is still lacking: it
		// closes the bracket and completes the month, where a held domain's overview (a.com's)
		// would have bought nothing and left b.com for the next run.
		name: "UnpaidProbeClosesTheBracket",
		setup: func(c *core) {
			c.store.Hold(jun, hoursAgo(48), "a.com")
			c.store.HoldBody(jun, "b.com", schema.EndpointSimilar, hoursAgo(48))
			c.api.Script(schema.EndpointOverview, "b.com", fetchtest.Answer{Status: 500})
		},
		wantStatus: StatusComplete,
		wantCalls:  []string{"o:b.com", "o:c.com", "s:c.com", "o:b.com"},
		check: func(t *testing.T, c *core, o outcome) {
			wantLoaded(t, c, jun, "a.com", "b.com", "c.com")
			wantLedger(t, c, map[string]int64{"stored": 3})
		},
	}, {
		// A drifted body is charged and would come back: a.com, first in the watchlist, is not
		// asked again in the run (b.com's held overview closes), and the next run fetches it.
		name: "RefusedProbeIsNotAskedAgain",
		setup: func(c *core) {
			c.store.Hold(jun, hoursAgo(48), "b.com")
			c.store.HoldBody(jun, "a.com", schema.EndpointSimilar, hoursAgo(48))
			c.api.Script(schema.EndpointOverview, "a.com", fetchtest.Answer{Body: []byte(`{"traffic":{"history":"drifted"}}`)})
		},
		wantExit:   1,
		wantStatus: StatusFailed,
		wantCalls:  []string{"o:a.com", "o:c.com", "s:c.com", "o:b.com"},
		check: func(t *testing.T, c *core, o outcome) {
			wantLoaded(t, c, jun, "b.com", "c.com")
		},
	}, {
		name: "EveryClosingProbeFailingDropsThem",
		setup: func(c *core) {
			similarLacking(48)(c)
			c.api.Script(schema.EndpointOverview, "c.com", fetchtest.Answer{Status: 500})
			c.api.Script(schema.EndpointOverview, "b.com", fetchtest.Answer{Status: 500})
		},
		wantExit:   1,
		wantStatus: StatusFailed,
		// Two closing probes fail; the third would be a.com's again (the opening probe's):
		// only when no other domain is left does it close its own bracket.
		wantCalls: []string{"o:a.com", "s:c.com", "o:c.com", "o:b.com"},
		check: func(t *testing.T, c *core, o outcome) {
			wantLedger(t, c, map[string]int64{"stored": 1, OutcomeMonthUnknown: 1})
			wantLoaded(t, c, jun, "a.com", "b.com")
		},
	}, {
		name: "ResumedWithTheLackingOverviewAsCloser",
		setup: func(c *core) {
			c.store.Hold(jun, hoursAgo(1), "a.com", "b.com")
		},
		wantStatus: StatusComplete,
		wantCalls:  []string{"s:c.com", "o:c.com"}, // 2 credits, none paid twice
		check: func(t *testing.T, c *core, o outcome) {
			wantLoaded(t, c, jun, "a.com", "b.com", "c.com")
		},
	}, {
		name:       "ResumedOnlyWithinTheDateTrust",
		setup:      func(c *core) { c.store.Hold(jun, hoursAgo(48), "a.com", "b.com") },
		wantStatus: StatusComplete,
		wantCalls:  []string{"o:c.com", "s:c.com", "o:a.com"},
	}, {
		name: "NotResumedUnderSnapshot",
		setup: func(c *core) {
			c.store.Hold(jun, hoursAgo(1), "a.com", "b.com")
			c.opts.Snapshot = jun
		},
		wantStatus: StatusComplete,
		wantCalls:  []string{"o:c.com", "s:c.com", "o:a.com"},
	}, {
		name: "ResumedBracketWhoseCloserTurned",
		setup: func(c *core) {
			c.store.Hold(jun, hoursAgo(1), "a.com", "b.com")
			c.useAPI(fetchtest.Options{Month: jul, Balance: 1000})
		},
		wantExit:   1,
		wantStatus: StatusMonthTurned,
		wantCalls:  []string{"s:c.com", "o:c.com"},
		check: func(t *testing.T, c *core, o outcome) {
			wantLedger(t, c, map[string]int64{"stored": 1, OutcomeMonthUnknown: 1})
			if got := c.store.Stored(jun, "c.com"); got != 0 {
				t.Errorf("%s holds %v of c.com, want nothing", jun, got)
			}
		},
	}})
}

// TestBlindStart checks a warehouse's first run: no lone probe, every call once, only
// site-overview calls until an answer names the month, and the last overview held back when
// the credits may not cover the month.
func TestBlindStart(t *testing.T) {
	runCases(t, []coreCase{{
		name:       "NoLoneProbeEveryCallOnce",
		wantStatus: StatusComplete,
		wantCalls:  []string{"o:a.com", "c", "s:a.com", "o:b.com", "s:b.com", "o:c.com", "s:c.com"},
		check: func(t *testing.T, c *core, o outcome) {
			wantLoaded(t, c, jun, "a.com", "b.com", "c.com")
		},
	}, {
		name:       "FailedFirstOverviewIsFiledUnderTheMonthTheNextNames",
		setup:      func(c *core) { c.api.Script(schema.EndpointOverview, "a.com", fetchtest.Answer{Status: 500}) },
		wantExit:   1,
		wantStatus: StatusFailed,
		wantCalls:  []string{"o:a.com", "o:b.com", "c", "s:a.com", "s:b.com", "o:c.com", "s:c.com"},
		check: func(t *testing.T, c *core, o outcome) {
			wantFetchErrors(t, c, "o:a.com 500")
		},
	}, {
		name: "NoOverviewNamesTheMonth",
		setup: func(c *core) {
			for _, d := range []string{"a.com", "b.com", "c.com"} {
				c.api.Script(schema.EndpointOverview, d, fetchtest.Answer{Status: 500})
			}
		},
		wantExit:   1,
		wantStatus: StatusFailed,
		// Nothing that carries no date is paid for: it could be filed under no month.
		wantCalls: []string{"o:a.com", "o:b.com", "o:c.com"},
		check: func(t *testing.T, c *core, o outcome) {
			if got := c.store.Months(); len(got) != 0 {
				t.Errorf("months stored %v, want none", got)
			}
		},
	}, {
		name: "UndatedFirstOverviewStops",
		setup: func(c *core) {
			c.api.Script(schema.EndpointOverview, "a.com", fetchtest.Answer{Body: undatedOverview(t, "a.com")})
		},
		wantExit:   1,
		wantStatus: StatusFailed,
		wantCalls:  []string{"o:a.com"},
		check: func(t *testing.T, c *core, o outcome) {
			wantLedger(t, c, map[string]int64{OutcomeMonthUnknown: 1})
		},
	}, {
		name:       "CreditsShortHoldBackTheLastOverview",
		setup:      func(c *core) { c.useAPI(fetchtest.Options{Month: jun, Balance: 6}) },
		wantExit:   3,
		wantStatus: StatusStoppedCredits,
		wantCalls:  []string{"o:a.com", "c", "s:a.com", "o:b.com", "s:b.com", "s:c.com", "o:c.com"},
		check: func(t *testing.T, c *core, o outcome) {
			if got, want := c.store.Stored(jun, "c.com"), storetest.Similar; got != want {
				t.Fatalf("c.com holds %v, want %v: a month lacking an overview resumes without paying one twice", got, want)
			}
			// The rerun pays the one call left.
			c.useAPI(fetchtest.Options{Month: jun, Balance: 10})
			if o := c.run(); o.exit != 0 || !slices.Equal(c.callNames(), []string{"o:c.com"}) {
				t.Errorf("rerun: exit %d (%v), calls %v, want 0 and [o:c.com]", o.exit, o.err, c.callNames())
			}
		},
	}, {
		name:       "CreditsEnoughSendEverythingAtOnce",
		setup:      func(c *core) { c.useAPI(fetchtest.Options{Month: jun, Balance: 7}) },
		wantStatus: StatusComplete,
		wantCalls:  []string{"o:a.com", "c", "s:a.com", "o:b.com", "s:b.com", "o:c.com", "s:c.com"},
	}})
}

// TestMonthTurn checks the API turning to a new month mid-run: each answer is stored under its
// own month, the run stops (month_turned, exit 1), and both months are exported.
func TestMonthTurn(t *testing.T) {
	runCases(t, []coreCase{{
		name:       "BothMonthsStoredAndExported",
		setup:      func(c *core) { c.api.TurnAfter(3, jul) },
		wantExit:   1,
		wantStatus: StatusMonthTurned,
		wantCalls:  []string{"o:a.com", "c", "s:a.com", "o:b.com"}, // no call after the turn
		check: func(t *testing.T, c *core, o outcome) {
			var mt *MonthTurnedError
			if !errors.As(o.err, &mt) || mt.From != jun || mt.To != jul {
				t.Errorf("error %v, want a MonthTurnedError from %s to %s", o.err, jun, jul)
			}
			wantLoaded(t, c, jun, "a.com")
			if got, want := c.store.Stored(jul, "b.com"), storetest.Overview; got != want {
				t.Errorf("%s holds %v of b.com, want %v", jul, got, want)
			}
			for _, m := range []string{jun, jul} {
				if c.store.Exported(m) == 0 {
					t.Errorf("%s not exported", m)
				}
			}
			if o.sum.TurnedTo != jul || o.sum.TurnedAnswers != 1 || o.sum.TurnedLoaded != 0 {
				t.Errorf("turned to %q, %d answers, %d loaded; want %s, 1, 0", o.sum.TurnedTo, o.sum.TurnedAnswers, o.sum.TurnedLoaded, jul)
			}
		},
	}, {
		name: "ResumedMonthTurnsAfterTheProbe",
		setup: func(c *core) {
			c.store.Hold(jun, hoursAgo(48), "a.com")
			c.api.TurnAfter(1, jul)
		},
		wantExit:   1,
		wantStatus: StatusMonthTurned,
		// b.com's site-similar answer, made after the turn, is filed under jun, the month of
		// b.com's overview in this run: it carries no date and no overview after it showed the
		// turn before it landed (the known gap of docs/design.md, "The month turns mid-run");
		// c.com's overview names jul and stops the run.
		wantCalls: []string{"o:b.com", "s:b.com", "o:c.com"},
		check: func(t *testing.T, c *core, o outcome) {
			wantLoaded(t, c, jun, "a.com", "b.com")
			if got, want := c.store.Stored(jul, "c.com"), storetest.Overview; got != want {
				t.Errorf("%s holds %v of c.com, want %v", jul, got, want)
			}
		},
	}, {
		name: "ProbeOfANewMonthIsNotATurn",
		setup: func(c *core) {
			c.store.Hold(jun, hoursAgo(48), "a.com", "b.com", "c.com")
			c.useAPI(fetchtest.Options{Month: jul, Balance: 1000})
		},
		wantStatus: StatusComplete,
		wantCalls:  afterProbeOfA,
		check: func(t *testing.T, c *core, o outcome) {
			if o.sum.TurnedTo != "" {
				t.Errorf("turned to %q, want no turn", o.sum.TurnedTo)
			}
			wantLoaded(t, c, jul, "a.com", "b.com", "c.com")
		},
	}})
}
