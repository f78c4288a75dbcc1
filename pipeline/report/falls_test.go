package report

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"sitewatch/pipeline/changes"
	"sitewatch/pipeline/changes/attentiontest"
	"sitewatch/pipeline/numfmt"
)

// TestLargestFallsSection: on the planted-case dataset the report has a Largest falls section
// of its own, listing changes.ReadLargestFalls (what `sitewatch changes` prints) in its order:
// vanished.com's fall to 0 first, then faller.com's 35 %; every domain in it links to a panel
// that exists; the headline's largest-fall card names the section's first domain, linked.
func TestLargestFallsSection(t *testing.T) {
	db := openWarehouse(t)
	attentiontest.Load(t, db)
	ctx := context.Background()
	var buf bytes.Buffer
	if err := Write(ctx, db, attentiontest.Month, &buf); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	want, err := changes.ReadLargestFalls(ctx, db, attentiontest.Month, 0, changes.MaxLinesPerSection)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 2 || want[0].Domain != "vanished.com" || want[1].Domain != "faller.com" {
		t.Fatalf("the fixture's largest falls are %v, want vanished.com then faller.com first", want)
	}
	at := strings.Index(page, `<section id="falls">`)
	if at < 0 {
		t.Fatal("the report has no Largest falls section")
	}
	section := page[at : at+strings.Index(page[at:], "</section>")]
	if !strings.Contains(section, "Largest falls in visits in "+attentiontest.Month+" (at least 10.0k visits the month before)") {
		t.Errorf("the section lacks changes' heading:\n%s", section)
	}
	rows := regexp.MustCompile(`<tr><td class="num">(\d+)</td><td class="d"><a href="#d-([a-z0-9.-]+)">([a-z0-9.-]+)</a></td><td class="num down">([^<]+)</td>`).FindAllStringSubmatch(section, -1)
	if len(rows) != len(want) {
		t.Fatalf("the section lists %d falls (each linked to its panel), changes %d:\n%s", len(rows), len(want), section)
	}
	for i, r := range rows {
		if r[2] != want[i].Domain || r[3] != want[i].Domain || r[4] != changesPct(want[i].ChangePct) {
			t.Errorf("row %d = %s %s, want %s %s", i+1, r[3], r[4], want[i].Domain, changesPct(want[i].ChangePct))
		}
		if !strings.Contains(page, `id="d-`+r[2]+`"`) {
			t.Errorf("%s links to a panel the page does not have", r[2])
		}
	}
	if rows[0][4] != "−100.0%" {
		t.Errorf("the fall to 0 reads %s, want −100.0%%", rows[0][4])
	}
	card := regexp.MustCompile(`<div class="label">Largest fall in visits, MoM</div><div class="value"><a href="#d-vanished.com">vanished.com</a></div>`)
	if !card.MatchString(page) {
		t.Error("the headline's largest fall is not vanished.com, the section's first, linked to its panel")
	}
	for _, item := range attentionItems(t, page) {
		for _, f := range want {
			if strings.Contains(item, f.Domain) && !attentionNames(f.Domain) {
				t.Errorf("needs attention lists %s, a fall it does not flag: %s", f.Domain, item)
			}
		}
	}
}

func changesPct(pct float64) string { return numfmt.Change(pct / 100) }

// attentionNames says whether the planted list names domain.
func attentionNames(domain string) bool {
	for _, e := range attentiontest.Expected {
		if e.Domain == domain {
			return true
		}
	}
	return false
}
