package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sitewatch/pipeline/config"
	"slices"
	"strings"
	"time"
)

// AutoPublishBound bounds the upload a run makes of the month it completed. The S3 client's
// own deadlines end a hung request sooner; this bounds the whole upload, so a bucket that
// answers too slowly never keeps a run (or the schedule behind it) from ending.
const AutoPublishBound = 30 * time.Minute

// publishAfter publishes what the run leaves in the bucket: the month it completed, in full;
// else the restore copy (raw answers, ledger, run health) of the month it stopped in, so a
// runner without a disk of its own loses no answer it paid for: the next runner's
// --restore-if-missing brings them back and pays only for what is missing. A failure to save
// the copy is reported in the summary and never changes why the run stopped (runErr). An
// up-to-date run adds no answer: `sitewatch publish` uploads its runs and ledger.
func (r *runState) publishAfter(ctx context.Context, runErr error) error {
	switch {
	case runErr == nil && r.sum.Status == StatusComplete:
		return r.publish(ctx)
	case r.sum.Snapshot != "" && r.mismatch == nil && r.sum.Status != StatusUpToDate && r.cfg.Publish.URL != "":
		r.saveRestoreCopies(ctx)
	}
	return runErr
}

// paidMonths is every month the run stored answers under: its own, then (after a month turn)
// the months the API turned to, in order.
func (r *runState) paidMonths() []string {
	months := []string{r.sum.Snapshot}
	for _, m := range slices.Sorted(maps.Keys(r.touched)) {
		if m != r.sum.Snapshot {
			months = append(months, m)
		}
	}
	return months
}

// saveRestoreCopies uploads the restore copy of every month the run paid answers for, within
// one publish bound: at a month turn the new month's answers are as paid as the old month's,
// and a runner without a disk of its own would pay them again if only the old month were
// saved (issue 32 item 8).
func (r *runState) saveRestoreCopies(ctx context.Context) {
	bound := r.env.PublishBound
	if bound <= 0 {
		bound = AutoPublishBound
	}
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	var saved, failed []string
	for _, month := range r.paidMonths() {
		res, err := r.publisher().RestoreCopy(ctx, r.cfg, month, r.sum.RunID, r.publishOptions())
		if err != nil {
			err = explainPublishStop(ctx, bound, err)
			r.env.Logger.Warn("could not save the restore copy of the incomplete month", "snapshot", month, "err", err)
			failed = append(failed, fmt.Sprintf("the restore copy of %s (its paid answers) did not reach the bucket: %v", month, err))
			continue
		}
		if res != nil && res.Files > 0 { // none: the bucket holds the month complete
			saved = append(saved, fmt.Sprintf("restore copy of the incomplete %s (raw answers, ledger; its tables wait for a complete month): %s: %d files uploaded, %d unchanged",
				month, res.ManifestURL, res.Uploaded, res.Unchanged))
		}
	}
	failure := ""
	if len(failed) > 0 {
		failure = strings.Join(failed, "; ") + "; `sitewatch publish` retries it"
	}
	r.sum.notePublished(strings.Join(saved, "; "), failure)
}

// publish uploads the month just completed to publish.url. A failing bucket never undoes the
// local load: the run reports it apart (exit 1) and `sitewatch publish` retries. A signal
// (SIGINT/SIGTERM) ends the upload at once: the bucket keeps what it had, as after a crash.
func (r *runState) publish(ctx context.Context) error {
	bound := r.env.PublishBound
	if bound <= 0 {
		bound = AutoPublishBound
	}
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	r.tell(ctx, PhaseChanged{Name: "publish", Bound: bound + time.Minute})
	defer r.tell(ctx, PhaseChanged{})
	res, err := r.publisher().Month(ctx, r.cfg, r.sum.Snapshot, r.sum.RunID, r.publishOptions())
	if err != nil {
		err = explainPublishStop(ctx, bound, err)
		r.sum.notePublished("", err.Error())
		return fmt.Errorf("%w (the month is loaded locally; `sitewatch publish --snapshot %s` retries the upload)", err, r.sum.Snapshot)
	}
	if res != nil {
		r.sum.notePublished(fmt.Sprintf("%s: %d files uploaded, %d unchanged", res.ManifestURL, res.Uploaded, res.Unchanged), "")
	}
	return nil
}

// publishOptions are the options of the run's own publish: it folds the answer log's
// segments its warehouse holds only if the run still held the lease when it stopped paying.
func (r *runState) publishOptions() PublishOptions {
	return PublishOptions{Logger: r.env.Logger, FoldLogs: r.foldLogs}
}

// Upload is what a publish put in the bucket.
type Upload struct {
	ManifestURL                string
	Files, Uploaded, Unchanged int // the month's data objects; those uploaded; those already there
}

// PublishOptions are what a run's publish is told by the run.
type PublishOptions struct {
	Logger *slog.Logger
	// FoldLogs: the run still held the lease when it stopped paying, so its publish may fold
	// (and remove) the answer-log segments its warehouse holds.
	FoldLogs bool
}

// Publisher uploads what a run leaves in the bucket of publish.url: pipeline/wire implements it
// over pipeline/publish, with the formats the wiring writes after the Hive layout (Iceberg);
// cmd/sitewatch sets Env.Publisher. Either method returns a nil *Upload when publishing is off.
type Publisher interface {
	// Month uploads month, just completed (never over a month another machine ran after this
	// one synced); its error names the month.
	Month(ctx context.Context, cfg *config.Config, month, runID string, opts PublishOptions) (*Upload, error)
	// RestoreCopy uploads the restore copy (raw answers, ledger, run health) of month, which
	// the run left incomplete.
	RestoreCopy(ctx context.Context, cfg *config.Config, month, runID string, opts PublishOptions) (*Upload, error)
}

// errNoPublisher is the error of a run with publish.url whose Env names no Publisher.
var errNoPublisher = errors.New("pipeline: Env.Publisher is not set (cmd/sitewatch sets pipeline/wire.Publisher): nothing was uploaded")

// explainPublishStop names why an upload ended early when its context did: a signal or the
// bound, not the bucket.
func explainPublishStop(ctx context.Context, bound time.Duration, err error) error {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("publish did not finish within %s (the bucket hangs or is too slow): %w", bound, err)
	case errors.Is(ctx.Err(), context.Canceled):
		return fmt.Errorf("publish interrupted by a signal: %w", err)
	}
	return err
}

// publisher is Env.Publisher; without one, a run with no publish.url publishes nothing and a run
// with one fails its upload with errNoPublisher.
func (r *runState) publisher() Publisher {
	if r.env.Publisher != nil {
		return r.env.Publisher
	}
	return missingPublisher{}
}

type missingPublisher struct{}

func (missingPublisher) Month(_ context.Context, cfg *config.Config, _, _ string, _ PublishOptions) (*Upload, error) {
	return nil, missingPublisherErr(cfg)
}

func (missingPublisher) RestoreCopy(_ context.Context, cfg *config.Config, _, _ string, _ PublishOptions) (*Upload, error) {
	return nil, missingPublisherErr(cfg)
}

func missingPublisherErr(cfg *config.Config) error {
	if cfg.Publish.URL == "" {
		return nil
	}
	return errNoPublisher
}
