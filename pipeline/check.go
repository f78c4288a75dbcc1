package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"sitewatch/pipeline/atlas"
	"sitewatch/pipeline/config"
)

// ErrNotEnoughCredits reports a wallet (or marketplace quota) that does not cover the next
// run within the reserve and the per-run cap.
var ErrNotEnoughCredits = errors.New("not enough credits for the next run")

// Readiness is what `sitewatch check` (and `run --dry-run` with a key) learned for free: the
// server's view of the key, wallet and rate limit, and whether they cover the next run.
type Readiness struct {
	Probe      atlas.Probe
	Plan       *Plan
	Needed     int           // credits the next run needs: what the month lacks, or a whole new month
	MaxCredits int           // the most the run may spend (refetch budget included, within the cap)
	Available  int64         // credits usable: balance (or marketplace quota) minus min_credits; -1 unknown
	RateLimit  float64       // min(api.rate_limit, the server's X-RateLimit-Limit)
	Duration   time.Duration // expected time of the next run at RateLimit
	Covered    bool
}

// NewClient builds the API client of cfg with the secrets from the environment. Its errors
// are *config.Error or *atlas.ConfigError: nothing was called.
func NewClient(cfg *config.Config, env Env) (*atlas.Client, error) {
	env = env.WithDefaults()
	creds, err := config.CredentialsFrom(cfg, env.Getenv)
	if err != nil {
		return nil, err
	}
	return atlas.New(clientConfig(cfg, creds, env.Logger))
}

// Check is the preflight: it spends no credit. It asks the API (a request without url, which
// the API answers with a free 400 after checking the key and the wallet) and reads the plan
// of the next run from the warehouse. Errors: *config.Error / *atlas.ConfigError (nothing
// called), *atlas.UnreachableError, atlas.ErrUnauthorized, atlas.ErrOutOfCredits, and
// ErrNotEnoughCredits when the wallet does not cover the next run (Readiness is then set).
func Check(ctx context.Context, cfg *config.Config, env Env) (*Readiness, error) {
	client, err := NewClient(cfg, env)
	if err != nil {
		return nil, err
	}
	plan, err := DryRun(ctx, cfg, RunOptions{}, env)
	if err != nil {
		return nil, err
	}
	probe, err := client.Probe(ctx)
	if err != nil {
		return &Readiness{Probe: probe, Plan: plan}, err
	}
	r := readiness(cfg, plan, probe)
	if !r.Covered {
		return r, fmt.Errorf("%w: the run needs up to %d credits, %d are usable (balance %d minus min_credits %d); top up the wallet or lower min_credits",
			ErrNotEnoughCredits, r.Needed, max(r.Available, 0), probe.Balance, cfg.API.MinCredits)
	}
	return r, nil
}

// readiness works out what the next run needs against what the probe reported.
func readiness(cfg *config.Config, plan *Plan, probe atlas.Probe) *Readiness {
	r := &Readiness{Probe: probe, Plan: plan, Needed: plan.Credits(), Available: -1, RateLimit: cfg.API.RateLimit}
	if plan.HeldComplete || plan.Snapshot == "" {
		r.Needed = plan.FullCredits // the month held is complete: the next one is a whole month
	}
	r.MaxCredits = MaxCredits(cfg, r.Needed)
	if probe.RateLimit > 0 {
		r.RateLimit = min(r.RateLimit, probe.RateLimit)
	}
	if r.RateLimit > 0 {
		r.Duration = time.Duration(float64(r.Needed) / r.RateLimit * float64(time.Second))
	}
	switch {
	case probe.QuotaRemaining >= 0 && probe.Balance >= 0:
		r.Available = min(probe.QuotaRemaining, probe.Balance) - cfg.API.MinCredits
	case probe.QuotaRemaining >= 0:
		r.Available = probe.QuotaRemaining - cfg.API.MinCredits
	case probe.Balance >= 0:
		r.Available = probe.Balance - cfg.API.MinCredits
	}
	need := int64(r.Needed)
	if cfg.API.MaxCreditsPerRun > 0 {
		need = min(need, cfg.API.MaxCreditsPerRun) // the cap stops the run earlier, by design
	}
	r.Covered = r.Available < 0 && probe.Balance < 0 && probe.QuotaRemaining < 0 || r.Available >= need
	return r
}

// MaxCredits is the most a run of calls calls can spend under cfg: one credit per call plus
// the refetch budget (api.max_wasted_credits), within api.max_credits_per_run.
func MaxCredits(cfg *config.Config, calls int) int {
	return atlas.MaxCredits(calls, clientConfig(cfg, config.Credentials{}, nil))
}
