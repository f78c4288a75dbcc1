package report

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"

	"sitewatch/pipeline/changes"
)

// attentionOpen is how many domains of the needs-attention list show before the fold; the
// rest sit in a <details> below them, so the section stays short on a phone at 5,000 domains.
const attentionOpen = 10

// attentionSection is the report's first section: changes.Attention, the list `sitewatch
// changes`, the webhook digest and /metrics lead with, in the same order and words.
type attentionSection struct {
	Title, Rule, Query string
	Lead, More         []attentionRow
	Omitted            string // how many more the list names than the page draws (flaggedInPage), "" for none
}

type attentionRow struct {
	Rank     int
	Domain   string
	Reasons  []string
	Severity string // of the first reason: high | medium
}

// WriteWith is Write with the needs-attention settings of the config (attention.min_visits,
// attention.threshold; zero fields are the defaults). Its errors are Write's, and a failed
// read of the needs_attention view.
func WriteWith(ctx context.Context, db *sql.DB, snapshot string, s changes.AttentionSettings, w io.Writer) error {
	d, err := load(ctx, db, snapshot, settings{Attention: s})
	if err != nil {
		return err
	}
	return writePage(d, w)
}

// writePage builds the page of d and writes it to w whole, or nothing on an error.
func writePage(d *data, w io.Writer) error {
	p, err := build(d)
	if err != nil {
		return err
	}
	t, err := pageFor(d)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, p); err != nil {
		return fmt.Errorf("render html: %w", err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("write html: %w", err)
	}
	return nil
}

// attentionOf is the page's needs-attention section, or the note saying why there is none.
func attentionOf(d *data) *attentionSection {
	if d.Attention == nil {
		return &attentionSection{Title: "Needs attention: not available", Rule: d.AttentionNote}
	}
	return buildAttention(d.Attention)
}

func buildAttention(a *changes.Attention) *attentionSection {
	s := &attentionSection{Title: a.Title(), Rule: a.Rule(), Query: a.Query()}
	if n := len(a.Domains) - flaggedInPage; n > 0 {
		s.Omitted = count(n)
	}
	for i, d := range a.Domains[:min(len(a.Domains), flaggedInPage)] {
		row := attentionRow{Rank: d.Rank, Domain: d.Domain, Severity: d.Reasons[0].Severity}
		for _, r := range d.Reasons {
			row.Reasons = append(row.Reasons, r.Text)
		}
		if i < attentionOpen {
			s.Lead = append(s.Lead, row)
		} else {
			s.More = append(s.More, row)
		}
	}
	return s
}
