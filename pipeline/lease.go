package pipeline

import "context"

// Lease keeps one writer per bucket across machines: a run takes it before its first credit
// and holds it through its own publish. pipeline/lease implements it over the bucket;
// cmd/sitewatch sets Env.Lease when publish.url is set and publish.lease is on.
type Lease interface {
	// Take takes the lease or fails naming its holder. The context it returns ends when the
	// lease is lost; release gives the lease back.
	Take(ctx context.Context) (held context.Context, release func(), err error)
}

// takeLease takes l when there is one; without it the run is the bucket's only writer by
// configuration (no publish.url, or publish.lease: off).
func takeLease(ctx context.Context, l Lease) (context.Context, func(), error) {
	if l == nil {
		return ctx, func() {}, nil
	}
	return l.Take(ctx)
}
