package metrics

import "github.com/prometheus/client_golang/prometheus"

// AttentionLeadDomains bounds the domains sitewatch_needs_attention_rank labels (the list's
// head, as the webhook digest names it), so the series stay few.
const AttentionLeadDomains = 10

// Attention is the needs-attention list of the latest complete month as /metrics shows it.
type Attention struct {
	Month   string
	Domains int            // domains listed
	ByKind  map[string]int // domains listed per reason kind (every kind, 0 when none)
	// BySeverity counts the domains listed per severity of their first (loudest) reason, every
	// severity present (0 when none), in the words of every other surface: high, medium.
	BySeverity map[string]int
	Lead       []AttentionLead
}

// AttentionLead is one of the first domains of the list.
type AttentionLead struct {
	Domain   string
	Kind     string // the reason kind of its first row
	Severity string // the severity of its first row: high | medium
	Rank     int    // 1 = first
}

type attentionMetrics struct {
	domains    *prometheus.GaugeVec
	byKind     *prometheus.GaugeVec
	bySeverity *prometheus.GaugeVec
	rank       *prometheus.GaugeVec
}

func (f promFactory) attention() attentionMetrics {
	a := attentionMetrics{
		domains: f.gaugeVec("sitewatch_needs_attention_domains", "Domains on the needs-attention list (view needs_attention) of the latest complete month.", "month"),
		byKind:  f.gaugeVec("sitewatch_needs_attention_reasons", "Domains on the needs-attention list of the latest complete month, by reason kind.", "kind"),
		bySeverity: f.gaugeVec("sitewatch_needs_attention_severity",
			"Domains on the needs-attention list of the latest complete month, by the severity of their first reason (high, medium).", "severity"),
	}
	a.rank = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sitewatch_needs_attention_rank",
		Help: "Position (1 = first) of each of the first 10 domains of the needs-attention list, labelled with the domain, its first reason kind and that reason's severity."},
		[]string{"domain", "kind", "severity"})
	f.reg.MustRegister(a.rank)
	return a
}

// NeedsAttention replaces the needs-attention series with a (the list of the latest complete
// month); a list of an older month than the one shown is ignored.
func (r *Recorder) NeedsAttention(a Attention) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if a.Month < r.attentionMonth {
		return
	}
	r.attentionMonth = a.Month
	r.attention.domains.Reset()
	r.attention.domains.WithLabelValues(a.Month).Set(float64(a.Domains))
	r.attention.byKind.Reset()
	for kind, n := range a.ByKind {
		r.attention.byKind.WithLabelValues(kind).Set(float64(n))
	}
	r.attention.bySeverity.Reset()
	for severity, n := range a.BySeverity {
		r.attention.bySeverity.WithLabelValues(severity).Set(float64(n))
	}
	r.attention.rank.Reset()
	for i, d := range a.Lead {
		if i == AttentionLeadDomains {
			break
		}
		r.attention.rank.WithLabelValues(d.Domain, d.Kind, d.Severity).Set(float64(d.Rank))
	}
}
