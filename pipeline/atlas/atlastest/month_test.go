package atlastest_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"sitewatch/pipeline/atlas/atlastest"
)

// overviewMonth fetches an overview and returns meta.snapshot_date, traffic.period and the
// month of the last history item, read from the raw JSON.
func overviewMonth(t *testing.T, s *atlastest.Server, domain string) (date, period, last string) {
	t.Helper()
	r := get(t, s, "/atlas/site-overview?url="+domain, bearer...)
	if r.status != 200 {
		t.Fatalf("overview %s: status %d: %s", domain, r.status, r.body)
	}
	return bodyMonth(t, r.body)
}

// bodyMonth returns an overview body's meta.snapshot_date, traffic.period and the month of
// its last history item.
func bodyMonth(t *testing.T, body []byte) (date, period, last string) {
	t.Helper()
	m := object(t, body)
	date, _ = m["meta"].(map[string]any)["snapshot_date"].(string)
	tr := m["traffic"].(map[string]any)
	period, _ = tr["period"].(string)
	if h, _ := tr["history"].([]any); len(h) > 0 {
		last, _ = h[len(h)-1].(map[string]any)["month"].(string)
	}
	return date, period, last
}

func wantMonth(t *testing.T, s *atlastest.Server, month string) {
	t.Helper()
	if got := s.Month(); got != month {
		t.Errorf("Month() = %s, want %s", got, month)
	}
	date, period, last := overviewMonth(t, s, "example.com")
	wantBodyMonth(t, date, period, last, month)
}

func wantBodyMonth(t *testing.T, date, period, last, month string) {
	t.Helper()
	if date != month+"-01" || period != month || last != month+"-01" {
		t.Errorf("overview: snapshot_date %s, period %s, last history month %s; want %s-01, %s, %s-01",
			date, period, last, month, month, month)
	}
}

// wantHandlerMonth is wantMonth for a handler called in memory (in a synctest bubble).
func wantHandlerMonth(t *testing.T, h *atlastest.Handler, month string) {
	t.Helper()
	if got := h.Month(); got != month {
		t.Errorf("Month() = %s, want %s", got, month)
	}
	req := httptest.NewRequest(http.MethodGet, "/atlas/site-overview?url=example.com", nil)
	req.Header.Set(bearer[0], bearer[1])
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("overview: status %d: %s", rec.Code, rec.Body)
	}
	date, period, last := bodyMonth(t, rec.Body.Bytes())
	wantBodyMonth(t, date, period, last, month)
}

func TestMonthTurn(t *testing.T) {
	t.Run("SetMonth", func(t *testing.T) {
		s := newServer(t, atlastest.Options{Month: "2026-10"})
		wantMonth(t, s, "2026-10")
		if err := s.SetMonth("2026-11"); err != nil {
			t.Fatal(err)
		}
		wantMonth(t, s, "2026-11")
		if err := s.SetMonth("2026-13"); err == nil {
			t.Error("SetMonth(2026-13) = nil, want an error")
		}
		wantMonth(t, s, "2026-11")
	})
	t.Run("TurnMonthAcrossYear", func(t *testing.T) {
		s := newServer(t, atlastest.Options{Month: "2026-12"})
		if got := s.TurnMonth(); got != "2027-01" {
			t.Errorf("TurnMonth() = %s, want 2027-01", got)
		}
		wantMonth(t, s, "2027-01")
	})
	t.Run("SameBytesAsAGeneratorOfThatMonth", func(t *testing.T) {
		s := newServer(t, atlastest.Options{Month: "2026-10", Seed: 4})
		s.TurnMonth()
		r := get(t, s, "/atlas/site-similar?url=example.com", bearer...)
		if want := atlastest.NewGenerator(4, "2026-11").SimilarBody("example.com"); string(r.body) != string(want) {
			t.Errorf("body after the turn differs from a 2026-11 generator's")
		}
	})
	// MonthTurnAfter: the month turns exactly MonthTurnAfter after the simulator was made, and
	// once. In fake time (testing/synctest, the handler called in memory): on a real server a
	// loaded machine may delay the request meant to come before the turn past it.
	t.Run("MonthTurnAfter", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			const after = 300 * time.Millisecond
			h, err := atlastest.NewHandler(atlastest.Options{Month: "2026-10", Rate: 1000, MonthTurnAfter: after})
			if err != nil {
				t.Fatal(err)
			}
			wantHandlerMonth(t, h, "2026-10")
			time.Sleep(after - time.Nanosecond)
			wantHandlerMonth(t, h, "2026-10")
			time.Sleep(time.Nanosecond)
			wantHandlerMonth(t, h, "2026-11")
			time.Sleep(after) // it turns once, not every interval
			wantHandlerMonth(t, h, "2026-11")
		})
	})
	t.Run("ConcurrentRequestsSeeOneMonthEach", func(t *testing.T) {
		s := newServer(t, atlastest.Options{Month: "2026-10", Rate: 1 << 20, Keys: map[string]int64{atlastest.DefaultKey: 1 << 20}})
		var wg sync.WaitGroup
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 40; i++ {
					date, period, last := overviewMonth(t, s, atlastest.Domains(40)[i])
					if date != period+"-01" || last != "" && last != date {
						t.Errorf("mixed months in one body: snapshot_date %s, period %s, last history %s", date, period, last)
						return
					}
				}
			}()
		}
		for i := 0; i < 5; i++ {
			s.TurnMonth()
			time.Sleep(time.Millisecond)
		}
		wg.Wait()
		wantMonth(t, s, "2027-03")
	})
}
