package notify

import (
	"strings"
	"testing"
)

// The message names which source paid how much when several did.
func TestTextNamesPayers(t *testing.T) {
	e := Event{Month: "2026-11", Outcome: OutcomeComplete, Loaded: 150, Total: 150, CreditsSpent: 301, CreditsLeft: 799,
		PaidBy: "marketplace 100, direct 201"}
	if got, want := Text(e), "301 credits spent (marketplace 100, direct 201), 799 left"; !strings.Contains(got, want) {
		t.Errorf("Text = %q, want it to contain %q", got, want)
	}
	if p := newPayload(e); p.PaidBy != e.PaidBy {
		t.Errorf("payload paid_by = %q, want %q", p.PaidBy, e.PaidBy)
	}
}
