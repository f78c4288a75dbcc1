package main

import (
	"context"

	"sitewatch/pipeline"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/lease"
	"sitewatch/pipeline/publish"
)

// bucketLease is the lease runs and publishes take on cfg's bucket, or nil when there is no
// bucket or publish.lease is off. It fails when the publisher cannot be built (credentials).
func bucketLease(ctx context.Context, cfg *config.Config, env pipeline.Env, command string) (pipeline.Lease, error) {
	if cfg.Publish.URL == "" || !cfg.Publish.LeaseOn() {
		return nil, nil
	}
	p, err := publish.New(ctx, cfg.Publish, publish.Options{Logger: env.Logger})
	if err != nil {
		return nil, err
	}
	return lease.New(p, lease.Options{TTL: cfg.Publish.LeaseDuration(), Command: "sitewatch " + command, Logger: env.Logger}), nil
}
