package report

import (
	"database/sql"
	"encoding/csv"
	"io"
	"math"
	"sort"
	"strings"
	"time"
)

// siteTotals are what the page states about every loaded domain (counts, sums, spans, the
// category filter), summed as the rows pass (sitePass) so the page holds only the rows it
// shows. Sums are taken in the report's order (most visited first), as a loop over every row
// would.
type siteTotals struct {
	Loaded                  int
	FirstDate, LastDate     string // smallest and largest meta.snapshot_date stated, "" when none
	FirstPeriod, LastPeriod string // the same of traffic.period
	// ByLastMonth sums visits per newest history month (latestMonth picks the month most
	// domains end in; visitsCard sums that month's domains).
	ByLastMonth map[time.Time]*monthTotals
	// AIDomains state AI visits; AIVisits sums them, AIDomainVisits their total visits.
	AIDomains                int
	AIVisits, AIDomainVisits float64
	YoYFrom                  time.Time      // the earliest month any domain's year on year exists
	Categories               map[string]int // domains per top-level category
}

// monthTotals are the visits of the domains whose history ends in one month.
type monthTotals struct {
	Domains, WithPrev, WithYearAgo int
	Visits                         float64
	CurM, PrevM, CurY, PrevY       float64 // visits of the domains with the month before / a year before, and those months'
}

func newSiteTotals() siteTotals {
	return siteTotals{ByLastMonth: map[time.Time]*monthTotals{}, Categories: map[string]int{}}
}

// add counts one domain's row in.
func (t *siteTotals) add(s *site) {
	t.Loaded++
	t.FirstDate, t.LastDate = widen(t.FirstDate, t.LastDate, s.SnapshotDate)
	t.FirstPeriod, t.LastPeriod = widen(t.FirstPeriod, t.LastPeriod, s.Period)
	if !s.LastMonth.IsZero() {
		m := t.ByLastMonth[s.LastMonth]
		if m == nil {
			m = &monthTotals{}
			t.ByLastMonth[s.LastMonth] = m
		}
		m.add(s)
	}
	if s.AITotal.Valid {
		t.AIDomains++
		t.AIVisits += float64(s.AITotal.Int64)
		if s.TotalVisits.Valid {
			t.AIDomainVisits += s.TotalVisits.Float64
		}
	}
	if !s.YoYFrom.IsZero() && (t.YoYFrom.IsZero() || s.YoYFrom.Before(t.YoYFrom)) {
		t.YoYFrom = s.YoYFrom
	}
	if top, _, _ := strings.Cut(s.Category, " > "); strings.TrimSpace(top) != "" {
		t.Categories[strings.TrimSpace(top)]++
	}
}

func (m *monthTotals) add(s *site) {
	m.Domains++
	m.Visits += s.LastVisits.Float64
	if s.PrevVisits.Valid {
		m.CurM, m.PrevM, m.WithPrev = m.CurM+s.LastVisits.Float64, m.PrevM+s.PrevVisits.Float64, m.WithPrev+1
	}
	if s.YearAgoVisits.Valid {
		m.CurY, m.PrevY, m.WithYearAgo = m.CurY+s.LastVisits.Float64, m.PrevY+s.YearAgoVisits.Float64, m.WithYearAgo+1
	}
}

// widen extends the span [lo, hi] of non-empty values with v.
func widen(lo, hi, v string) (string, string) {
	if v == "" {
		return lo, hi
	}
	if lo == "" || v < lo {
		lo = v
	}
	if hi == "" || v > hi {
		hi = v
	}
	return lo, hi
}

// spanText is "a", "a – b", or says the API stated none (span's words).
func spanText(lo, hi string) string {
	switch {
	case lo == "":
		return "not stated by the API"
	case lo == hi:
		return lo
	}
	return lo + " – " + hi
}

// siteLeaders keeps the k sites of the largest weight seen so far, ties in the order they came
// (the report's order): the first k of a stable sort by weight over every row, kept without
// holding every row.
type siteLeaders struct {
	k     int
	sites []site
	by    []float64
}

