package wire

import (
	"context"
	"fmt"
	"time"

	"sitewatch/pipeline"
	"sitewatch/pipeline/atlas"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/sources"
)

// Readiness is what `sitewatch check` (and `run --dry-run` with a key) learned for free: the
// server's view of the key, wallet and rate limit, and whether they cover the next run.
type Readiness struct {
	Probe      atlas.Probe
	Plan       *pipeline.Plan
	Needed     int           // credits the next run needs: what the month lacks, or a whole new month
	MaxCredits int           // the most the run may spend (refetch budget included, within the cap)
	Available  int64         // credits usable: balance (or marketplace quota) minus min_credits; -1 unknown
	RateLimit  float64       // min(api.rate_limit, the server's X-RateLimit-Limit)
	Duration   time.Duration // expected time of the next run at RateLimit
	Covered    bool
	// NewMonth is the credits of a whole new month, set when the month held is complete: a
	// run now spends Needed (1: the answer that says the month is still served) unless the
	// API has turned to a new month, which then needs NewMonth.
	NewMonth int
	// Sources and Spend are set with api.sources: each source's free probe, and who pays
	// for Needed (Covered: every call has a payer; Duration: every payer at once).
	Sources []SourceProbe
	Spend   *sources.Plan
}

// NewClient builds the API client of cfg with the secrets from the environment. Its errors
// are *config.Error or *atlas.ConfigError: nothing was called.
func NewClient(cfg *config.Config, env pipeline.Env) (*atlas.Client, error) {
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
// called), *atlas.UnreachableError, model.ErrUnauthorized, model.ErrOutOfCredits, and
// pipeline.ErrNotEnoughCredits when the wallet does not cover the next run (Readiness is then set).
func Check(ctx context.Context, cfg *config.Config, env pipeline.Env) (*Readiness, error) {
	return CheckPlan(ctx, cfg, env, nil)
}

// CheckPlan is Check for the plan a dry run already made (nil: the next run's, from DryRun,
// which counts what the bucket holds as held): the bucket is read once.
func CheckPlan(ctx context.Context, cfg *config.Config, env pipeline.Env, plan *pipeline.Plan) (*Readiness, error) {
	if cfg.MultiSource() {
		return checkSources(ctx, cfg, env, plan)
	}
	client, err := NewClient(cfg, env)
	if err != nil {
		return nil, err
	}
	if plan == nil {
		if plan, err = pipeline.DryRun(ctx, cfg, pipeline.RunOptions{}, env); err != nil {
			return nil, err
		}
	}
	probe, err := client.Probe(ctx)
	if err != nil {
		return &Readiness{Probe: probe, Plan: plan}, err
	}
	r := readiness(cfg, plan, probe)
	if !r.Covered {
		return r, fmt.Errorf("%w: the run needs up to %d credits, %d are usable (balance %d minus min_credits %d); top up the wallet or lower min_credits",
			pipeline.ErrNotEnoughCredits, r.Needed, max(r.Available, 0), probe.Balance, cfg.API.MinCredits)
	}
	return r, nil
}

// readiness works out what the next run needs against what the probe reported.
func readiness(cfg *config.Config, plan *pipeline.Plan, probe atlas.Probe) *Readiness {
	r := &Readiness{Probe: probe, Plan: plan, Needed: pipeline.NeededNow(plan), Available: -1, RateLimit: cfg.API.RateLimit}
	if plan.HeldComplete {
		r.NewMonth = plan.FullCredits
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

// checkSources is Check with api.sources: every source is probed for free and the spend plan
// says who would pay for the next run. A source that answers 402 simply pays nothing; any
// other failure of a probe is returned, naming the source, with what was learned.
func checkSources(ctx context.Context, cfg *config.Config, env pipeline.Env, plan *pipeline.Plan) (*Readiness, error) {
	env = env.WithDefaults()
	srcs, err := openSources(cfg, env)
	if err != nil {
		return nil, err
	}
	if plan == nil {
		if plan, err = pipeline.DryRun(ctx, cfg, pipeline.RunOptions{}, env); err != nil {
			return nil, err
		}
	}
	r := &Readiness{Plan: plan, Needed: pipeline.NeededNow(plan), Available: -1}
	if plan.HeldComplete {
		r.NewMonth = plan.FullCredits
	}
	r.MaxCredits = MaxCredits(cfg, r.Needed)
	calls, _ := capCalls(cfg, r.Needed) // the cap's shares, in spend order
	spend, probes, err := probeSources(ctx, cfg, srcs, calls, env.Now())
	r.Sources, r.Spend = probes, spend
	if err != nil {
		return r, err
	}
	r.Available = 0
	for _, sh := range spend.Shares {
		r.Available += max(sh.Usable, 0)
		if sh.Calls > 0 {
			r.RateLimit += sh.Rate
		}
	}
	r.Duration, r.Covered = spend.Ideal(), spend.Uncovered == 0
	if !r.Covered {
		return r, fmt.Errorf("%w: the run needs %d credits, the sources can pay for %d (%s); top up a source or lower its min_credits",
			pipeline.ErrNotEnoughCredits, r.Needed, r.Needed-spend.Uncovered, spend)
	}
	return r, nil
}

// CheckCredentials checks that the keys of every credit source are in the environment,
// before anything is called. Errors are *config.Error naming the variable.
func CheckCredentials(cfg *config.Config, getenv func(string) string) error {
	if !cfg.MultiSource() {
		_, err := config.CredentialsFrom(cfg, getenv)
		return err
	}
	for _, sc := range cfg.Sources() {
		if _, err := config.SourceCredentials(cfg, sc, getenv); err != nil {
			return err
		}
	}
	return nil
}
