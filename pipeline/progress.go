package pipeline

import (
	"context"
	"fmt"
	"sync"
	"time"

	"sitewatch/pipeline/atlas"
)

// progress tracks finished calls and reports them: a live line on a terminal, a structured
// log line every few seconds otherwise.
type progress struct {
	env    Env
	client *atlas.Client
	begun  time.Time

	mu        sync.Mutex
	calls     int // planned
	finishedN int
	remaining map[string]int // domain -> calls still out
	domains   int            // domains with calls planned
	domainsOK int            // domains whose calls have all finished
}

func newProgress(env Env, client *atlas.Client, plan *Plan) *progress {
	p := &progress{env: env, client: client, calls: len(plan.Requests), remaining: map[string]int{}}
	for _, r := range plan.Requests {
		if r.Domain != "" {
			p.remaining[r.Domain]++
		}
	}
	p.domains = len(p.remaining)
	return p
}

func (p *progress) finished(res atlas.Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finishedN++
	if res.Domain != "" {
		p.remaining[res.Domain]--
		if p.remaining[res.Domain] == 0 {
			p.domainsOK++
		}
	}
}

// start reports until the returned function is called; that function draws the last line.
func (p *progress) start(ctx context.Context) (stop func()) {
	p.begun = p.env.Now()
	every := p.env.ProgressEvery
	if p.env.IsTerminal {
		every = time.Second
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				p.report(false)
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
		p.report(true)
	}
}

func (p *progress) report(last bool) {
	p.mu.Lock()
	finished, calls, doms, domsOK := p.finishedN, p.calls, p.domains, p.domainsOK
	p.mu.Unlock()
	stats := p.client.Stats()
	elapsed := p.env.Now().Sub(p.begun)
	perSec := 0.0
	if elapsed > 0 {
		perSec = float64(stats.Requests) / elapsed.Seconds()
	}
	eta := "-"
	if finished > 0 && finished < calls {
		left := time.Duration(float64(elapsed) / float64(finished) * float64(calls-finished))
		eta = left.Round(time.Second).String()
	}
	credits := "?"
	if stats.CreditsRemaining >= 0 {
		credits = fmt.Sprint(stats.CreditsRemaining)
	}
	if p.env.IsTerminal {
		end := "\r"
		if last {
			end = "\n"
		}
		fmt.Fprintf(p.env.Stderr, "\r\033[Kdomains %d/%d  calls %d/%d  %.1f req/s  429s %d  credits left %s  ETA %s%s",
			domsOK, doms, finished, calls, perSec, stats.RateLimited, credits, eta, end)
		return
	}
	p.env.Logger.Info("progress", "domains_done", domsOK, "domains_total", doms, "calls_done", finished,
		"calls_total", calls, "req_per_s", fmt.Sprintf("%.2f", perSec), "rate_limited", stats.RateLimited,
		"credits_left", credits, "eta", eta)
}
