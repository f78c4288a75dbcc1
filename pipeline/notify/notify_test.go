package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"sitewatch/pipeline/buildinfo"
)

// secretPath is what Slack puts in a webhook URL: it must never show in a log or error.
const secretPath = "/services/T0SECRET/B0SECRET/xoxbTOKENvalue"

func event() Event {
	return Event{RunID: "r-20261102-0600-ab12", Month: "2026-11", Outcome: OutcomeComplete, Loaded: 27, Total: 28,
		CreditsSpent: 57, CreditsLeft: 443, Duration: 21*time.Second + 400*time.Millisecond,
		FirstError: "example.org: 400 invalid domain", Changes: "3 movers, 1 new competitor", Host: "etl-1"}
}

// logBuffer collects log lines; slog's handler may write from any goroutine.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newNotifier(t *testing.T, url string) (*Notifier, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	return New(url, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))), logs
}

func assertNoSecret(t *testing.T, where, text string) {
	t.Helper()
	for _, s := range []string{secretPath, "T0SECRET", "xoxbTOKENvalue"} {
		if strings.Contains(text, s) {
			t.Fatalf("the webhook URL's secret %q leaked into %s:\n%s", s, where, text)
		}
	}
}

func TestSendDelivered(t *testing.T) {
	var got map[string]any
	var contentType, path string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		contentType, path = r.Header.Get("Content-Type"), r.URL.Path
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
			t.Errorf("body is not JSON: %v", err)
		}
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	n, logs := newNotifier(t, srv.URL+secretPath)
	if err := n.Send(context.Background(), event()); err != nil {
		t.Fatalf("Send: %v", err)
	}
	if contentType != "application/json" || path != secretPath {
		t.Errorf("Content-Type %q, path %q; want application/json and the URL's own path", contentType, path)
	}
	want := map[string]any{
		"run_id": "r-20261102-0600-ab12", "month": "2026-11", "outcome": "complete", "loaded": 27.0, "total": 28.0,
		"credits_spent": 57.0, "credits_left": 443.0, "duration_seconds": 21.4,
		"first_error": "example.org: 400 invalid domain", "changes": "3 movers, 1 new competitor", "host": "etl-1",
		"sitewatch_version": buildinfo.Version(),
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v (%T), want %v", k, got[k], got[k], v)
		}
	}
	text, _ := got["text"].(string)
	for _, s := range []string{"sitewatch 2026-11: complete", "27/28 domains", "57 credits spent", "443 left", "21s", "r-20261102-0600-ab12", "changes: 3 movers", "first error: example.org"} {
		if !strings.Contains(text, s) {
			t.Errorf("text %q lacks %q", text, s)
		}
	}
	assertNoSecret(t, "the log", logs.String())
	if !strings.Contains(logs.String(), "target="+srv.URL+"/…") {
		t.Errorf("the log does not name the target as scheme://host/…:\n%s", logs)
	}
}

func TestSendUnknownCreditsIsNull(t *testing.T) {
	var raw map[string]json.RawMessage
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewDecoder(r.Body).Decode(&raw)
	}))
	defer srv.Close()
	e := event()
	e.CreditsLeft, e.FirstError, e.Changes = -1, "", ""
	n, _ := newNotifier(t, srv.URL)
	if err := n.Send(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	if string(raw["credits_left"]) != "null" {
		t.Errorf("credits_left = %s, want null when unknown", raw["credits_left"])
	}
	for _, k := range []string{"first_error", "changes"} {
		if _, ok := raw[k]; ok {
			t.Errorf("%s present though empty", k)
		}
	}
}

func TestSendFailing(t *testing.T) {
	for _, tc := range []struct {
		name         string
		status       int
		wantAttempts int32
		wantInErr    string
	}{
		{"ServerError", http.StatusInternalServerError, 2, "answered 500"},
		{"BadGateway", http.StatusBadGateway, 2, "answered 502"},
		{"Revoked", http.StatusNotFound, 1, "revoked"},
		{"BadPayload", http.StatusBadRequest, 1, "invalid_payload"},
		{"Redirect", http.StatusFound, 1, "redirects"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var attempts atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				attempts.Add(1)
				if tc.status == http.StatusFound {
					w.Header().Set("Location", "/elsewhere"+secretPath)
				}
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, "invalid_payload")
			}))
			defer srv.Close()
			n, logs := newNotifier(t, srv.URL+secretPath)
			err := n.Send(context.Background(), event())
			var ne *Error
			if !errors.As(err, &ne) {
				t.Fatalf("Send error = %v, want *notify.Error", err)
			}
			if got := attempts.Load(); got != tc.wantAttempts {
				t.Errorf("%d attempts, want %d", got, tc.wantAttempts)
			}
			if !strings.Contains(err.Error(), tc.wantInErr) {
				t.Errorf("error %q lacks %q", err, tc.wantInErr)
			}
			assertNoSecret(t, "the error", err.Error())
			assertNoSecret(t, "the log", logs.String())
			if !strings.Contains(logs.String(), "the run is not affected") {
				t.Errorf("the failure is not logged:\n%s", logs)
			}
		})
	}
}

