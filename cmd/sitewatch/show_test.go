package main

import (
	"encoding/json"
	"strings"
	"testing"

	"sitewatch/pipeline/changes/attentiontest"
)

// TestShowDomain: faller.com's months with MoM and YoY, its needs-attention row, its
// competitors; JSON for scripts; an unknown domain says what to do; a title holding ESC [2J
// and an OSC title sequence reaches the terminal escaped and the JSON exact.
func TestShowDomain(t *testing.T) {
	cfg := attentionProject(t, `UPDATE sites SET title = 'Faller'||chr(27)||'[2J'||chr(27)||']0;pwned'||chr(7) WHERE domain = 'faller.com';
		INSERT INTO similar_sites (snapshot_month, domain, position, similar_domain, total_visits, global_rank) VALUES ('2026-10', 'faller.com', 1, 'riser.com', 625000, 20000)`)
	code, out, errOut := mainOut("", "show", "https://www.Faller.com/x", "--config", cfg)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		`faller.com — Faller\x1b[2J\x1b]0;pwned\a (latest snapshot 2026-10)`,
		"Needs attention in " + attentiontest.Month + " (#3 of the list)",
		"high  visits_fell: " + attentiontest.FallerReason,
		"2026-10   1.30M  −35.0%", "#5,100",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "riser.com       625k      #20,000  yes") {
		t.Errorf("show lacks riser.com as a competitor on the watchlist:\n%s", out)
	}
	if strings.ContainsAny(out, "\x1b\a") {
		t.Errorf("show wrote a raw control character:\n%q", out)
	}
	code, out, errOut = mainOut("", "show", "faller.com", "--config", cfg, "--format", "json")
	if code != ExitOK {
		t.Fatalf("json: exit %d: %s", code, errOut)
	}
	var v struct {
		Title     string
		Months    []struct{ Month string }
		Attention []struct{ Kind string } `json:"needs_attention"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if v.Title != "Faller\x1b[2J\x1b]0;pwned\a" || len(v.Months) != 13 || len(v.Attention) != 1 || v.Attention[0].Kind != "visits_fell" {
		t.Errorf("json: title %q, %d months, attention %v", v.Title, len(v.Months), v.Attention)
	}
	code, _, errOut = mainOut("", "show", "nosuch.example", "--config", cfg)
	if code != ExitFailed || !strings.Contains(errOut, "not in the warehouse") || !strings.Contains(errOut, "sitewatch run") {
		t.Errorf("unknown domain: exit %d, %s", code, errOut)
	}
	code, _, errOut = mainOut("", "show", "rising.net", "--config", cfg)
	if code != ExitFailed || !strings.Contains(errOut, "sitewatch discover --add") {
		t.Errorf("a candidate: exit %d, %s", code, errOut)
	}
	if code, _, _ := mainOut("", "show", "--config", cfg); code != ExitUsage {
		t.Errorf("no domain: exit %d, want 2", code)
	}
}

// TestQueryEscapesControlCharacters: a site title holding ESC [2J and an OSC title sequence
// prints escaped in query's table, exact in CSV and JSON.
func TestQueryEscapesControlCharacters(t *testing.T) {
	cfg := attentionProject(t, `UPDATE sites SET title = 'Faller'||chr(27)||'[2J'||chr(27)||']0;pwned'||chr(7) WHERE domain = 'faller.com'`)
	q := "SELECT DISTINCT title FROM sites WHERE domain = 'faller.com'"
	_, table, _ := mainOut("", "query", "--config", cfg, q)
	if !strings.Contains(table, `Faller\x1b[2J\x1b]0;pwned\a`) || strings.ContainsAny(table, "\x1b\a") {
		t.Errorf("table:\n%q", table)
	}
	_, csvOut, _ := mainOut("", "query", "--config", cfg, "--format", "csv", q)
	_, jsonOut, _ := mainOut("", "query", "--config", cfg, "--format", "json", q)
	if !strings.Contains(csvOut, "Faller\x1b[2J\x1b]0;pwned\a") || !strings.Contains(jsonOut, `Faller\u001b[2J\u001b]0;pwned\u0007`) {
		t.Errorf("csv %q, json %q: want the title exact", csvOut, jsonOut)
	}
}

// TestShowDomainEveryFlaggedMonth: giant.com's September halved makes it fall in 2026-09 and
// rise in 2026-10; show names both months, newest first, in the table and in JSON, not only
// the latest.
func TestShowDomainEveryFlaggedMonth(t *testing.T) {
	cfg := attentionProject(t, `UPDATE traffic_history SET visits = visits / 2 WHERE domain = 'giant.com' AND month = DATE '2026-09-01'`)
	code, out, errOut := mainOut("", "show", "giant.com", "--config", cfg)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	oct := strings.Index(out, "Needs attention in "+attentiontest.Month+" (#")
	sep := strings.Index(out, "Needs attention in "+attentiontest.Previous+" (#")
	if oct < 0 || sep < oct || !strings.Contains(out[sep:], "visits_fell: fell 50.2%") || !strings.Contains(out[oct:sep], "visits_rose: ") {
		t.Errorf("show does not name both months giant.com was flagged in, newest first:\n%s", out)
	}
	code, out, errOut = mainOut("", "show", "giant.com", "--config", cfg, "--format", "json")
	if code != ExitOK {
		t.Fatalf("json: exit %d: %s", code, errOut)
	}
	var v struct {
		Attention []struct {
			Month string `json:"snapshot_month"`
			Kind  string
		} `json:"needs_attention"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var got []string
	for _, r := range v.Attention {
		got = append(got, r.Month+" "+r.Kind)
	}
	if want := attentiontest.Month + " visits_rose, " + attentiontest.Previous + " visits_fell"; strings.Join(got, ", ") != want {
		t.Errorf("json needs_attention: %s, want %s", strings.Join(got, ", "), want)
	}
}
