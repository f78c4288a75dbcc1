package metrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"

	"sitewatch/pipeline/atomicfile"
)

// Healthy applies the health rule at the Recorder's clock. A run or publish that showed no
// progress within its bound (Phase, Options.StallBound) is unhealthy whatever the months say. With W the current calendar month
// (UTC) and G the grace period: until the first of W plus G, the month before W must be
// complete; from then on, W itself. Otherwise it is unhealthy and reason says what is
// missing since when. The month is the API's data month, as the runs record it.
func (r *Recorder) Healthy() (ok bool, reason string) {
	now := r.opts.Now().UTC()
	if stuck, why := r.stuck(now); stuck {
		return false, why
	}
	start := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	deadline := start.Add(r.opts.HealthGrace)
	expected, dueSince := start, deadline
	if now.Before(deadline) {
		expected = start.AddDate(0, -1, 0)
		dueSince = expected.Add(r.opts.HealthGrace)
	}
	want := expected.Format("2006-01")
	r.mu.Lock()
	got := r.completed
	r.mu.Unlock()
	if got >= want {
		return true, fmt.Sprintf("ok: %s is complete (needed: %s; %s is due by %s)",
			got, want, start.Format("2006-01"), deadline.Format(time.RFC3339))
	}
	have := "no complete month is recorded"
	if got != "" {
		have = "the latest complete month is " + got
	}
	return false, fmt.Sprintf("unhealthy: %s; %s should be complete since %s (health_grace %s after the month's start, UTC)",
		have, want, dueSince.Format(time.RFC3339), r.opts.HealthGrace)
}

// Handler serves /metrics (Prometheus text or OpenMetrics, as the scraper asks) and /healthz
// (200 or 503, with the reason in a plain-text body).
func (r *Recorder) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(prometheus.Gatherers{r.reg, r.runtime}, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		ok, reason := r.Healthy()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_, _ = fmt.Fprintln(w, reason)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/" {
			http.NotFound(w, req)
			return
		}
		_, _ = fmt.Fprintln(w, "sitewatch: /metrics (Prometheus), /healthz")
	})
	return mux
}

// Serve listens on addr ("127.0.0.1:0" picks a free port) and serves Handler until ctx is
// done; then it shuts the server down, letting scrapes in flight finish for up to 5 s. It
// returns the address it listens on, after logging "metrics listening on http://HOST:PORT",
// or the listen error.
func (r *Recorder) Serve(ctx context.Context, addr string) (net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen on %s: %w (choose another --listen address)", addr, err)
	}
	srv := &http.Server{Handler: r.Handler(), ReadHeaderTimeout: 10 * time.Second}
	logger := r.opts.Logger
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && logger != nil {
			logger.Error("metrics server stopped", "addr", ln.Addr().String(), "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if logger != nil {
		logger.Info("metrics listening on http://" + ln.Addr().String())
	}
	return ln.Addr(), nil
}

// WriteTextfile writes the sitewatch_… metrics (not the Go and process ones, which
// node_exporter has of its own) to path for node_exporter's textfile collector. The file is
// written under a temporary name that does not end in .prom and renamed, so the collector
// never reads half a file. path must end in .prom, as the collector reads only those.
func (r *Recorder) WriteTextfile(path string) error {
	if r == nil {
		return nil
	}
	if !strings.HasSuffix(path, ".prom") {
		return fmt.Errorf("metrics: textfile %s must end in .prom (node_exporter's textfile collector reads only *.prom)", path)
	}
	families, err := r.reg.Gather()
	if err != nil {
		return fmt.Errorf("metrics: gather for %s: %w", path, err)
	}
	var buf bytes.Buffer
	for _, mf := range families {
		if _, err := expfmt.MetricFamilyToText(&buf, mf); err != nil {
			return fmt.Errorf("metrics: encode %s for %s: %w", mf.GetName(), path, err)
		}
	}
	if err := atomicfile.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("metrics textfile: %w", err)
	}
	return nil
}
