package metrics

import (
	"context"
	"fmt"
	"io"
	"net/http"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// Families are parsed metric families by name, as Scrape and ParseText return them: what an
// end-to-end test (or a probe script) asserts on.
type Families map[string]*dto.MetricFamily

// ParseText parses the Prometheus text exposition format (what /metrics and a textfile hold).
func ParseText(r io.Reader) (Families, error) {
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("metrics: parse the text exposition: %w", err)
	}
	return fams, nil
}

// Scrape gets baseURL + "/metrics" in the text format and parses it.
func Scrape(ctx context.Context, baseURL string) (Families, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/metrics", nil)
	if err != nil {
		return nil, fmt.Errorf("metrics: scrape %s: %w", baseURL, err)
	}
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("metrics: scrape %s: %w", baseURL, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("metrics: scrape %s/metrics: answered %d", baseURL, resp.StatusCode)
	}
	return ParseText(resp.Body)
}

// Value returns the value of the first sample of name whose labels include the given
// label/value pairs (a histogram's sample count), and whether there is one.
func (f Families) Value(name string, labelPairs ...string) (float64, bool) {
	mf, ok := f[name]
	if !ok {
		return 0, false
	}
	for _, m := range mf.GetMetric() {
		if hasLabels(m, labelPairs) {
			return sampleValue(m), true
		}
	}
	return 0, false
}

func hasLabels(m *dto.Metric, pairs []string) bool {
	have := map[string]string{}
	for _, l := range m.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		if have[pairs[i]] != pairs[i+1] {
			return false
		}
	}
	return true
}

func sampleValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Histogram != nil:
		return float64(m.GetHistogram().GetSampleCount())
	case m.Summary != nil:
		return float64(m.GetSummary().GetSampleCount())
	}
	return m.GetUntyped().GetValue()
}
