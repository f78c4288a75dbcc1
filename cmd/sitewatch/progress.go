package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"sitewatch/pipeline"
	"sitewatch/pipeline/model"
)

// progressLine draws a run's progress reports (pipeline.ProgressReport): a live line on a
// terminal, redrawn in place, or a structured log line per report otherwise.
type progressLine struct {
	stderr   io.Writer
	terminal bool       // stderr is a terminal
	width    func() int // the terminal's width in columns (nil or <= 0: 80)
	logger   *slog.Logger
}

// newProgressLine is the progress line of env's streams, logging through logger (the run's,
// which redacts its secrets).
func newProgressLine(env Env, logger *slog.Logger) progressLine {
	return progressLine{stderr: env.Stderr, terminal: env.IsTerminal, width: env.TermWidth, logger: logger}
}

// Event draws a progress report; it ignores every other event.
func (l progressLine) Event(_ context.Context, ev pipeline.Event) {
	rep, ok := ev.(pipeline.ProgressReport)
	if !ok {
		return
	}
	if !rep.Planned {
		l.probe(rep)
		return
	}
	credits := "?"
	if rep.Stats.CreditsRemaining >= 0 {
		credits = fmt.Sprint(rep.Stats.CreditsRemaining)
	}
	eta := "-"
	if rep.ETA >= 0 {
		eta = rep.ETA.Round(time.Second).String()
	}
	if l.terminal {
		end := "\r"
		if rep.Last {
			end = "\n"
		}
		fmt.Fprintf(l.stderr, "\r\033[K%s%s", fitLine(progressSegments(rep.Progress, rep.Stats, credits, eta), l.columns()), end)
		return
	}
	pr := rep.Progress
	l.logger.Info("progress", "month", pr.Month, "domains_done", pr.DomainsDone, "domains_total", pr.DomainsTotal,
		"calls_done", pr.CallsDone, "calls_total", pr.CallsTotal, "req_per_s", fmt.Sprintf("%.2f", pr.RatePerSecond),
		"rate_limited", rep.Stats.RateLimited, "credits_left", credits, "eta", eta, "stopping", pr.Stopping)
}

// probe is the progress of a run that has not planned yet: at a terminal a line saying so
// (cleared at the end: an up-to-date run ends here and its summary says the rest); in the
// log nothing, since the run's own lines say what it learned.
func (l progressLine) probe(rep pipeline.ProgressReport) {
	if !l.terminal {
		return
	}
	if rep.Last {
		fmt.Fprint(l.stderr, "\r\033[K")
		return
	}
	fmt.Fprintf(l.stderr, "\r\033[K%s", fitLine([]string{"asking the API which month it serves", fmt.Sprintf("calls %d", rep.CallsDone)}, l.columns()))
}

func (l progressLine) columns() int {
	if l.width != nil {
		if w := l.width(); w > 0 {
			return w
		}
	}
	return 80
}

// progressSegments are the parts of the live line, most important first; fitLine drops
// from the end until the line fits the terminal.
func progressSegments(pr pipeline.Progress, stats model.Stats, credits, eta string) []string {
	pct := 0.0
	if pr.CallsTotal > 0 {
		pct = 100 * float64(pr.CallsDone) / float64(pr.CallsTotal)
	}
	head := fmt.Sprintf("%3.0f%% %d/%d domains", pct, pr.DomainsDone, pr.DomainsTotal)
	if pr.Stopping {
		return []string{head, fmt.Sprintf("stopping: waiting for %d calls in flight — press Ctrl-C again to abort", stats.InFlight)}
	}
	return []string{head, "ETA " + eta, fmt.Sprintf("%.1f req/s", pr.RatePerSecond), "credits left " + credits,
		fmt.Sprintf("429s %d", stats.RateLimited), fmt.Sprintf("calls %d/%d", pr.CallsDone, pr.CallsTotal)}
}

// fitLine joins segments with two spaces, dropping trailing ones (and finally cutting the
// first) so the line is shorter than width: a line as wide as the terminal wraps.
func fitLine(segments []string, width int) string {
	limit := width - 1
	for n := len(segments); n > 0; n-- {
		line := strings.Join(segments[:n], "  ")
		if utf8.RuneCountInString(line) <= limit {
			return line
		}
	}
	r := []rune(segments[0])
	if limit < 1 {
		return ""
	}
	return string(r[:min(len(r), limit)])
}
