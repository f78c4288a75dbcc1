package pipeline

import (
	"errors"
	"fmt"
	"testing"

	"sitewatch/pipeline/fetchtest"
	"sitewatch/pipeline/model"
	"sitewatch/schema"
)

// TestStopRules checks what ends a run early and its exit: 402 and the credit rules (reserve,
// cap) exit 3, a rejected key exits 4, failures that persist or a storage failure exit 1; a
// per-call failure (429 after retries, 400) never stops the run.
func TestStopRules(t *testing.T) {
	runCases(t, []coreCase{{
		name:       "OutOfCredits402",
		setup:      func(c *core) { c.useAPI(fetchtest.Options{Month: jun, Balance: 3}) },
		wantExit:   3,
		wantStatus: StatusStoppedCredits,
		wantCalls:  []string{"o:a.com", "c", "s:a.com", "o:b.com"},
		check: func(t *testing.T, c *core, o outcome) {
			wantErrorIs(t, o.err, model.ErrOutOfCredits)
			wantLoaded(t, c, jun, "a.com")
		},
	}, {
		name: "OutOfCreditsOnTheProbe",
		setup: func(c *core) {
			c.store.Hold(jun, hoursAgo(48), "a.com")
			c.useAPI(fetchtest.Options{Month: jun, Balance: 0})
		},
		wantExit:   3,
		wantStatus: StatusStoppedCredits,
		wantCalls:  []string{"o:b.com"},
		check: func(t *testing.T, c *core, o outcome) {
			if got, want := c.store.Answers(jun), 3; got != want {
				t.Errorf("answers %d, want %d (only what was held)", got, want)
			}
		},
	}, {
		name: "ReserveMinCredits",
		setup: func(c *core) {
			c.cfg.API.MinCredits = 8
			c.useAPI(fetchtest.Options{Month: jun, Balance: 10, MinCredits: 8})
		},
		wantExit:   3,
		wantStatus: StatusStoppedCredits,
		wantCalls:  []string{"o:a.com", "c"},
		check: func(t *testing.T, c *core, o outcome) {
			wantErrorIs(t, o.err, model.ErrCreditReserve)
			if got, want := c.api.Balance(), int64(8); got != want {
				t.Errorf("balance %d, want %d: the reserve is kept", got, want)
			}
		},
	}, {
		name: "MaxCreditsPerRun",
		setup: func(c *core) {
			c.cfg.API.MaxCreditsPerRun = 4
			c.useAPI(fetchtest.Options{Month: jun, Balance: 1000, MaxCreditsPerRun: 4})
		},
		wantExit:   3,
		wantStatus: StatusStoppedCredits,
		// The cap may not cover the month: the last overview is held back (blindstart.go).
		wantCalls: []string{"o:a.com", "c", "s:a.com", "o:b.com"},
		check: func(t *testing.T, c *core, o outcome) {
			wantErrorIs(t, o.err, model.ErrRunBudget)
			if got, want := o.sum.CreditsSpent, 4; got != want {
				t.Errorf("credits %d, want %d", got, want)
			}
		},
	}, {
		name:       "KeyRejected401",
		setup:      func(c *core) { c.api.Script(schema.EndpointOverview, "a.com", fetchtest.Answer{Status: 401}) },
		wantExit:   4,
		wantStatus: StatusUnauthorized,
		wantCalls:  []string{"o:a.com"},
		check: func(t *testing.T, c *core, o outcome) {
			if got := c.store.Months(); len(got) != 0 {
				t.Errorf("months stored %v, want none", got)
			}
		},
	}, {
		name:       "KeyRejectedMidRunKeepsWhatWasStored",
		setup:      func(c *core) { c.api.Script(schema.EndpointSimilar, "b.com", fetchtest.Answer{Status: 401}) },
		wantExit:   4,
		wantStatus: StatusUnauthorized,
		wantCalls:  []string{"o:a.com", "c", "s:a.com", "o:b.com", "s:b.com"},
		check: func(t *testing.T, c *core, o outcome) {
			wantLoaded(t, c, jun, "a.com")
		},
	}, {
		name:       "RateLimitedCallIsAFailureNotAStop",
		setup:      func(c *core) { c.api.Script(schema.EndpointSimilar, "b.com", fetchtest.Answer{Status: 429}) },
		wantExit:   1,
		wantStatus: StatusFailed,
		wantCalls:  []string{"o:a.com", "c", "s:a.com", "o:b.com", "s:b.com", "o:c.com", "s:c.com"},
		check: func(t *testing.T, c *core, o outcome) {
			wantErrorIs(t, o.err, ErrIncomplete)
			wantFetchErrors(t, c, "s:b.com 429")
			wantLoaded(t, c, jun, "a.com", "c.com")
		},
	}, {
		// The example of docs/design.md, "Testing the core".
		name: "HeldDomainsAreNotFetchedAgain",
		setup: func(c *core) {
			c.store.Hold(jun, hoursAgo(48), "a.com", "b.com")
			c.api.Script(schema.EndpointSimilar, "c.com", fetchtest.Answer{Status: 429})
		},
		wantExit:   1,
		wantStatus: StatusFailed,
		wantCalls:  []string{"o:c.com", "s:c.com"},
		check: func(t *testing.T, c *core, o outcome) {
			wantLoaded(t, c, jun, "a.com", "b.com")
		},
	}, {
		name:       "RejectedDomainCompletesTheMonth",
		setup:      func(c *core) { c.api.Script(schema.EndpointSimilar, "b.com", fetchtest.Answer{Status: 400}) },
		wantStatus: StatusComplete,
		check: func(t *testing.T, c *core, o outcome) {
			if got, want := o.sum.APIRejections, map[string]string{"b.com": "INVALID_DOMAIN"}; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("rejections %v, want %v", got, want)
			}
		},
	}, {
		name:    "FailuresInARowStop",
		domains: domainsN(12),
		setup: func(c *core) {
			c.store.HoldBody(jun, "", schema.EndpointCountries, hoursAgo(48))
			for i, d := range domainsN(12) {
				if i > 0 {
					c.api.Script(schema.EndpointOverview, d, fetchtest.Answer{Status: 502})
				}
				c.api.Script(schema.EndpointSimilar, d, fetchtest.Answer{Status: 502})
			}
		},
		wantExit:   1,
		wantStatus: StatusFailed,
		check: func(t *testing.T, c *core, o outcome) {
			wantErrorIs(t, o.err, ErrUpstreamFailing)
			if got, want := len(c.api.Calls()), 1+maxFailStreak; got != want {
				t.Errorf("calls %d, want %d: the probe, then %d failures in a row", got, want, maxFailStreak)
			}
		},
	}, {
		name:        "StorageFailureStops",
		setup:       func(c *core) { c.store.FailStore, c.store.StoreOK = errors.New("disk full"), 2 },
		wantExit:    1,
		wantStatus:  StatusFailed,
		ledgerShort: 1, // the failed write held the answer's ledger row too: a rerun pays it again
		// The failing answer was paid: the calls already admitted finish, nothing new starts.
		wantCalls: []string{"o:a.com", "c", "s:a.com"},
		check: func(t *testing.T, c *core, o outcome) {
			if o.err == nil || !errors.Is(o.err, c.store.FailStore) {
				t.Errorf("error %v, want the storage failure", o.err)
			}
		},
	}})
}

