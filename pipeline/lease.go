package pipeline

import (
	"context"
	"errors"
	"fmt"
)

// Lease keeps one payer per bucket across machines: a run takes it before its first credit
// and holds it through its own publish. pipeline/lease implements it over the bucket;
// cmd/sitewatch sets Env.Lease when publish.url is set and publish.lease is on.
type Lease interface {
	// Hold takes the lease or fails naming its holder (nothing was spent).
	Hold(ctx context.Context) (HeldLease, error)
}

// HeldLease is a lease taken.
type HeldLease interface {
	// Context ends when the lease is lost; its cause says how.
	Context() context.Context
	// Admit is the fence every paid call passes right before it is sent: nil while the
	// lease is confirmed; it waits while the lease is unconfirmed and fails once it is lost.
	Admit(ctx context.Context) error
	// Release gives the lease back (briefly after a signal; it expires by itself otherwise).
	Release()
}

// takeLease takes l when there is one; without it the run is the bucket's only writer by
// configuration (no publish.url, or publish.lease: off) and nothing fences its calls.
func takeLease(ctx context.Context, l Lease) (HeldLease, error) {
	if l == nil {
		return nil, nil
	}
	return l.Hold(ctx)
}

// stopReason is why a run's context ended: a signal, or the loss of the bucket lease.
func stopReason(ctx context.Context) error {
	cause := context.Cause(ctx)
	if cause == nil || errors.Is(cause, context.Canceled) {
		return ErrInterrupted
	}
	return fmt.Errorf("stopped: %w", cause)
}
