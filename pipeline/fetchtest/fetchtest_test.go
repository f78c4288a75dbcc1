package fetchtest

import (
	"context"
	"errors"
	"testing"

	"sitewatch/pipeline/model"
	"sitewatch/schema"
)

func overview(d string) model.Request {
	return model.Request{Endpoint: schema.EndpointOverview, Domain: d}
}

// fetch makes reqs and returns the results handed over and FetchAll's error.
func fetch(t *testing.T, f *Fetcher, reqs ...model.Request) ([]model.Result, error) {
	t.Helper()
	var got []model.Result
	err := f.FetchAll(context.Background(), reqs, func(r model.Result) { got = append(got, r) })
	return got, err
}

func TestAnswersAreTheSimulatorsBodiesOfTheMonthServed(t *testing.T) {
	f := New(Options{Month: "2026-06", Balance: 10}).TurnAfter(1, "2026-07")
	got, err := fetch(t, f, overview("a.com"), overview("b.com"))
	if err != nil || len(got) != 2 {
		t.Fatalf("got %d results, error %v; want 2, nil", len(got), err)
	}
	for i, want := range []string{"2026-06", "2026-07"} {
		ov := got[i].Overview
		if got[i].Err != nil || ov == nil || ov.Traffic.Period == nil || *ov.Traffic.Period != want {
			t.Errorf("answer %d: %+v, want a body of %s", i, got[i], want)
		}
		if got[i].Charged != 1 {
			t.Errorf("answer %d charged %d, want 1", i, got[i].Charged)
		}
	}
	if got, want := f.Balance(), int64(8); got != want {
		t.Errorf("balance %d, want %d", got, want)
	}
}

func TestStops(t *testing.T) {
	tests := []struct {
		name      string
		opts      Options
		script    []Answer
		wantCalls int
		wantErr   error
	}{
		{"ErrOutOfCredits", Options{Balance: 1}, nil, 2, model.ErrOutOfCredits},
		{"ErrCreditReserve", Options{Balance: 3, MinCredits: 2}, nil, 1, model.ErrCreditReserve},
		{"ErrRunBudget", Options{Unlimited: true, MaxCreditsPerRun: 2}, nil, 2, model.ErrRunBudget},
		{"ErrUnauthorized", Options{Unlimited: true}, []Answer{{Status: 401}}, 1, model.ErrUnauthorized},
		{"NoStopOn429", Options{Unlimited: true}, []Answer{{Status: 429}}, 3, nil},
		{"NoStopOn400", Options{Unlimited: true}, []Answer{{Status: 400}}, 3, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Month = "2026-06"
			f := New(tt.opts).Script(schema.EndpointOverview, "a.com", tt.script...)
			_, err := fetch(t, f, overview("a.com"), overview("b.com"), overview("c.com"))
			if got, want := len(f.Calls()), tt.wantCalls; got != want {
				t.Errorf("calls %d, want %d", got, want)
			}
			if !errors.Is(err, tt.wantErr) && !(err == nil && tt.wantErr == nil) {
				t.Errorf("error %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr != nil && !model.IsStop(err) {
				t.Errorf("error %v is not a stop", err)
			}
		})
	}
}

func TestUndecodableBodyIsChargedAndRefused(t *testing.T) {
	f := New(Options{Month: "2026-06", Balance: 5}).Script(schema.EndpointOverview, "a.com", Answer{Body: []byte(`{"status":"error"}`)})
	got, err := fetch(t, f, overview("a.com"))
	if err != nil || len(got) != 1 {
		t.Fatalf("got %d results, error %v", len(got), err)
	}
	if !errors.Is(got[0].Err, model.ErrSchemaDrift) || got[0].Charged != 1 || got[0].Body != nil {
		t.Errorf("result %+v, want ErrSchemaDrift, charged 1, no body", got[0])
	}
}

func TestStopEndsTheQueue(t *testing.T) {
	f := New(Options{Month: "2026-06", Unlimited: true})
	reason := errors.New("lease lost")
	var n int
	err := f.FetchAll(context.Background(), []model.Request{overview("a.com"), overview("b.com")}, func(model.Result) {
		n++
		f.Stop(reason)
	})
	if !errors.Is(err, reason) || n != 1 {
		t.Errorf("error %v after %d answers, want %v after 1", err, n, reason)
	}
	select {
	case <-f.Stopped():
	default:
		t.Error("Stopped not closed")
	}
}
