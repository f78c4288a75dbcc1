package pipeline

import (
	"errors"
	"slices"
	"testing"
	"time"

	"sitewatch/pipeline/fetchtest"
	"sitewatch/pipeline/model"
	"sitewatch/schema"
)

// The whole calls of a month of a.com, b.com, c.com after a probe of a.com's overview.
var afterProbeOfA = []string{"o:a.com", "c", "s:a.com", "o:b.com", "s:b.com", "o:c.com", "s:c.com"}

// TestProbe checks which domain the lone site-overview call that learns the API's month asks
// for: one the candidate month lacks (its credit buys data), the next lacking one when it
// fails, never a held one when lacking ones failed, and one held domain of a complete month.
func TestProbe(t *testing.T) {
	runCases(t, []coreCase{{
		name:       "LackingDomainFirst",
		setup:      func(c *core) { c.store.Hold(jun, hoursAgo(48), "a.com", "b.com") },
		wantStatus: StatusComplete,
		// The probe's answer leaves a site-similar-only plan: the bracket closes at another
		// domain (c.com's overview again would be one call paid twice in a run).
		wantCalls: []string{"o:c.com", "s:c.com", "o:a.com"},
		check: func(t *testing.T, c *core, o outcome) {
			wantLoaded(t, c, jun, "a.com", "b.com", "c.com")
		},
	}, {
		name: "FailedProbeMovesToTheNextLackingDomain",
		setup: func(c *core) {
			c.store.Hold(jun, hoursAgo(48), "a.com")
			c.api.Script(schema.EndpointOverview, "b.com", fetchtest.Answer{Status: 500})
		},
		wantStatus: StatusComplete,
		// b.com's overview is not planned again; it closes the site-similar bracket.
		wantCalls: []string{"o:b.com", "o:c.com", "s:b.com", "s:c.com", "o:b.com"},
		check: func(t *testing.T, c *core, o outcome) {
			wantLoaded(t, c, jun, "a.com", "b.com", "c.com")
			if got := len(o.sum.Failures); got != 1 {
				t.Errorf("failures %d, want 1 (the failed probe)", got)
			}
		},
	}, {
		name: "NeverAHeldDomainWhenLackingOnesFailed",
		setup: func(c *core) {
			c.store.Hold(jun, hoursAgo(48), "a.com")
			c.api.Script(schema.EndpointOverview, "b.com", fetchtest.Answer{Status: 500})
			c.api.Script(schema.EndpointOverview, "c.com", fetchtest.Answer{Status: 503})
		},
		wantExit:   1,
		wantStatus: StatusFailed,
		wantCalls:  []string{"o:b.com", "o:c.com"},
		check: func(t *testing.T, c *core, o outcome) {
			if !errors.Is(o.err, ErrIncomplete) {
				t.Errorf("error %v, want ErrIncomplete", o.err)
			}
			if got := c.api.Stats().CreditsSpent; got != 0 {
				t.Errorf("credits spent %d, want 0", got)
			}
		},
	}, {
		name: "RejectedProbeMovesOnAndCountsAsDone",
		setup: func(c *core) {
			c.store.Hold(jun, hoursAgo(48), "a.com")
			c.api.Script(schema.EndpointOverview, "b.com", fetchtest.Answer{Status: 400}, fetchtest.Answer{Status: 400})
		},
		wantStatus: StatusComplete,
		// b.com's 400 is filed once c.com's answer names the month: its site-similar is not
		// paid for; the closing probe of c.com's site-similar is a.com's (not c.com's again).
		wantCalls: []string{"o:b.com", "o:c.com", "s:c.com", "o:a.com"},
		check: func(t *testing.T, c *core, o outcome) {
			if got, want := o.sum.DomainsRejected, 1; got != want {
				t.Errorf("rejected %d, want %d", got, want)
			}
			wantLoaded(t, c, jun, "a.com", "c.com")
		},
	}, {
		name: "CompleteMonthIsNotProbedAtARejectedDomain",
		setup: func(c *core) {
			c.store.Hold(jun, hoursAgo(48), "b.com", "c.com")
			c.store.Reject(jun, "a.com", "INVALID_DOMAIN")
			c.api.Script(schema.EndpointOverview, "a.com", fetchtest.Answer{Status: 400})
		},
		wantStatus: StatusUpToDate,
		wantCalls:  []string{"o:b.com"},
	}, {
		name: "MonthLackingOnlyRejectedDomainsIsCompleted",
		setup: func(c *core) {
			c.store.Hold(jun, hoursAgo(48), "a.com", "b.com")
			c.api.Script(schema.EndpointOverview, "c.com", fetchtest.Answer{Status: 400}, fetchtest.Answer{Status: 400})
		},
		wantStatus: StatusComplete,
		// c.com's 400 names no month: a held domain's answer does, and the 400 is filed under it.
		wantCalls: []string{"o:c.com", "o:a.com"},
		check: func(t *testing.T, c *core, o outcome) {
			wantFetchErrors(t, c, "o:c.com 400")
			c.useAPI(fetchtest.Options{Month: jun, Balance: 10})
			if o := c.run(); o.sum.Status != StatusUpToDate || !slices.Equal(c.callNames(), []string{"o:a.com"}) {
				t.Errorf("rerun: %s with calls %v, want up_to_date with [o:a.com]", o.sum.Status, c.callNames())
			}
		},
	}, {
		name:       "CompleteMonthProbesOneHeldDomain",
		setup:      func(c *core) { c.store.Hold(may, hoursAgo(48), "a.com", "b.com", "c.com") },
		wantStatus: StatusComplete,
		wantCalls:  afterProbeOfA,
		check: func(t *testing.T, c *core, o outcome) {
			if o.sum.Snapshot != jun {
				t.Errorf("snapshot %q, want %q", o.sum.Snapshot, jun)
			}
			wantLoaded(t, c, jun, "a.com", "b.com", "c.com")
			if got, want := c.store.Answers(may), 7; got != want {
				t.Errorf("answers of %s %d, want %d (untouched)", may, got, want)
			}
		},
	}})
}