// TestLedger checks the credit ledger: every charged answer is a run_calls row of the run
// (stored, refused, the probe of a run that stores nothing, month_unknown), an answer not
// charged is none, and the runs row carries the run's spend.
func TestLedger(t *testing.T) {
	runCases(t, []coreCase{{
		name:       "OneRowPerChargedAnswer",
		wantStatus: StatusComplete,
		check: func(t *testing.T, c *core, o outcome) {
			rows := c.store.Ledger()
			if got, want := len(rows), len(c.api.Calls()); got != want {
				t.Errorf("ledger rows %d, want %d (one per call)", got, want)
			}
			for _, row := range rows {
				if row.Outcome != model.OutcomeStored || row.Credits != 1 || row.Source != "direct" || row.Month != jun {
					t.Errorf("ledger row %+v, want stored, 1 credit, source direct, month %s", row, jun)
				}
			}
		},
	}, {
		name: "RefusedBodyIsOnTheLedger",
		setup: func(c *core) {
			c.api.Script(schema.EndpointSimilar, "b.com", fetchtest.Answer{Body: []byte(`{"status":"error"}`)})
		},
		wantExit:   1,
		wantStatus: StatusFailed,
		check: func(t *testing.T, c *core, o outcome) {
			wantLedger(t, c, map[string]int64{model.OutcomeStored: 6, model.OutcomeRefused: 1})
			wantFetchErrors(t, c, "s:b.com 200")
		},
	}, {
		name:       "UnchargedAnswersAreNotRows",
		setup:      func(c *core) { c.api.Script(schema.EndpointSimilar, "b.com", fetchtest.Answer{Status: 500}) },
		wantExit:   1,
		wantStatus: StatusFailed,
		check: func(t *testing.T, c *core, o outcome) {
			if got, want := len(c.store.Ledger()), 6; got != want {
				t.Errorf("ledger rows %d, want %d", got, want)
			}
		},
	}, {
		name:       "RunsRowCarriesTheSpend",
		setup:      func(c *core) { c.useAPI(fetchtest.Options{Month: jun, Balance: 5}) },
		wantExit:   3,
		wantStatus: StatusStoppedCredits,
		check: func(t *testing.T, c *core, o outcome) {
			runs := c.store.Runs()
			if len(runs) != 1 {
				t.Fatalf("runs %d, want 1", len(runs))
			}
			r := runs[0]
			if r.CreditsSpent != 5 || r.DomainsLoaded != o.sum.DomainsLoaded || r.FinishedAt == nil || r.CreditsRemaining == nil || *r.CreditsRemaining != 0 {
				t.Errorf("runs row %+v, want 5 credits spent, 0 left, %d loaded, finished", r, o.sum.DomainsLoaded)
			}
		},
	}})
}

func wantErrorIs(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("error %v, want %v", err, target)
	}
}

func domainsN(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("d%02d.com", i)
	}
	return out
}
