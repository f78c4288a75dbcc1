package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
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
		if len(evs) != 3 {
			t.Fatalf("%d webhook posts, want 3: %v", len(evs), evs)
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
	t.Run("FailingAndHanging", func(t *testing.T) {
		for name, handle := range map[string]func(http.ResponseWriter){
			"500":  func(w http.ResponseWriter) { w.WriteHeader(http.StatusInternalServerError) },
			"hang": func(http.ResponseWriter) { time.Sleep(8 * time.Second) }, // beyond the notifier's 5 s bound
		} {
			rcv := newWebhookReceiver(t, handle)
			h := newHarness(t, atlastest.Options{}, domains, "")
			h.extraEnv = map[string]string{config.EnvWebhookURL: rcv.srv.URL + "/hook"}
			start := time.Now()
			if code := h.run("run"); code != ExitOK {
				t.Fatalf("%s: exit %d, want 0: a webhook never fails a run\n%s", name, code, h.stdout)
			}
			if took := time.Since(start); took > 15*time.Second {
				t.Errorf("%s: the run took %s: the webhook held it up", name, took)
			}
			if !strings.Contains(h.stderr.String(), "webhook") {
				t.Errorf("%s: the failed notification is not logged:\n%s", name, tail(h.stderr.String(), 1500))
			}
		}
	})
}
