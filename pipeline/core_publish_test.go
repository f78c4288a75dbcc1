package pipeline

import (
	"context"
	"errors"
	"strings"
	"testing"

	"sitewatch/pipeline/config"
)

// fakePublisher records the months it was asked to upload.
type fakePublisher struct {
	months []string
	fold   bool
}

func (p *fakePublisher) Month(_ context.Context, _ *config.Config, month, _ string, opts PublishOptions) (*Upload, error) {
	p.months, p.fold = append(p.months, month), opts.FoldLogs
	return &Upload{ManifestURL: "s3://bucket/sitewatch/manifest.json", Files: 3, Uploaded: 2, Unchanged: 1}, nil
}

func (p *fakePublisher) RestoreCopy(context.Context, *config.Config, string, string, PublishOptions) (*Upload, error) {
	return nil, errors.New("a complete month saves no restore copy")
}

// TestPublishAfterACompleteRun: a complete run uploads its month through Env.Publisher and
// says what it uploaded; with publish.url but no Publisher the upload fails naming the missing
// wiring; without publish.url and without a Publisher nothing is uploaded and nothing fails.
func TestPublishAfterACompleteRun(t *testing.T) {
	for _, tc := range []struct {
		name, url     string
		publisher     *fakePublisher
		wantErr       error
		wantPublished string
	}{
		{name: "Publisher", url: "s3://bucket/sitewatch", publisher: &fakePublisher{},
			wantPublished: "s3://bucket/sitewatch/manifest.json: 2 files uploaded, 1 unchanged"},
		{name: "NoPublisher", url: "s3://bucket/sitewatch", wantErr: errNoPublisher},
		{name: "NoURL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &config.Config{}
			cfg.Publish.URL = tc.url
			env := Env{}.WithDefaults()
			if tc.publisher != nil {
				env.Publisher = tc.publisher
			}
			r := &runState{runInputs: runInputs{cfg: cfg, env: env}, monthState: newMonthState(), foldLogs: true,
				sum: &Summary{RunID: "run-1", Snapshot: "2026-10", Status: StatusComplete}}
			err := r.publishAfter(context.Background(), nil)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("publishAfter: %v, want %v", err, tc.wantErr)
			}
			if r.sum.Published != tc.wantPublished {
				t.Errorf("Published %q, want %q", r.sum.Published, tc.wantPublished)
			}
			if tc.wantErr != nil && !strings.Contains(r.sum.PublishError, "Env.Publisher") {
				t.Errorf("PublishError %q does not name the missing Env.Publisher", r.sum.PublishError)
			}
			if p := tc.publisher; p != nil && (len(p.months) != 1 || p.months[0] != "2026-10" || !p.fold) {
				t.Errorf("uploaded %v (fold %v), want [2026-10] folding the answer log", p.months, p.fold)
			}
		})
	}
}