// TestDecide checks what the probe's answer decides: a month held complete is up to date (the
// answer not stored, its credit on the ledger as "probe"), a month other than --snapshot
// stores nothing (exit 5), any other month is fetched.
func TestDecide(t *testing.T) {
	complete := func(c *core) { c.store.Hold(jun, hoursAgo(48), "a.com", "b.com", "c.com") }
	runCases(t, []coreCase{{
		name:       "UpToDate",
		setup:      func(c *core) { complete(c); c.store.MarkExported(jun) },
		wantStatus: StatusUpToDate,
		wantCalls:  []string{"o:a.com"},
		check: func(t *testing.T, c *core, o outcome) {
			wantLedger(t, c, map[string]int64{"probe": 1})
			if got, want := c.store.Answers(jun), 7; got != want {
				t.Errorf("answers %d, want %d: nothing rewritten", got, want)
			}
			if got, want := c.store.Exported(jun), 1; got != want {
				t.Errorf("exports %d, want %d: a whole Parquet tree is not written again", got, want)
			}
		},
	}, {
		name:       "UpToDateExportsAMissingParquetTree",
		setup:      complete,
		wantStatus: StatusUpToDate,
		wantCalls:  []string{"o:a.com"},
		check: func(t *testing.T, c *core, o outcome) {
			if got, want := c.store.Exported(jun), 1; got != want {
				t.Errorf("exports %d, want %d", got, want)
			}
		},
	}, {
		name: "UpToDateSaysSinceWhen",
		setup: func(c *core) {
			complete(c)
			finished := hoursAgo(30)
			c.store.StartRun(t.Context(), model.RunRecord{RunID: "earlier", SnapshotMonth: jun, Status: StatusRunning})
			c.store.FinishRun(t.Context(), model.RunRecord{RunID: "earlier", SnapshotMonth: jun, Status: StatusComplete, FinishedAt: &finished})
		},
		wantStatus: StatusUpToDate,
		check: func(t *testing.T, c *core, o outcome) {
			if got, want := o.sum.CompleteSince, hoursAgo(30); !got.Equal(want) {
				t.Errorf("complete since %v, want %v", got, want)
			}
		},
	}, {
		name:       "SnapshotMismatchStoresNothing",
		setup:      func(c *core) { c.opts.Snapshot = may },
		wantExit:   5,
		wantStatus: StatusMonthMismatch,
		wantCalls:  []string{"o:a.com"},
		check: func(t *testing.T, c *core, o outcome) {
			var mm *MonthMismatchError
			if !errors.As(o.err, &mm) || mm.Want != may || mm.Served != jun {
				t.Errorf("error %v, want a MonthMismatchError of %s served %s", o.err, may, jun)
			}
			if got := c.store.Months(); len(got) != 0 {
				t.Errorf("months stored %v, want none", got)
			}
			wantLedger(t, c, map[string]int64{"probe": 1})
		},
	}, {
		name:       "SnapshotServedIsFetched",
		setup:      func(c *core) { c.opts.Snapshot = jun },
		wantStatus: StatusComplete,
		wantCalls:  afterProbeOfA,
	}, {
		name:       "NewMonthStoresTheProbesAnswer",
		setup:      func(c *core) { c.store.Hold(may, hoursAgo(48), "a.com", "b.com", "c.com") },
		wantStatus: StatusComplete,
		check: func(t *testing.T, c *core, o outcome) {
			wantLedger(t, c, map[string]int64{model.OutcomeStored: 7})
		},
	}, {
		name: "ProbeNamingNoMonthStops",
		setup: func(c *core) {
			c.store.Hold(jun, hoursAgo(48), "a.com")
			c.api.Script(schema.EndpointOverview, "b.com", fetchtest.Answer{Body: undatedOverview(t, "b.com")})
		},
		wantExit:   1,
		wantStatus: StatusFailed,
		wantCalls:  []string{"o:b.com"},
		check: func(t *testing.T, c *core, o outcome) {
			// No month to file it under: not in fetch_errors, but paid, so on the ledger.
			wantLedger(t, c, map[string]int64{OutcomeMonthUnknown: 1})
			if got := len(o.sum.Failures); got != 1 {
				t.Errorf("failures %d, want 1", got)
			}
		},
	}, {
		name:       "RefreshRefetchesACompleteMonth",
		setup:      func(c *core) { complete(c); c.opts.Refresh = true },
		wantStatus: StatusComplete,
		wantCalls:  afterProbeOfA,
	}})
}

