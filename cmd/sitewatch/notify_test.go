package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sitewatch/pipeline/atlas/atlastest"
	"sitewatch/pipeline/config"
)

// webhookReceiver is a real HTTP server that records the JSON bodies posted to it.
type webhookReceiver struct {
	mu     sync.Mutex
	events []map[string]any
	srv    *httptest.Server
}

func newWebhookReceiver(t *testing.T, handle func(w http.ResponseWriter)) *webhookReceiver {
	r := &webhookReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		var ev map[string]any
		if err := json.Unmarshal(b, &ev); err == nil {
			r.mu.Lock()
			r.events = append(r.events, ev)
			r.mu.Unlock()
		}
		handle(w)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *webhookReceiver) got() []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]map[string]any(nil), r.events...)
}

// TestWebhookPerRunOutcome: one Slack-compatible POST per run outcome (complete, up to date,
// stopped for credits) with the month, counts and credits; the URL (a secret) never appears
// in the output; a failing or hanging webhook neither fails nor holds up the run.
func TestWebhookPerRunOutcome(t *testing.T) {
	domains := atlastest.Domains(4)
	t.Run("Delivered", func(t *testing.T) {
		rcv := newWebhookReceiver(t, func(w http.ResponseWriter) { w.WriteHeader(http.StatusOK) })
		h := newHarness(t, atlastest.Options{Keys: map[string]int64{"canary-key-7f3a9c": 5}}, domains, "")
		hookURL := rcv.srv.URL + "/services/T000/B000/hook-secret-93af"
		h.extraEnv = map[string]string{config.EnvWebhookURL: hookURL}
		if code := h.run("run"); code != ExitCredits {
			t.Fatalf("exit %d, want %d", code, ExitCredits)
		}
		h.srv.SetCredits(h.key, 100)
		for _, want := range []int{ExitOK, ExitOK} {
			if code := h.run("run"); code != want {
				t.Fatalf("exit %d, want %d\n%s", code, want, h.stdout)
			}
			if strings.Contains(h.stdout.String()+h.stderr.String(), "hook-secret-93af") {
				t.Fatal("the webhook URL leaked into the output")
			}
		}
		evs := rcv.got()
		if len(evs) != 2 {
			t.Fatalf("%d webhook posts, want 2 (stopped_credits, complete; up_to_date only when notify.on asks): %v", len(evs), evs)
		}
		h.setConfig("domains:\n", "notify:\n  on: [complete, up_to_date]\ndomains:\n")
		if code := h.run("run"); code != ExitOK {
			t.Fatalf("exit %d, want 0\n%s", code, h.stdout)
		}
		evs = rcv.got()
		if len(evs) != 3 {
			t.Fatalf("%d webhook posts after notify.on asked for up_to_date, want 3: %v", len(evs), evs)
		}
		for i, want := range []string{"stopped_credits", "complete", "up_to_date"} {
			ev := evs[i]
			if ev["outcome"] != want || ev["month"] != testMonth || ev["total"] != float64(len(domains)) {
				t.Errorf("post %d = %v, want outcome %s for %s", i, ev, want, testMonth)
			}
			if text, _ := ev["text"].(string); !strings.Contains(text, testMonth) {
				t.Errorf("post %d has no Slack text naming the month: %q", i, text)
			}
		}
		if evs[1]["loaded"] != float64(len(domains)) || evs[1]["credits_spent"] == float64(0) {
			t.Errorf("complete post = %v: want every domain loaded and the credits spent", evs[1])
		}
	})
	t.Run("FailedRunNamesItsMonth", func(t *testing.T) {
		// A run that fails before any answer names the month (a 404 from a wrong base URL)
		// reports the newest month held and its state, not "failed … 0/4" with no month.
		rcv := newWebhookReceiver(t, func(w http.ResponseWriter) { w.WriteHeader(http.StatusOK) })
		h := newHarness(t, atlastest.Options{}, domains, "")
		h.extraEnv = map[string]string{config.EnvWebhookURL: rcv.srv.URL + "/hook"}
		if code := h.run("run"); code != ExitOK {
			t.Fatalf("exit %d, want 0\n%s", code, h.stdout)
		}
		h.extraEnv[config.EnvBaseURL] = h.srv.URL + "/not-the-api"
		if code := h.run("run"); code != ExitFailed {
			t.Fatalf("exit %d, want %d\n%s", code, ExitFailed, h.stdout)
		}
		if out := h.stdout.String(); strings.Contains(out, "rerun") || !strings.Contains(out, "api.base_url") {
			t.Errorf("after a 404 the advice must name api.base_url and not say rerun:\n%s", out)
		}
		evs := rcv.got()
		if len(evs) != 2 {
			t.Fatalf("%d webhook posts, want 2: %v", len(evs), evs)
		}
		ev := evs[1]
		text, _ := ev["text"].(string)
		if ev["outcome"] != "failed" || ev["month"] != testMonth || ev["loaded"] != float64(len(domains)) ||
			!strings.Contains(text, testMonth+" stays complete") || ev["month_state"] != testMonth+" stays complete" {
			t.Errorf("failed post = %v, want month %s, its %d domains and \"%s stays complete\"", ev, testMonth, len(domains), testMonth)
		}
	})
	t.Run("FailingAndHanging", func(t *testing.T) {
		// The hanging webhook answers only when the test ends (or after 2 minutes). "Not held
		// up" is an order, not a time (a loaded machine stretches the run itself): the run
		// must end while the webhook still hangs; a run the notifier's 5 s bound did not free
		// would end only after it answered.
		release := make(chan struct{})
		var releaseOnce sync.Once
		var hangAnswered atomic.Bool
		for name, handle := range map[string]func(http.ResponseWriter){
			"500": func(w http.ResponseWriter) { w.WriteHeader(http.StatusInternalServerError) },
			"hang": func(http.ResponseWriter) {
				select {
				case <-release:
				case <-time.After(2 * time.Minute):
					hangAnswered.Store(true)
				}
			},
		} {
			rcv := newWebhookReceiver(t, handle)
			t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) }) // before the receiver's Close
			h := newHarness(t, atlastest.Options{}, domains, "")
			h.extraEnv = map[string]string{config.EnvWebhookURL: rcv.srv.URL + "/hook"}
			start := time.Now()
			if code := h.run("run"); code != ExitOK {
				t.Fatalf("%s: exit %d, want 0: a webhook never fails a run\n%s", name, code, h.stdout)
			}
			t.Logf("%s: the run took %s", name, time.Since(start).Round(time.Millisecond))
			if name == "hang" && hangAnswered.Load() {
				t.Errorf("%s: the run ended only after the hanging webhook answered (2 minutes): the webhook held it up", name)
			}
			if !strings.Contains(h.stderr.String(), "webhook") {
				t.Errorf("%s: the failed notification is not logged:\n%s", name, tail(h.stderr.String(), 1500))
			}
		}
	})
}
