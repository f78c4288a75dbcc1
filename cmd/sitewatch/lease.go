package main

import (
	"context"

	"sitewatch/pipeline"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/lease"
	"sitewatch/pipeline/publish"
)

// bucketLease is the lease runs, restores and publishes take on cfg's bucket, or nil when
// there is no bucket or publish.lease is off. It fails when the publisher cannot be built
// (credentials).
func bucketLease(ctx context.Context, cfg *config.Config, env Env, command string) (pipeline.Lease, error) {
	if cfg.Publish.URL == "" || !cfg.Publish.LeaseOn() {
		return nil, nil
	}
	p, err := publish.New(ctx, cfg.Publish, publish.Options{Logger: env.Logger, Small: true}) // heals within seconds of a cut
	if err != nil {
		return nil, err
	}
	return runLease{newLease(p, cfg, env, command)}, nil
}

// newLease is the lease of p with cfg's TTL and in-flight bound (api.timeout).
func newLease(p *publish.Publisher, cfg *config.Config, env Env, command string) *lease.Lease {
	return lease.New(p, lease.Options{TTL: cfg.Publish.LeaseDuration(), InFlight: cfg.API.Timeout.Duration,
		Command: "sitewatch " + command, Logger: env.Logger})
}

// runLease adapts *lease.Lease to the core's interface.
type runLease struct{ *lease.Lease }

func (l runLease) Hold(ctx context.Context) (pipeline.HeldLease, error) {
	h, err := l.Lease.Hold(ctx)
	if err != nil {
		return nil, err
	}
	return h, nil
}
