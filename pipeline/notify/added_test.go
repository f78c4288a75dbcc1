package notify

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestDigestNamesAddedDomains: a run after which schedule grew the watchlist (discover:) names
// the added domains in the text and in the "added" field; a run without growth has neither.
func TestDigestNamesAddedDomains(t *testing.T) {
	ev := Event{Month: "2026-10", Outcome: OutcomeComplete, Loaded: 4, Total: 4, CreditsLeft: -1,
		Added: []string{"six.com", "newrise.com"}, AddedMonthly: 4}
	if text := Text(ev); !strings.Contains(text, "\nwatchlist grown by discover: six.com, newrise.com added (2 domains); the next month's run fetches them; discovered domains now cost 4 credits a month") {
		t.Errorf("text = %q", text)
	}
	var got map[string]any
	b, _ := json.Marshal(newPayload(ev))
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	added, _ := got["added"].([]any)
	if !slices.Equal(added, []any{"six.com", "newrise.com"}) {
		t.Errorf("added = %v", got["added"])
	}
	ev.Added = nil
	b, _ = json.Marshal(newPayload(ev))
	if strings.Contains(string(b), "added") {
		t.Errorf("payload without growth mentions it: %s", b)
	}
}
