package atlas

import (
	"context"
	"errors"
	"time"
)

// SignalGrace is how long the calls in flight may still finish (and be stored) after a signal
// stopped the client; then they are abandoned, so a SIGTERM ends a run within seconds whatever
// the API does. An abandoned call may have been charged: at most the calls in flight.
const SignalGrace = 3 * time.Second

// abortable returns ctx, also ended SignalGrace after a signal stopped the client.
func (c *Client) abortable(ctx context.Context) (context.Context, context.CancelFunc) {
	actx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.abortCtx, cancel)
	return actx, func() { stop(); cancel() }
}

// abortLaterLocked schedules the abandonment of the calls in flight when err, the client's
// stop reason, is a signal (it wraps context.Canceled).
func (c *Client) abortLaterLocked(err error) {
	if errors.Is(err, context.Canceled) {
		time.AfterFunc(SignalGrace, c.abort)
	}
}
