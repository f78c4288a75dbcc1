package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sitewatch/pipeline/changes/attentiontest"
	"sitewatch/pipeline/warehouse"
)

// attentionProject writes a config and a warehouse holding the needs-attention fixture
// (pipeline/changes/attentiontest: a vanished domain, a 35 % fall, a giant within its usual
// ±, a quiet month) plus extra, written by extra; it returns the config path.
func attentionProject(t *testing.T, extra string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "domains.yaml")
	if err := os.WriteFile(cfg, []byte("api:\n  base_url: http://127.0.0.1:1\nwarehouse:\n  duckdb: data/w.duckdb\ndomains:\n  - faller.com\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	wh, err := warehouse.Open(ctx, warehouse.Options{DuckDBPath: filepath.Join(dir, "data/w.duckdb")})
	if err != nil {
		t.Fatal(err)
	}
	attentiontest.Load(t, wh.DB())
	if extra != "" {
		if _, err := wh.DB().ExecContext(ctx, extra); err != nil {
			t.Fatal(err)
		}
	}
	if err := wh.Close(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func plantedRows() []string {
	var out []string
	for _, e := range attentiontest.Expected {
		out = append(out, e.Domain+" "+e.Kind)
	}
	return out
}

// TestChangesListsThePlantedRowsInEveryFormat: table, json and csv list exactly the planted
// needs-attention rows in order, the largest falls lead with the vanished domain, the
// candidates sit in their own worth-tracking list, and the quiet month says "nothing unusual".
func TestChangesListsThePlantedRowsInEveryFormat(t *testing.T) {
	cfg := attentionProject(t, "")
	t.Run("table", func(t *testing.T) {
		code, out, errOut := mainOut("", "changes", "--config", cfg)
		if code != ExitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var got []string
		for _, l := range strings.Split(out, "\n") {
			for _, e := range attentiontest.Expected {
				if strings.HasPrefix(strings.TrimSpace(l), fmt.Sprintf("%d. %s: ", len(got)+1, e.Domain)) {
					got = append(got, e.Domain)
				}
			}
		}
		if len(got) != len(attentiontest.Expected) || !strings.HasPrefix(out, "Needs attention in "+attentiontest.Month+": 9 domains\n") {
			t.Errorf("table lists %v:\n%s", got, out)
		}
		falls := out[strings.Index(out, "Largest falls"):]
		if !strings.Contains(falls, "1  vanished.com  −100.0%") || !strings.Contains(out, "Worth tracking") || !strings.Contains(out, ". rising.net: ") {
			t.Errorf("largest falls or worth tracking missing:\n%s", out)
		}
	})
	t.Run("json", func(t *testing.T) {
		code, out, errOut := mainOut("", "changes", "--config", cfg, "--format", "json")
		if code != ExitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var d struct {
			Attention []struct {
				Domain, Kind string
				ChangePct    *float64 `json:"change_pct"`
			} `json:"needs_attention"`
			Worth []struct{ Domain string } `json:"worth_tracking"`
		}
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		var got []string
		for _, r := range d.Attention {
			got = append(got, r.Domain+" "+r.Kind)
		}
		if !slices.Equal(got, plantedRows()) || d.Attention[0].ChangePct == nil || *d.Attention[0].ChangePct != -100 || len(d.Worth) == 0 {
			t.Errorf("json needs_attention %v, worth tracking %v:\n%s", got, d.Worth, out)
		}
	})
	t.Run("csv", func(t *testing.T) {
		code, out, errOut := mainOut("", "changes", "--config", cfg, "--format", "csv")
		if code != ExitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range recs[1:] {
			if r[1] == "needs_attention" {
				got = append(got, r[3]+" "+r[4])
			}
		}
		if !slices.Equal(got, plantedRows()) {
			t.Errorf("csv needs_attention %v, want %v", got, plantedRows())
		}
	})
	t.Run("quiet month", func(t *testing.T) {
		code, out, errOut := mainOut("", "changes", "--config", cfg, "--month", attentiontest.Quiet, "--top", "2")
		if code != ExitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if !strings.HasPrefix(out, "Needs attention in "+attentiontest.Quiet+": nothing unusual\n") {
			t.Errorf("the quiet month:\n%s", out)
		}
	})
}

// TestChangesAgainst: --against compares the month with the month asked for (the movers of
// 2026-10 against 2026-08), in JSON too; the month itself or an incomplete month is refused.
func TestChangesAgainst(t *testing.T) {
	cfg := attentionProject(t, "")
	code, out, errOut := mainOut("", "changes", "--config", cfg, "--against", attentiontest.Earlier)
	if code != ExitOK || !strings.Contains(out, "compared with "+attentiontest.Earlier+", as asked (--against)") || !strings.Contains(out, "ranker.com  #1,000") {
		t.Errorf("exit %d: %s\n%s", code, errOut, out)
	}
	code, out, _ = mainOut("", "changes", "--config", cfg, "--against", attentiontest.Earlier, "--format", "json")
	var d struct {
		Previous string `json:"previous_month"`
		Movers   []struct{ Domain string }
	}
	if err := json.Unmarshal([]byte(out), &d); code != ExitOK || err != nil || d.Previous != attentiontest.Earlier || len(d.Movers) == 0 {
		t.Errorf("json: exit %d, %v, previous %q, %d movers", code, err, d.Previous, len(d.Movers))
	}
	for _, bad := range []string{attentiontest.Month, "2025-01", "2026-13"} {
		if code, _, errOut := mainOut("", "changes", "--config", cfg, "--against", bad); code == ExitOK || !strings.Contains(errOut, bad) {
			t.Errorf("--against %s: exit %d, %s", bad, code, errOut)
		}
	}
}
