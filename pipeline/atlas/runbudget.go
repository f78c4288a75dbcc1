package atlas

import "sync"

// RunBudget is one api.max_credits_per_run shared by several clients (one per credit
// source): the run's total, not each client's, stays within Limit. Each client counts what it
// has spent or may yet be charged (its exposure: credits spent, plus a call's cost for every
// call in flight or unanswered) and starts no call that would take the total past Limit.
// Locks are taken client first, then budget; the budget never calls back into a client.
type RunBudget struct {
	Limit int64

	mu       sync.Mutex
	exposure map[*Client]int64
	inflight map[*Client]int64
	spent    map[*Client]int64
	changed  chan struct{} // closed and replaced when any client's exposure changes
}

// NewRunBudget returns a budget of limit credits for the clients that share it.
func NewRunBudget(limit int64) *RunBudget {
	return &RunBudget{Limit: limit, exposure: map[*Client]int64{}, inflight: map[*Client]int64{},
		spent: map[*Client]int64{}, changed: make(chan struct{})}
}

// set records c's exposure, calls in flight and credits spent, and wakes clients waiting.
func (b *RunBudget) set(c *Client, exposure, inflight, spent int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.exposure[c] == exposure && b.inflight[c] == inflight && b.spent[c] == spent {
		return
	}
	b.exposure[c], b.inflight[c], b.spent[c] = exposure, inflight, spent
	close(b.changed)
	b.changed = make(chan struct{})
}

// others returns the exposure and calls in flight of every client but c, and the credits all
// clients spent.
func (b *RunBudget) others(c *Client) (exposure, inflight, spent int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for o, e := range b.exposure {
		spent += b.spent[o]
		if o != c {
			exposure += e
			inflight += b.inflight[o]
		}
	}
	return exposure, inflight, spent
}

// publishLocked tells the shared budget (if any) c's exposure. c.mu is held.
func (c *Client) publishLocked() {
	if b := c.cfg.RunBudget; b != nil {
		b.set(c, c.stats.CreditsSpent+(c.stats.Unanswered+c.inflight)*c.unitCost, c.inflight, c.stats.CreditsSpent)
	}
}

// budgetChanged is the channel closed when another client's exposure changes (nil, which
// never fires, without a shared budget).
func (c *Client) budgetChanged() <-chan struct{} {
	if b := c.cfg.RunBudget; b != nil {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.changed
	}
	return nil
}