// TestTrust checks when a month is resumed without a probe: it lacks only country-metadata
// (which carries no month) and its newest overview is at most 24 hours old. A month lacking
// site-similar answers is never trusted; nor is one under --refresh.
func TestTrust(t *testing.T) {
	countriesLacking := func(age float64) func(c *core) {
		return func(c *core) {
			for _, d := range []string{"a.com", "b.com", "c.com"} {
				c.store.HoldBody(jun, d, schema.EndpointOverview, hoursAgo(age))
				c.store.HoldBody(jun, d, schema.EndpointSimilar, hoursAgo(age))
			}
		}
	}
	runCases(t, []coreCase{{
		name:       "CountriesOnlyAnHourOld",
		setup:      countriesLacking(1),
		wantStatus: StatusComplete,
		wantCalls:  []string{"c"},
		check: func(t *testing.T, c *core, o outcome) {
			if o.sum.Snapshot != jun {
				t.Errorf("snapshot %q, want %q", o.sum.Snapshot, jun)
			}
		},
	}, {
		name:       "CountriesOnlyExactly24HoursOld",
		setup:      countriesLacking(24),
		wantStatus: StatusComplete,
		wantCalls:  []string{"c"},
	}, {
		name:       "CountriesOnlyOlderThan24HoursIsProbed",
		setup:      countriesLacking(24 + 1.0/60),
		wantStatus: StatusComplete,
		wantCalls:  []string{"o:a.com", "c"},
	}, {
		name: "SimilarLackingIsNeverTrusted",
		setup: func(c *core) {
			c.store.Hold(jun, hoursAgo(1), "a.com", "b.com")
			c.store.HoldBody(jun, "c.com", schema.EndpointOverview, hoursAgo(1))
		},
		wantStatus: StatusComplete,
		// Opening probe, the site-similar answer, and the closing probe around it (another
		// domain's: the opening one's again would be one call paid twice in a run).
		wantCalls: []string{"o:a.com", "s:c.com", "o:c.com"},
		check: func(t *testing.T, c *core, o outcome) {
			wantLoaded(t, c, jun, "a.com", "b.com", "c.com")
		},
	}, {
		name:       "RefreshIsNeverTrusted",
		setup:      func(c *core) { countriesLacking(1)(c); c.opts.Refresh = true },
		wantStatus: StatusComplete,
		wantCalls:  afterProbeOfA,
	}, {
		// Trust is an assumption with a bound: a month turned within the 24 hours goes
		// unnoticed until the next run's probe; countries carry no month, so nothing is wrong.
		name:       "TrustedMonthIsNotAskedAgain",
		setup:      func(c *core) { countriesLacking(1)(c); c.useAPI(fetchtest.Options{Month: jul, Balance: 1000}) },
		wantStatus: StatusComplete,
		wantCalls:  []string{"c"},
	}})
}

// wantLedger asserts the ledger's credits by outcome.
func wantLedger(t *testing.T, c *core, want map[string]int64) {
	t.Helper()
	got := c.ledgerCredits()
	if len(got) != len(want) {
		t.Errorf("ledger %v, want %v", got, want)
		return
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("ledger %v, want %v", got, want)
			return
		}
	}
}

// wantFetchErrors asserts the fetch_errors rows as "o:domain status [code]".
func wantFetchErrors(t *testing.T, c *core, want ...string) {
	t.Helper()
	var got []string
	for _, e := range c.store.FetchErrors() {
		s := callName(requestOf(e)) + " " + itoa(e.HTTPStatus)
		if e.Code != "" && e.HTTPStatus == 200 {
			s += " " + e.Code
		}
		got = append(got, s)
	}
	if !sameCalls(got, want) {
		t.Errorf("fetch_errors %v, want %v", got, want)
	}
}

var _ = time.Hour
