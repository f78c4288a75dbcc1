package atlas

import (
	"context"
	"errors"
)

// SetFence makes every attempt consult fence right before it is sent (after its credits are
// reserved and its rate token taken): a call starts only when fence returns nil. The bucket
// lease passes its Admit, which waits while the lease is unconfirmed and fails once it is
// lost. An error from fence stops the client with it. Call it before the first request.
func (c *Client) SetFence(fence func(context.Context) error) { c.fence = fence }

// passFence waits for the fence, if any. A stop of the client (a signal, a 402) ends the
// wait at once with the stop reason; a fence error stops the client.
func (c *Client) passFence(ctx context.Context) error {
	if c.fence == nil {
		return nil
	}
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-c.stopCh:
			cancel()
		case <-fctx.Done():
		}
	}()
	err := c.fence(fctx)
	if err == nil {
		return nil
	}
	if stopErr := c.Err(); stopErr != nil {
		return stopErr
	}
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return err
	}
	c.stop(err)
	return err
}