func TestSendRetrySucceeds(t *testing.T) {
	var attempts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if attempts.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	n, _ := newNotifier(t, srv.URL)
	if err := n.Send(context.Background(), event()); err != nil {
		t.Fatalf("Send after one 503: %v", err)
	}
	if got := attempts.Load(); got != 2 {
		t.Errorf("%d attempts, want 2", got)
	}
}

// TestSendHanging: a webhook that accepts the connection and never answers, on a real
// connection: Send gives up with a time-out, having tried twice at most, and never leaks the
// URL's secret. Its bound (Send costs the run at most the Notifier's bound, the retry inside
// it) is TestSendHangingInFakeTime's: on a loaded machine the real clock stretches any wait,
// so here a Send that outlives its bound tenfold is called hung, and the retry may not reach
// the server in the time left to it.
func TestSendHanging(t *testing.T) {
	bounds := []time.Duration{time.Second}
	if !testing.Short() {
		bounds = append(bounds, DefaultTimeout)
	}
	for _, bound := range bounds {
		t.Run(bound.String(), func(t *testing.T) {
			var attempts atomic.Int32
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				attempts.Add(1)
				<-release
			}))
			defer srv.Close()
			defer close(release)
			n, logs := newNotifier(t, srv.URL+secretPath)
			n = n.WithTimeout(bound)
			done := make(chan error, 1)
			go func() { done <- n.Send(context.Background(), event()) }()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * bound):
				t.Fatalf("Send to a hanging webhook still waiting %v later, its bound being %v", 10*bound, bound)
			}
			if err == nil {
				t.Fatal("Send to a hanging webhook returned nil")
			}
			if !strings.Contains(err.Error(), "no answer in time") {
				t.Errorf("error %q, want the time-out", err)
			}
			if got := attempts.Load(); got > 2 {
				t.Errorf("%d attempts, want at most 2 (one retry)", got)
			}
			assertNoSecret(t, "the error", err.Error())
			assertNoSecret(t, "the log", logs.String())
		})
	}
}

// hangingTransport carries a webhook POST nowhere: it counts the attempt and hangs until the
// request's context ends, as a peer that accepts and never answers does (no socket, so a
// synctest bubble's fake clock runs Send's deadlines).
type hangingTransport struct{ attempts *atomic.Int32 }

func (h hangingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_ = r.Body.Close()
	}
	h.attempts.Add(1)
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// TestSendHangingInFakeTime: a webhook that never answers costs the run at most the
// Notifier's bound, and the retry happens inside it (the first attempt gets 60 % of the
// bound, then a 200 ms pause, then the retry the rest): exact in fake time (testing/synctest),
// on any machine.
func TestSendHangingInFakeTime(t *testing.T) {
	for _, bound := range []time.Duration{time.Second, DefaultTimeout} {
		t.Run(bound.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var attempts atomic.Int32
				n, logs := newNotifier(t, "https://hooks.example"+secretPath)
				n = n.WithTimeout(bound)
				n.client = &http.Client{Transport: hangingTransport{&attempts}, CheckRedirect: n.client.CheckRedirect}
				start := time.Now()
				err := n.Send(context.Background(), event())
				took := time.Since(start)
				if err == nil || !strings.Contains(err.Error(), "no answer in time") {
					t.Fatalf("Send to a hanging webhook = %v, want the time-out", err)
				}
				if took > bound {
					t.Errorf("Send took %v, bound %v", took, bound)
				}
				if got := attempts.Load(); got != 2 {
					t.Errorf("%d attempts, want 2 (one retry within the bound)", got)
				}
				assertNoSecret(t, "the error", err.Error())
				assertNoSecret(t, "the log", logs.String())
			})
		})
	}
}

// TestSendAfterCancel: the run's context is cancelled by SIGINT before the "interrupted"
// notification; it is still delivered.
func TestSendAfterCancel(t *testing.T) {
	var got atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got.Add(1) }))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n, _ := newNotifier(t, srv.URL)
	e := event()
	e.Outcome = OutcomeInterrupted
	if err := n.Send(ctx, e); err != nil {
		t.Fatalf("Send with a cancelled context: %v", err)
	}
	if got.Load() != 1 {
		t.Errorf("%d deliveries, want 1", got.Load())
	}
}

func TestSendUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: connection refused
	n, logs := newNotifier(t, "http://"+addr+secretPath)
	err = n.Send(context.Background(), event())
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("Send error = %v, want connection refused", err)
	}
	assertNoSecret(t, "the error", err.Error())
	assertNoSecret(t, "the log", logs.String())
}

func TestNilNotifier(t *testing.T) {
	n := New("", nil)
	if n != nil {
		t.Fatal(`New("") is not nil`)
	}
	if err := n.Send(context.Background(), event()); err != nil {
		t.Errorf("nil Send: %v", err)
	}
	if n.Target() != "" {
		t.Errorf("nil Target = %q", n.Target())
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"https://hooks.slack.com" + secretPath:          "https://hooks.slack.com/…",
		"https://user:pass@chat.example:8065/hooks/x?a": "https://chat.example:8065/…",
		"not a url": "(invalid URL)",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTextEscapesMarkup(t *testing.T) {
	e := event()
	e.FirstError = `watchlist entry "<b>x</b>" & more`
	p := newPayload(e)
	if !strings.Contains(p.Text, `"&lt;b&gt;x&lt;/b&gt;" &amp; more`) {
		t.Errorf("text %q: <, > and & not escaped for Slack", p.Text)
	}
	if p.FirstError != e.FirstError {
		t.Errorf("first_error = %q, want it as is", p.FirstError)
	}
}

func TestTextPerOutcome(t *testing.T) {
	for outcome, want := range map[string]string{
		OutcomeUpToDate:       "up to date",
		OutcomeStoppedCredits: "stopped for credits",
		OutcomeAbandoned:      "abandoned",
		OutcomeFailed:         "failed",
		"something_new":       "something_new",
	} {
		e := event()
		e.Outcome = outcome
		if got := Text(e); !strings.Contains(got, want) {
			t.Errorf("Text(%s) = %q, want it to contain %q", outcome, got, want)
		}
	}
}

// TestNotifyOn: by default every outcome but up_to_date is posted (a schedule retrying every
// retry_every while the API has not turned would post each time); Only selects by kind.
func TestNotifyOn(t *testing.T) {
	var posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { posts.Add(1) }))
	defer srv.Close()
	send := func(n *Notifier, outcome string) bool {
		t.Helper()
		before := posts.Load()
		e := event()
		e.Outcome = outcome
		if err := n.Send(context.Background(), e); err != nil {
			t.Fatal(err)
		}
		return posts.Load() > before
	}
	byDefault, _ := newNotifier(t, srv.URL)
	for outcome, want := range map[string]bool{
		OutcomeComplete: true, OutcomeFailed: true, OutcomeUnauthorized: true, OutcomeInterrupted: true, OutcomeAbandoned: true,
		OutcomeStoppedCredits: true, OutcomeMonthTurned: true, OutcomeMonthMismatch: true, "something_new": true,
		OutcomeUpToDate: false,
	} {
		if got := send(byDefault, outcome); got != want {
			t.Errorf("default notify.on, %s: posted %v, want %v", outcome, got, want)
		}
	}
	onlyUpToDate, _ := newNotifier(t, srv.URL)
	onlyUpToDate = onlyUpToDate.Only([]string{OnUpToDate})
	if !send(onlyUpToDate, OutcomeUpToDate) || send(onlyUpToDate, OutcomeComplete) {
		t.Error("notify.on [up_to_date]: want up_to_date posted and complete not")
	}
	if err := CheckOn([]string{"complete", "sucess"}); err == nil || !strings.Contains(err.Error(), `"sucess"`) {
		t.Errorf("CheckOn with a typo: %v, want an error naming it", err)
	}
}

// TestTextFailedNamesMonthState: a failure says what its month holds now; counts are singular
// where they are one.
func TestTextFailedNamesMonthState(t *testing.T) {
	e := Event{Month: "2026-11", Outcome: OutcomeFailed, Loaded: 6, Total: 6, CreditsSpent: 1, CreditsLeft: -1, MonthState: "2026-11 stays complete"}
	got := Text(e)
	for _, want := range []string{"sitewatch 2026-11: failed", "2026-11 stays complete", "6/6 domains", "1 credit spent"} {
		if !strings.Contains(got, want) {
			t.Errorf("Text = %q, want it to contain %q", got, want)
		}
	}
	e.Skipped = "1 watchlist entry skipped (not host names, never sent): line 3 `github,com`"
	if got := Text(e); !strings.Contains(got, "\n"+e.Skipped) {
		t.Errorf("Text = %q, want the skipped entries on a line of their own", got)
	}
	e = Event{Outcome: OutcomeFailed, Total: 1, CreditsLeft: -1}
	if got := Text(e); !strings.Contains(got, "sitewatch (month not known): failed") || !strings.Contains(got, "0/1 domain,") || strings.Contains(got, "sitewatch :") {
		t.Errorf("Text without a month = %q", got)
	}
}