func (l *siteLeaders) offer(s *site, weight float64) {
	if len(l.sites) == l.k && !(weight > l.by[l.k-1]) {
		return
	}
	at := sort.Search(len(l.by), func(i int) bool { return l.by[i] < weight })
	if len(l.sites) == l.k {
		l.sites, l.by = l.sites[:l.k-1], l.by[:l.k-1]
	}
	l.sites = append(l.sites[:at], append([]site{*s}, l.sites[at:]...)...)
	l.by = append(l.by[:at], append([]float64{weight}, l.by[at:]...)...)
}

// sitePass sees every loaded domain's row once, most visited first: it sums siteTotals,
// writes the CSV row, and keeps the rows the page names (the allInPage most visited and every
// domain with a panel) and the leaders of each ranking the page shows, which finish adds to
// d.Sites.
type sitePass struct {
	d       *data
	csv     *csv.Writer
	flagged map[string]int  // needs attention's places, for the CSV
	panel   map[string]bool // the domains with a panel: flagged, and the largest falls
	// The leaders of risers (5), rankMoves (8) and yoyLeaders (topN).
	risers, ranks, yoy siteLeaders
}

// Each ranking's leaders the page can show (summary.go, topn.go).
const (
	moversShown    = 5 // risers
	rankMovesShown = 8
)

func newSitePass(d *data, w io.Writer) (*sitePass, error) {
	p := &sitePass{d: d, flagged: attentionRanks(d), panel: map[string]bool{}, risers: siteLeaders{k: moversShown},
		ranks: siteLeaders{k: rankMovesShown}, yoy: siteLeaders{k: topN}}
	for _, dom := range panelDomains(d) {
		p.panel[dom] = true
	}
	d.Totals = newSiteTotals()
	if w == nil {
		return p, nil
	}
	if _, err := io.WriteString(w, "\ufeff"); err != nil { // a spreadsheet then reads it as UTF-8
		return nil, err
	}
	p.csv = csv.NewWriter(w)
	return p, p.csv.Write(csvHeads)
}

// add takes the next row: s.Place is its place in the report's order.
func (p *sitePass) add(s site) error {
	s.Place = p.d.Totals.Loaded
	p.d.Totals.add(&s)
	if p.csv != nil {
		if err := p.csv.Write(csvRow(&s, p.flagged[s.Domain])); err != nil {
			return err
		}
	}
	if s.Place < allInPage || p.panel[s.Domain] {
		p.d.Sites = append(p.d.Sites, s)
		return nil // in the page anyway: every ranking finds it there
	}
	if ch, ok := s.mom(); ok && ch > 0 {
		p.risers.offer(&s, s.LastVisits.Float64-s.PrevVisits.Float64) // risers' rule: visits gained
	}
	if w, ok := rankWeight(&s); ok {
		p.ranks.offer(&s, w)
	}
	if _, ok := s.yoy(); ok {
		p.yoy.offer(&s, visitsMoved(s.LastVisits, s.YearAgoVisits))
	}
	return nil
}

// finish flushes the CSV and adds each ranking's leaders past the page's rows to d.Sites, in
// the report's order.
func (p *sitePass) finish() error {
	byPlace := map[int]site{}
	for _, l := range []siteLeaders{p.risers, p.ranks, p.yoy} {
		for _, s := range l.sites {
			byPlace[s.Place] = s
		}
	}
	for _, s := range byPlace {
		p.d.Sites = append(p.d.Sites, s)
	}
	sort.Slice(p.d.Sites, func(i, j int) bool { return p.d.Sites[i].Place < p.d.Sites[j].Place })
	if p.csv == nil {
		return nil
	}
	p.csv.Flush()
	return p.csv.Error()
}

// visitsMoved is the visits gained or lost: the report's ranking rule (changes.RankingRule).
func visitsMoved(cur, base sql.NullFloat64) float64 { return math.Abs(cur.Float64 - base.Float64) }
