package report

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"sitewatch/pipeline/textout"
)

// allRow is one line of the "All domains" table: every loaded domain, however many. Each
// numeric cell carries its sort key (Key*, "" when the value is unknown) for the table's
// inline sort script; without script the table reads in the report's order (most visited
// first).
type allRow struct {
	Domain, Title, Category, Visits, MoM, MoMTone, YoY, YoYTone, Rank, RankChange, RankTone string
	AIVisits, Bounce, Pages, Duration, Source                                               string
	LongTitle, LongCategory                                                                 bool // may be cut short: the cell carries the whole text as a tooltip

	KeyVisits, KeyMoM, KeyYoY, KeyRank, KeyRankChange, KeyAI, KeyBounce, KeyPages, KeyDuration string
}

func buildSites(d *data) []allRow {
	rows := make([]allRow, 0, len(d.Sites))
	for _, s := range d.Sites {
		r := allRow{Domain: s.Domain, Title: orDash(s.Title), Category: orDash(s.Category), Visits: humanNull(s.TotalVisits), Rank: rank(s.GlobalRank),
			RankChange: "—", AIVisits: humanInt(s.AITotal), Bounce: "—", Pages: "—", Duration: "—", MoM: "—", Source: "estimate"}
		if s.FromGA {
			r.Source = "analytics"
		}
		r.LongTitle, r.LongCategory = mayBeCut(r.Title), mayBeCut(r.Category)
		if s.TotalVisits.Valid {
			r.KeyVisits = strconv.FormatFloat(s.TotalVisits.Float64, 'f', -1, 64) // unrounded: the CSV carries it
		}
		if ch, ok := s.mom(); ok {
			r.MoM, r.MoMTone, r.KeyMoM = signedPct(ch), changeTone(ch), key(ch)
		}
		r.YoY, r.YoYTone = s.yoyText()
		if ch, ok := s.yoy(); ok {
			r.KeyYoY = key(ch)
		}
		if s.GlobalRank.Valid {
			r.KeyRank = strconv.FormatInt(s.GlobalRank.Int64, 10)
		}
		rankChange(&r, s)
		if s.AITotal.Valid {
			r.KeyAI = strconv.FormatInt(s.AITotal.Int64, 10)
		}
		if s.BounceRate.Valid {
			r.Bounce, r.KeyBounce = pct(s.BounceRate.Float64), key(s.BounceRate.Float64)
		}
		if s.PagesPerVis.Valid {
			r.Pages, r.KeyPages = trimZeros(fmt.Sprintf("%.2f", s.PagesPerVis.Float64)), key(s.PagesPerVis.Float64)
		}
		if s.DurationSec.Valid {
			r.Duration, r.KeyDuration = duration(s.DurationSec.Float64), key(s.DurationSec.Float64)
		}
		rows = append(rows, r)
	}
	return rows
}

// rankChange fills the places gained (▲) or lost (▼) since the previous snapshot.
func rankChange(r *allRow, s site) {
	if !s.GlobalRank.Valid || !s.PrevRank.Valid {
		return
	}
	delta := s.PrevRank.Int64 - s.GlobalRank.Int64
	r.KeyRankChange = strconv.FormatInt(delta, 10)
	switch {
	case delta > 0:
		r.RankChange, r.RankTone = "▲ "+textout.Thousands(delta), "up"
	case delta < 0:
		r.RankChange, r.RankTone = "▼ "+textout.Thousands(-delta), "down"
	default:
		r.RankChange = "="
	}
}

// key is a compact sort key: enough digits to order, few bytes for 5,000 rows.
func key(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// category is one top-level category of the All domains filter, with its number of domains.
type category struct {
	Name  string
	Count int
}

// categories are the top-level categories ("News & Media" of "News & Media > World") of the
// loaded domains, by name.
func categories(d *data) []category {
	n := map[string]int{}
	for _, s := range d.Sites {
		if top, _, _ := strings.Cut(s.Category, " > "); strings.TrimSpace(top) != "" {
			n[strings.TrimSpace(top)]++
		}
	}
	out := make([]category, 0, len(n))
	for name, c := range n {
		out = append(out, category{name, c})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// mayBeCut reports whether a title or category may not fit its cell (14em of 13 px text holds
// about 24 characters): only those carry their whole text again as a tooltip, so 5,000 rows do
// not carry every title twice.
func mayBeCut(s string) bool { return utf8.RuneCountInString(s) > 20 }
