package pipeline

import (
	"sitewatch/pipeline/config"
	"sitewatch/pipeline/secret"
)

// secretEnv names the environment variables that hold secrets a peer's answer could echo.
var secretEnv = []string{config.EnvAPIKey, config.EnvMarketplaceKey, "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
	"SITEWATCH_CATALOG_PASSWORD"}

// configSecrets is every secret cfg and the environment configure: the API keys, the S3
// secret and session token, the catalog password and the webhook URL's token parts (path,
// query, userinfo).
func configSecrets(cfg *config.Config, getenv func(string) string) *secret.Set {
	var values []string
	for _, name := range secretEnv {
		values = append(values, getenv(name))
	}
	// With api.sources each source names its own key variables; their values are as secret.
	for _, src := range cfg.API.Sources {
		values = append(values, getenv(src.KeyEnv), getenv(src.MarketplaceKeyEnv))
	}
	return secret.Join(values, secret.URLParts(cfg.Notify.WebhookURL))
}

// redacting returns e with a logger that removes every configured secret from what it
// writes: log lines quote answers of untrusted peers (the API, the webhook, the bucket).
func (e Env) redacting(cfg *config.Config) (Env, *secret.Set) {
	s := configSecrets(cfg, e.Getenv)
	e.Logger = secret.Logger(e.Logger, s)
	return e, s
}

// RedactingEnv returns env with a logger that removes every secret cfg and the environment
// configure (see configSecrets): for commands other than run and schedule (publish, status)
// whose logs quote what the bucket answered.
func RedactingEnv(env Env, cfg *config.Config) Env {
	env, _ = env.WithDefaults().redacting(cfg)
	return env
}
