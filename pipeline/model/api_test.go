package model

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"sitewatch/schema"
)

// TestIsStopSeparatesStopsFromFailures: every stop reason stops a run however it is wrapped
// (in an *Error, in fmt.Errorf); a failure of one request, a context error and nil do not.
func TestIsStopSeparatesStopsFromFailures(t *testing.T) {
	stops := []error{ErrOutOfCredits, ErrCreditReserve, ErrRunBudget, ErrBalanceUnknown, ErrWasteBudget,
		ErrRateLimitWait, ErrServerRateLimit, ErrUnauthorized, ErrMisconfigured, ErrUntrustedCertificate,
		ErrUnreachable, schema.ErrLegacyV1}
	failures := []error{ErrRateLimited, ErrInvalidDomain, ErrMissingParameter, ErrSchemaDrift, ErrSecretInBody,
		ErrBodyTooLarge, ErrBadRequest, ErrServer, context.Canceled, context.DeadlineExceeded, nil}
	for _, err := range stops {
		for _, wrapped := range []error{err, &Error{Op: "fetch", Err: err}, fmt.Errorf("run: %w", &Error{Err: err})} {
			if !IsStop(wrapped) {
				t.Errorf("IsStop(%v) = false, want true", wrapped)
			}
		}
	}
	for _, err := range failures {
		if IsStop(err) || IsStop(&Error{Op: "fetch", Err: err}) {
			t.Errorf("IsStop(%v) = true, want false (a failure of one request)", err)
		}
	}
}

// TestErrorSaysWhatFailed: an *Error names the operation, endpoint, domain, status and the
// API's code, and unwraps to its sentinel.
func TestErrorSaysWhatFailed(t *testing.T) {
	balance := 0.0
	e := &Error{Op: "fetch", Domain: "a.example", Endpoint: schema.EndpointOverview, Status: 402,
		Code: "Payment Required", RemainingBalance: &balance, Err: ErrOutOfCredits}
	got := e.Error()
	for _, want := range []string{"atlas fetch", string(schema.EndpointOverview), `"a.example"`, "HTTP 402 Payment Required", "remaining balance 0", ErrOutOfCredits.Error()} {
		if !strings.Contains(got, want) {
			t.Errorf("Error() = %q, want it to contain %q", got, want)
		}
	}
	if !errors.Is(e, ErrOutOfCredits) {
		t.Errorf("errors.Is(%v, ErrOutOfCredits) = false", e)
	}
	if got := (&Error{Status: 503, Err: ErrServer}).Error(); !strings.Contains(got, "HTTP 503 Service Unavailable") {
		t.Errorf("Error() = %q, want the status text when the API sent no code", got)
	}
}
