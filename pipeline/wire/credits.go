package wire

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"sitewatch/pipeline"
	"sitewatch/pipeline/atlas"
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/model"
	"sitewatch/pipeline/secret"
	"sitewatch/pipeline/sources"
	"sitewatch/pipeline/textout"
)

// Credits opens a run's credit sources for the core (pipeline.Credits): one pipeline/atlas
// client per source of the config, with the keys from the environment, and with api.sources
// each source's free probe and the plan of who pays for what (pipeline/sources).
type Credits struct{}

var (
	_ pipeline.Credits       = Credits{}
	_ pipeline.CreditSources = (*probedSources)(nil)
	_ pipeline.Fetcher       = (*atlas.Client)(nil)
	_ pipeline.QueueFetcher  = (*sources.Multi)(nil)
	_ pipeline.SourceCounter = (*sources.Multi)(nil)
)

// Open builds the clients of cfg's credit sources and, with api.sources, probes each one.
func (Credits) Open(ctx context.Context, cfg *config.Config, env pipeline.Env) (pipeline.CreditSources, error) {
	p, err := probeFetcher(ctx, cfg, env)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Fetcher is the run's fetcher for calls calls, each paid call fenced by admit (nil: none).
func (p *probedSources) Fetcher(ctx context.Context, calls int, admit func(context.Context) error, note ...any) (pipeline.Fetcher, error) {
	multi, _, err := p.fetcher(p.cfg, p.env, calls, note...)
	if err != nil {
		return nil, err
	}
	fenceCalls(multi, admit)
	return multi, nil
}

// openSources builds one client per credit source of cfg (api.sources, or the single-source
// form as a list of one), in config order. Errors are *config.Error: nothing was called.
func openSources(cfg *config.Config, env pipeline.Env) ([]*sources.Source, error) {
	if cfg.MultiSource() && cfg.BaseURLFromEnv() {
		env.Logger.Warn("ATLAS_BASE_URL overrides the base_url of every credit source", "base_url", secret.RedactURL(cfg.API.BaseURL))
	}
	var out []*sources.Source
	var budget *atlas.RunBudget
	if cfg.MultiSource() && cfg.API.MaxCreditsPerRun > 0 {
		budget = atlas.NewRunBudget(cfg.API.MaxCreditsPerRun) // the run's total, not each source's
	}
	for _, sc := range cfg.Sources() {
		creds, err := config.SourceCredentials(cfg, sc, env.Getenv)
		if !cfg.MultiSource() {
			creds, err = config.CredentialsFrom(cfg, env.Getenv) // its messages, as before
		}
		if err != nil {
			return nil, err
		}
		acfg := clientConfig(cfg, creds, env.Logger)
		acfg.BaseURL, acfg.Mode, acfg.MarketplaceHost = sc.BaseURL, atlas.Mode(sc.Mode), sc.MarketplaceHost
		acfg.RateLimit, acfg.MinCredits, acfg.Concurrency = sc.RateLimit, sc.MinCredits, runConcurrency(sc.RateLimit)
		acfg.RunBudget = budget
		acfg.RetryMaxElapsed = env.RetryMaxElapsed
		client, err := atlas.New(acfg)
		if err != nil {
			msg := err.Error()
			if cfg.MultiSource() {
				msg = fmt.Sprintf("source %s: %s", sc.Name, msg)
			}
			return nil, &config.Error{Path: cfg.Path, Msg: msg}
		}
		out = append(out, &sources.Source{Name: sc.Name, Client: client, Room: -1})
	}
	return out, nil
}

// SourceProbe is what one source's free probe said.
type SourceProbe struct {
	Name  string
	Mode  string
	Probe atlas.Probe
	Err   error // nil, or why the source cannot pay (402, key rejected, unreachable, ...)
}

// allowance turns a probe into what the source may pay for: its balance or remaining quota
// (the lower of the two when both are known) minus its reserve.
func allowance(sc config.SourceConfig, p atlas.Probe, rate float64) sources.Allowance {
	a := sources.Allowance{Name: sc.Name, Usable: -1, Rate: rate}
	if p.RateLimit > 0 {
		a.Rate = min(a.Rate, p.RateLimit)
	}
	switch {
	case p.QuotaRemaining >= 0:
		a.Usable, a.Quota, a.Reset = p.QuotaRemaining, true, p.QuotaReset
		if sc.Mode == "direct" && p.Balance >= 0 {
			a.Usable = min(a.Usable, p.Balance)
		}
	case p.Balance >= 0:
		a.Usable = p.Balance
	}
	if a.Usable >= 0 {
		a.Usable = max(a.Usable-sc.MinCredits, 0)
	}
	return a
}

// probeSources makes each source's free probe (one request without url, 0 credits) and
// plans who pays for calls calls. A source that cannot pay (402) gets no share; any other
// failure is returned (the first, naming its source) with what was learned.
func probeSources(ctx context.Context, cfg *config.Config, srcs []*sources.Source, calls int, now time.Time) (*sources.Plan, []SourceProbe, error) {
	allow, probes, err := probeAllowances(ctx, cfg, srcs)
	return sources.NewPlan(allow, calls, nextScheduled(cfg, now)), probes, err
}

// probeAllowances makes each source's free probe and says what each may pay for (a source
// that answers 402: nothing); any other failure is returned, the first, naming its source.
func probeAllowances(ctx context.Context, cfg *config.Config, srcs []*sources.Source) ([]sources.Allowance, []SourceProbe, error) {
	var allow []sources.Allowance
	var firstErr error
	probes := make([]SourceProbe, len(srcs))
	var wg sync.WaitGroup
	for i, sc := range cfg.Sources() { // at once: a run starts after the slowest, not the sum
		wg.Go(func() {
			p, err := srcs[i].Client.Probe(ctx)
			probes[i] = SourceProbe{Name: sc.Name, Mode: sc.Mode, Probe: p, Err: err}
		})
	}
	wg.Wait()
	for i, sc := range cfg.Sources() {
		p, err := probes[i].Probe, probes[i].Err
		a := allowance(sc, p, sc.RateLimit)
		switch {
		case errors.Is(err, model.ErrOutOfCredits):
			a.Usable = 0
		case err != nil && firstErr == nil:
			firstErr = fmt.Errorf("source %s: %w", sc.Name, err)
		}
		allow = append(allow, a)
	}
	return allow, probes, firstErr
}

// nextScheduled is the next run of cfg's schedule after now (zero if it does not parse;
// validate has already refused such a config).
func nextScheduled(cfg *config.Config, now time.Time) time.Time {
	sched, err := cron.ParseStandard(cfg.Schedule)
	if err != nil {
		return time.Time{}
	}
	return sched.Next(now)
}

// probedSources are a run's credit sources and what their free probes said. Who pays for what
// is planned later (fetcher), once the bucket's pull told what the month still lacks: planned
// at once, the plan counted the whole month even when the bucket held most of it.
type probedSources struct {
	cfg   *config.Config
	env   pipeline.Env
	srcs  []*sources.Source
	allow []sources.Allowance // with api.sources only
}

// probeFetcher opens the run's credit sources and, with api.sources, makes each one's free
// probe. Every source empty or at its reserve is a credit stop (exit 3) here, before the lease
// is taken: no plan would give any of them a call.
func probeFetcher(ctx context.Context, cfg *config.Config, env pipeline.Env) (*probedSources, error) {
	srcs, err := openSources(cfg, env)
	if err != nil {
		return nil, err
	}
	p := &probedSources{cfg: cfg, env: env, srcs: srcs}
	if !cfg.MultiSource() {
		return p, nil
	}
	if p.allow, _, err = probeAllowances(ctx, cfg, srcs); err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(p.allow, func(a sources.Allowance) bool { return a.Usable != 0 }) {
		plan := sources.NewPlan(p.allow, len(cfg.Domains)*2+1, nextScheduled(cfg, env.Now()))
		return nil, fmt.Errorf("%w: every credit source is empty or at its reserve (%s)", model.ErrOutOfCredits, plan)
	}
	return p, nil
}

// fetcher returns the run's fetcher for a run that needs calls calls. With one source it is
// that source's client (no extra call). With api.sources the sources are ordered by the spend
// plan of those calls and given their room; a source that cannot pay is left out (all out: a
// credit stop, exit 3). The plan is logged: the figures a run then pays.
func (p *probedSources) fetcher(cfg *config.Config, env pipeline.Env, calls int, note ...any) (*sources.Multi, *sources.Plan, error) {
	if !cfg.MultiSource() {
		return sources.NewMulti(p.srcs), nil, nil
	}
	calls, capped := capCalls(cfg, calls)
	plan := sources.NewPlan(p.allow, calls, nextScheduled(cfg, env.Now()))
	byName := map[string]*sources.Source{}
	for _, s := range p.srcs {
		byName[s.Name] = s
	}
	var ordered []*sources.Source
	for _, sh := range plan.Shares {
		s := byName[sh.Name]
		s.Room = sh.Usable
		if capped {
			s.Room = int64(sh.Calls) // its share of the cap, in spend order
		}
		if s.Room == 0 {
			continue // nothing to pay with (402 or at its reserve), or no share of the cap
		}
		ordered = append(ordered, s)
	}
	if len(ordered) == 0 {
		return nil, plan, fmt.Errorf("%w: every credit source is empty or at its reserve (%s)", model.ErrOutOfCredits, plan)
	}
	env.Logger.Info("credit sources planned", append([]any{"calls", calls, "plan", plan.String()}, note...)...)
	multi := sources.NewMulti(ordered)
	if capped {
		multi.Cap(&model.Error{Op: "start", Err: model.ErrRunBudget, Message: fmt.Sprintf(
			"the %s credits of api.max_credits_per_run are spent across the credit sources (%s)", textout.Thousands(cfg.API.MaxCreditsPerRun), plan)})
	}
	return multi, plan, nil
}

// capCalls is the calls a run plans under api.max_credits_per_run: all of them, or the cap
// when it is lower (capped true: the sources' shares of the cap are then hard limits, so the
// cap is spent in spend order, what expires first first).
func capCalls(cfg *config.Config, calls int) (int, bool) {
	if lim := cfg.API.MaxCreditsPerRun; lim > 0 && lim < int64(calls) {
		return int(lim), true
	}
	return calls, false
}

// fenceCalls makes every credit source's client pass the lease's fence before each call.
func fenceCalls(f *sources.Multi, admit func(context.Context) error) {
	if f == nil || admit == nil {
		return
	}
	for _, s := range f.Sources() {
		s.Client.SetFence(admit)
	}
}

func clientConfig(cfg *config.Config, creds config.Credentials, logger *slog.Logger) atlas.Config {
	return atlas.Config{
		BaseURL:           cfg.API.BaseURL,
		Mode:              atlas.Mode(cfg.API.Mode),
		APIKey:            creds.APIKey,
		MarketplaceHost:   cfg.API.MarketplaceHost,
		MarketplaceKey:    creds.MarketplaceKey,
		RateLimit:         cfg.API.RateLimit,
		MinCredits:        cfg.API.MinCredits,
		MaxCreditsPerRun:  cfg.API.MaxCreditsPerRun,
		Timeout:           cfg.API.Timeout.Duration,
		AllowInsecureHTTP: cfg.API.AllowInsecureHTTP,
		MaxWastedCredits:  cfg.API.MaxWastedCredits,
		MaxRateLimitWait:  cfg.API.MaxRateLimitWait.Duration,
		Concurrency:       runConcurrency(cfg.API.RateLimit),
		Logger:            logger,
	}
}

// maxRunConcurrency bounds the calls a run keeps in flight (one worker goroutine each, with a
// grown stack and a connection). The client's default, three seconds of calls at the rate
// limit, grew without bound with rate_limit: 10000 meant a worker per planned call, 20,000
// goroutines and 175 MB of stacks at 10,000 domains; 1,024 still left 1,100–1,400 goroutines
// and ~95 MB of Go memory there (docs/warehouse-internals.md, "Memory"). 256 calls in flight
// keep 300 calls/s going at an API latency of 850 ms (the reference limit is 3 calls/s:
// 10 in flight).
const maxRunConcurrency = 256

// runConcurrency is the client's default concurrency for rate calls/s, capped.
func runConcurrency(rate float64) int {
	return min(int(math.Ceil(rate*3))+1, maxRunConcurrency)
}
