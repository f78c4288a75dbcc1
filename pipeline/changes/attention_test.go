package changes

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"sitewatch/pipeline/changes/attentiontest"
)

// TestNeedsAttentionView checks the view on the fixed dataset whose list is known: the
// planted domains of the month in order with their kinds (the fall to zero first, high), their
// words and units, the domains that must stay out (a giant within its usual ±, a small domain
// with a large but normal swing, one below the size floor, candidates not on the watchlist), and
// the quiet month, which has no rows at all, through the view, the macro and LATERAL.
func TestNeedsAttentionView(t *testing.T) {
	db := openWarehouse(t).DB()
	attentiontest.Load(t, db)
	got := rows(t, db, `SELECT domain || ' ' || kind FROM needs_attention WHERE snapshot_month = ? ORDER BY rank`, attentiontest.Month)
	var want []string
	for _, e := range attentiontest.Expected {
		want = append(want, e.Domain+" "+e.Kind)
	}
	if !slices.Equal(got, want) {
		t.Errorf("needs_attention lists\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	for domain, why := range attentiontest.Out {
		if n := rows(t, db, `SELECT count(*) FROM needs_attention WHERE domain = ?`, domain); n[0] != "0" {
			t.Errorf("%s is listed; it must stay out (%s)", domain, why)
		}
	}
	if n := rows(t, db, `SELECT count(*) FROM needs_attention WHERE snapshot_month = ?`, attentiontest.Quiet); n[0] != "0" {
		t.Errorf("the quiet month %s has %s rows, want none", attentiontest.Quiet, n[0])
	}
	units := rows(t, db, `SELECT domain || ' ' || metric || ' ' || value || ' ' || previous_value || ' ' || coalesce(change_pct::VARCHAR, '-')
		|| ' ' || coalesce(change_points::VARCHAR, '-') || ' ' || severity || ' | ' || reason
		FROM needs_attention WHERE snapshot_month = ? AND domain IN ('vanished.com', 'faller.com', 'chan.com') ORDER BY rank`, attentiontest.Month)
	wantUnits := []string{
		"vanished.com visits 0.0 800000.0 -100.0 - high | " + attentiontest.VanishedReason,
		"faller.com visits 1300000.0 2000000.0 -35.0 - high | " + attentiontest.FallerReason,
		"chan.com channel_share 35.0 60.0 - -25.0 high | Organic search, its top channel, fell from 60.0% to 35.0% of its visits — the watchlist's share of it moved ±2.0 points this month",
	}
	if !slices.Equal(units, wantUnits) {
		t.Errorf("rows\n  %s\nwant\n  %s", strings.Join(units, "\n  "), strings.Join(wantUnits, "\n  "))
	}
	meta := rows(t, db, `SELECT DISTINCT snapshot_month || ' ' || previous_month || ' ' || min_visits || ' ' || threshold FROM needs_attention`)
	if want := attentiontest.Month + " " + attentiontest.Previous + " 10000.0 3.0"; len(meta) != 1 || meta[0] != want {
		t.Errorf("month, previous month, floor, threshold = %q, want %q", meta, want)
	}
	ranks := rows(t, db, `SELECT string_agg(rank || ':' || domain_rank || ':' || severity, ' ' ORDER BY rank) FROM needs_attention`)
	if want := "1:1:high 2:2:high 3:3:high 4:4:high 5:5:high 6:6:high 7:7:high 8:8:high 9:9:high"; ranks[0] != want {
		t.Errorf("rank:domain_rank:severity = %s, want %s", ranks[0], want)
	}
	lateral := rows(t, db, `SELECT m.snapshot_month || ' ' || count(n.domain) FROM complete_months m
		LEFT JOIN LATERAL (SELECT * FROM needs_attention_in(for_month := m.snapshot_month)) n ON true
		GROUP BY m.snapshot_month ORDER BY 1`)
	if want := []string{attentiontest.Earlier + " 0", attentiontest.Quiet + " 0", fmt.Sprintf("%s %d", attentiontest.Month, len(attentiontest.Expected))}; !slices.Equal(lateral, want) {
		t.Errorf("per month through LATERAL: %v, want %v", lateral, want)
	}
}

// TestNeedsAttentionSettings shows the config's floor and threshold reach the ranking through
// the macro: a 1,000-visit floor lets tiny.com in; a threshold of 8 keeps only the moves larger
// than 8 swings (and the fall to zero, missing data and quality errors, whose tests are not a
// z), and severity follows the bands of the threshold: a z of -6.7 is high at 3, medium at 4.
func TestNeedsAttentionSettings(t *testing.T) {
	db := openWarehouse(t).DB()
	attentiontest.Load(t, db)
	ctx := context.Background()
	low, err := ReadAttention(ctx, db, "", AttentionSettings{MinVisits: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if got := kindsOf(low)["tiny.com"]; got != attentiontest.TinyWithFloor1000 {
		t.Errorf("with a 1,000-visit floor tiny.com is listed as %q, want %q", got, attentiontest.TinyWithFloor1000)
	}
	strict, err := ReadAttention(ctx, db, attentiontest.Month, AttentionSettings{Threshold: 8})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range strict.Domains {
		got = append(got, d.Domain)
	}
	if want := []string{"vanished.com", "aifall.com", "gone.com", "novisits.com", "failed.com", "faller.com", "ranker.com", "chan.com"}; !slices.Equal(got, want) {
		t.Errorf("threshold 8 lists %v, want %v", got, want)
	}
	bands, err := ReadAttention(ctx, db, attentiontest.Month, AttentionSettings{Threshold: 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range bands.Domains {
		if d.Domain == "riser.com" && d.Severity() != SeverityMedium { // z 7.55 < 2 × 4
			t.Errorf("threshold 4: riser.com (z 7.55) is %s, want medium", d.Severity())
		}
	}
}

// TestReadAttention checks the one Go reader of the view that every surface uses: domains in
// the view's order, reasons grouped, the month resolved, counts per kind.
func TestReadAttention(t *testing.T) {
	db := openWarehouse(t).DB()
	attentiontest.Load(t, db)
	a, err := ReadAttention(context.Background(), db, "", AttentionSettings{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Month != attentiontest.Month || a.PreviousMonth != attentiontest.Previous {
		t.Errorf("months %s, %s; want %s, %s", a.Month, a.PreviousMonth, attentiontest.Month, attentiontest.Previous)
	}
	if len(a.Domains) != len(attentiontest.Expected) || a.Rows() != len(attentiontest.Expected) {
		t.Fatalf("%d domains, %d rows; want %d", len(a.Domains), a.Rows(), len(attentiontest.Expected))
	}
	for i, e := range attentiontest.Expected {
		d := a.Domains[i]
		if d.Domain != e.Domain || d.Rank != i+1 || d.Reasons[0].Kind != e.Kind {
			t.Errorf("#%d = %s (rank %d, %s), want %s %s", i+1, d.Domain, d.Rank, d.Reasons[0].Kind, e.Domain, e.Kind)
		}
	}
	if got := a.ByKind(); got[KindVanished] != 1 || got[KindDataMissing] != 2 || got[KindVisitsFell] != 1 || got[KindQualityFailed] != 1 || len(got) != len(AttentionKinds) {
		t.Errorf("ByKind = %v", got)
	}
	if _, err := ReadAttention(context.Background(), db, "2026-13", AttentionSettings{}); err == nil || !strings.Contains(err.Error(), "2026-13") {
		t.Errorf("a malformed month: err = %v", err)
	}
}

func kindsOf(a *Attention) map[string]string {
	out := map[string]string{}
	for _, d := range a.Domains {
		out[d.Domain] = d.Reasons[0].Kind
	}
	return out
}
