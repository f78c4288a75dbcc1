package changes

import (
	"context"
	"slices"
	"strings"
	"testing"

	"sitewatch/pipeline/changes/attentiontest"
)

// TestNeedsAttentionView checks the view on the fixed dataset whose list is known: the
// domains in order with their reason kinds, faller.com's words, and the domains that must stay
// out (a giant with a usual month, a small domain with a large but normal swing, a domain
// below the size floor).
func TestNeedsAttentionView(t *testing.T) {
	db := openWarehouse(t).DB()
	attentiontest.Load(t, db)
	got := rows(t, db, `SELECT domain || ' ' || reason_kind FROM needs_attention ORDER BY rank`)
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
	reason := rows(t, db, `SELECT reason FROM needs_attention WHERE domain = 'faller.com'`)
	if len(reason) != 1 || reason[0] != attentiontest.FallerReason {
		t.Errorf("faller.com's reason = %q, want %q", reason, attentiontest.FallerReason)
	}
	reason = rows(t, db, `SELECT reason || ' | ' || severity FROM needs_attention WHERE domain = 'rising.net'`)
	if want := attentiontest.RisingReason + " | medium"; len(reason) != 1 || reason[0] != want {
		t.Errorf("rising.net's reason = %q, want %q", reason, want)
	}
	meta := rows(t, db, `SELECT DISTINCT snapshot_month || ' ' || previous_month || ' ' || min_visits || ' ' || threshold FROM needs_attention`)
	if want := attentiontest.Month + " " + attentiontest.Previous + " 10000.0 3.0"; len(meta) != 1 || meta[0] != want {
		t.Errorf("month, previous month, floor, threshold = %q, want %q", meta, want)
	}
	ranks := rows(t, db, `SELECT string_agg(rank || ':' || domain_rank || ':' || severity, ' ' ORDER BY rank) FROM needs_attention`)
	if want := "1:1:high 2:2:high 3:3:high 4:4:high 5:5:high 6:6:high 7:7:high 8:8:high 9:9:medium"; ranks[0] != want {
		t.Errorf("rank:domain_rank:severity = %s, want %s", ranks[0], want)
	}
}

// TestNeedsAttentionSettings shows the config's floor and threshold reach the ranking through
// the macro: a 1,000-visit floor lets tiny.com and the new candidate smallnew.net in; a
// threshold of 8 keeps only the moves larger than 8 swings (and missing data and quality
// errors, scored 2 × threshold, and the rising candidate, whose test is not a z), and
// faller.com's −18 %, no longer unusual enough, comes back as the steepest fall of the larger
// half of the watchlist.
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
	if got := kindsOf(low)["smallnew.net"]; got != KindRisingCandidate {
		t.Errorf("with a 1,000-visit floor smallnew.net (new, 2,000 visits) is listed as %q, want %q", got, KindRisingCandidate)
	}
	strict, err := ReadAttention(ctx, db, attentiontest.Month, AttentionSettings{Threshold: 8})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range strict.Domains {
		got = append(got, d.Domain)
	}
	if want := []string{"aifall.com", "gone.com", "novisits.com", "failed.com", "ranker.com", "chan.com", "faller.com", "rising.net"}; !slices.Equal(got, want) {
		t.Errorf("threshold 8 lists %v, want %v", got, want)
	}
	if k := kindsOf(strict)["faller.com"]; k != KindSteepFall {
		t.Errorf("threshold 8: faller.com listed as %q, want %q", k, KindSteepFall)
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
	if got := a.ByKind(); got[KindDataMissing] != 2 || got[KindVisitsFell] != 1 || got[KindQualityFailed] != 1 || len(got) != len(AttentionKinds) {
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
