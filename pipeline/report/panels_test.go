package report

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"sitewatch/pipeline/changes"
	"sitewatch/pipeline/changes/attentiontest"
)

// TestEveryFlaggedDomainHasAPanel: each domain needs attention names has a panel (id d-DOMAIN)
// with its reasons, its history chart, channels and competitors lines, and every mention of it
// in the page — its needs-attention line, a headline card, a table cell — links there; no
// link points at an id the page lacks, and no literal backtick is left in the page.
func TestEveryFlaggedDomainHasAPanel(t *testing.T) {
	db := openWarehouse(t)
	attentiontest.Load(t, db)
	var buf bytes.Buffer
	if err := Write(context.Background(), db, attentiontest.Month, &buf); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	a, err := changes.ReadAttention(context.Background(), db, attentiontest.Month, changes.AttentionSettings{})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Domains) == 0 {
		t.Fatal("the fixture flags no domain")
	}
	att := page[strings.Index(page, `<section id="attention">`):]
	att = att[:strings.Index(att, "</section>")]
	for _, dom := range a.Domains {
		id := "d-" + dom.Domain
		i := strings.Index(page, `id="`+id+`"`)
		if i < 0 {
			t.Errorf("%s has no panel", dom.Domain)
			continue
		}
		p := page[i:]
		p = p[:strings.Index(p, "↑ Needs attention")]
		for _, want := range []string{"<svg", "Channels: ", "Competitors: ", dom.Reasons[0].Text[:8]} {
			if !strings.Contains(p, want) {
				t.Errorf("%s's panel lacks %q", dom.Domain, want)
			}
		}
		if !strings.Contains(att, `<a href="#`+id+`">`+dom.Domain+`</a>`) {
			t.Errorf("%s's needs-attention line does not link to its panel", dom.Domain)
		}
	}
	if i := strings.Index(page, "`"); i >= 0 {
		t.Errorf("a literal backtick in the page: …%s…", page[max(0, i-60):min(len(page), i+60)])
	}
	for _, m := range regexp.MustCompile(`href="#([^"]+)"`).FindAllStringSubmatch(page, -1) {
		if !strings.Contains(page, `id="`+m[1]+`"`) {
			t.Errorf("a link to #%s, which no element has", m[1])
		}
	}
}
