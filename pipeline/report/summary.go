package report

import (
	"fmt"
	"math"
	"sort"
	"time"

	"sitewatch/pipeline/months"
	"sitewatch/pipeline/numfmt"
)

// warning is the banner of an incomplete snapshot.
type warning struct {
	Title, Detail string
}

// statusText says in words how a run ended (runs.status).
var statusText = map[string]string{
	"complete":        "completed",
	"up_to_date":      "found the snapshot already complete",
	"stopped_credits": "stopped for credits",
	"failed":          "failed",
	"interrupted":     "was interrupted",
	"unauthorized":    "was refused by the API (401, check ATLAS_API_KEY)",
	"running":         "is still running, or its process died",
	"abandoned":       "was abandoned (its process died)",
}

// completeness compares what is loaded with what the newest run of the snapshot expected.
func completeness(d *data) *warning {
	loaded := d.Totals.Loaded
	if len(d.Runs) == 0 {
		return &warning{
			Title:  fmt.Sprintf("Completeness unknown: %d domains loaded, no run recorded for %s", loaded, d.Snapshot),
			Detail: "The warehouse has no runs row for this snapshot (loaded by another tool, or the runs were deleted), so the report cannot tell whether the watchlist is complete.",
		}
	}
	last := d.Runs[len(d.Runs)-1]
	expected := int(last.Total.Int64 - last.Rejected.Int64)
	// As the complete_months view: complete when the run said so or loaded every domain.
	if last.Status == "complete" || last.Status == "up_to_date" || loaded >= expected {
		return nil
	}
	how, ok := statusText[last.Status]
	if !ok {
		how = "ended with status " + last.Status
	}
	title := fmt.Sprintf("Incomplete snapshot: %d of %d domains loaded", loaded, expected)
	detail := fmt.Sprintf("The last run (%s UTC) %s.", last.Started.UTC().Format("2006-01-02 15:04"), how)
	if last.Rejected.Int64 > 0 {
		detail += fmt.Sprintf(" %d domains were rejected by the API and are not counted.", last.Rejected.Int64)
	}
	detail += fmt.Sprintf(" Every figure below covers the loaded domains only; totals and averages are not the watchlist's. To complete it: %s.", months.FinishAdvice(d.Snapshot, "", time.Now()))
	return &warning{Title: title, Detail: detail}
}

// card is one headline number. Only its changes are coloured: a level figure (a count, a
// total, a domain's name) is never green or red, whatever way it moved.
type card struct {
	Label, Value, Detail string
	Changes              []toned // printed before Detail, each in its own colour
}

// toned is a change and its colour class (up, down or "").
type toned struct{ Text, Tone string }

func headline(d *data) []card {
	cards := []card{domainsCard(d)}
	cards = append(cards, visitsCard(d))
	if c, ok := aiCard(d); ok {
		cards = append(cards, c)
	}
	cards = append(cards, moverCards(d)...)
	cards = append(cards, creditsCard(d), qualityCard(d))
	return cards
}

func domainsCard(d *data) card {
	c := card{Label: "Domains loaded", Value: count(d.Totals.Loaded)}
	if len(d.Runs) > 0 {
		last := d.Runs[len(d.Runs)-1]
		expected := last.Total.Int64 - last.Rejected.Int64
		c.Value = count(d.Totals.Loaded) + " of " + count(int(expected))
		c.Detail = "of the " + count(int(expected)) + " the last run expected"
		if last.Rejected.Int64 > 0 {
			c.Detail += fmt.Sprintf(" (%s rejected by the API)", count(int(last.Rejected.Int64)))
		}
		c.Detail += " · "
	}
	c.Detail += "API snapshot " + spanText(d.Totals.FirstDate, d.Totals.LastDate)
	return c
}

// latestMonth is the newest history month most domains share (a domain with a shorter history
// is left out of the watchlist total rather than mixing months).
func latestMonth(d *data) time.Time {
	var best time.Time
	most := 0
	for m, t := range d.Totals.ByLastMonth {
		if t.Domains > most || (t.Domains == most && m.After(best)) {
			best, most = m, t.Domains
		}
	}
	return best
}

func visitsCard(d *data) card {
	m := latestMonth(d)
	if m.IsZero() {
		return card{Label: "Watchlist visits", Value: "—", Detail: "no traffic history in this snapshot"}
	}
	t := d.Totals.ByLastMonth[m]
	total, curM, prevM, curY, prevY := t.Visits, t.CurM, t.PrevM, t.CurY, t.PrevY
	n, nM, nY := t.Domains, t.WithPrev, t.WithYearAgo
	c := card{Label: "Watchlist visits, " + m.Format("Jan 2006") + " (estimate)", Value: numfmt.Count(total)}
	if prevM > 0 {
		ch := curM/prevM - 1
		c.Changes = append(c.Changes, toned{"MoM " + numfmt.Change(ch), changeTone(ch)})
	}
	if prevY > 0 {
		ch := curY/prevY - 1
		c.Changes = append(c.Changes, toned{"YoY " + numfmt.Change(ch), changeTone(ch)})
	} else if from := yoyFrom(d); from.After(m) {
		c.Changes = append(c.Changes, toned{"YoY from " + from.Format("Jan 2006"), ""})
	}
	c.Detail = visitsDenominator(d, m, n, nM, nY)
	return c
}

// visitsDenominator says which domains the watchlist total sums, and which its changes
// compare, whenever that is not every loaded domain ("4,942 domains" beside "5,000 of 5,000").
func visitsDenominator(d *data, m time.Time, n, nM, nY int) string {
	all := d.Totals.Loaded
	out := "sum of all " + count(all) + " domains"
	if n < all {
		out = fmt.Sprintf("sum of the %s domains whose history ends in %s (%s end earlier or have none)", count(n), m.Format("Jan 2006"), count(all-n))
	}
	var cmp []string
	if nM > 0 && nM < n {
		cmp = append(cmp, "MoM over the "+count(nM)+" with the month before")
	}
	if nY > 0 && nY < n {
		cmp = append(cmp, "YoY over the "+count(nY)+" with the month a year earlier")
	}
	if len(cmp) > 0 {
		out += "; " + joinDot(cmp)
	}
	return out
}

func tone(change float64) string {
	switch {
	case change > 0:
		return "up"
	case change < 0:
		return "down"
	}
	return ""
}

func joinDot(parts []string) string {
	out := ""
	for i, p := range parts {
		if i > 0 {
			out += " · "
		}
		out += p
	}
	return out
}

func aiCard(d *data) (card, bool) {
	ai, visits, n := d.Totals.AIVisits, d.Totals.AIDomainVisits, d.Totals.AIDomains
	if n == 0 {
		return card{}, false
	}
	c := card{Label: "AI-referred visits in the period (estimate)", Value: numfmt.Count(ai), Detail: "sum of all " + count(n) + " domains"}
	if n < d.Totals.Loaded {
		c.Detail = fmt.Sprintf("sum of the %s of %s domains the API states AI visits for", count(n), count(d.Totals.Loaded))
	}
	if visits > 0 {
		c.Detail = numfmt.Share(ai/visits) + " of their visits · " + c.Detail
	}
	return c, true
}

// moverCards name the domains with the largest month-over-month rise (by visits gained) and
// fall (by percent, as the Largest falls section ranks them).
func moverCards(d *data) []card {
	up := risers(d)
	var cards []card
	if len(up) > 0 {
		s := up[0]
		ch, _ := s.mom()
		cards = append(cards, card{Label: "Biggest riser in visits, MoM", Value: s.Domain,
			Changes: []toned{{numfmt.Change(ch), changeTone(ch)}}, Detail: numfmt.Count(s.PrevVisits.Float64) + " → " + numfmt.Count(s.LastVisits.Float64)})
	}
	return append(cards, fallCard(d)) // falls.go: ranked as the Largest falls section
}

// risers returns the domains of d.Sites whose visits rose from the previous month to the
// latest month of their history, by the visits gained, largest first: the first moversShown
// are every loaded domain's (sitePass keeps them). Falls have their own ranking, by percent
// (falls.go).
func risers(d *data) []site {
	var up []site
	for _, s := range d.Sites {
		if ch, ok := s.mom(); ok && ch > 0 {
			up = append(up, s)
		}
	}
	// The report's ranking rule (changes.RankingRule): by the visits gained, so a 1 -> 2
	// visit change never leads.
	gained := func(s site) float64 { return s.LastVisits.Float64 - s.PrevVisits.Float64 }
	sort.SliceStable(up, func(i, j int) bool { return gained(up[i]) > gained(up[j]) })
	return up
}

func creditsCard(d *data) card {
	if len(d.Runs) == 0 {
		return card{Label: "Credits spent on this snapshot", Value: "—", Detail: "no run recorded"}
	}
	var spent int64
	remaining := int64(-1)
	for _, r := range d.Runs {
		spent += r.Credits.Int64
		if r.Remaining.Valid && r.Remaining.Int64 >= 0 {
			remaining = r.Remaining.Int64
		}
	}
	c := card{Label: "Credits spent on this snapshot", Value: numfmt.Thousands(spent), Detail: fmt.Sprintf("%d runs", len(d.Runs))}
	if len(d.Runs) == 1 {
		c.Detail = "1 run"
	}
	if remaining >= 0 {
		c.Detail += " · " + numfmt.Thousands(remaining) + " left after the last"
	}
	return c
}

func qualityCard(d *data) card {
	c := card{Label: "Data-quality findings"}
	if !d.QualityRecorded || len(d.QualitySummary) == 0 {
		c.Value, c.Detail = "—", "no quality checks recorded for this snapshot"
		return c
	}
	errs, warns := 0, 0
	for _, q := range d.QualitySummary {
		errs, warns = errs+q.Errors, warns+q.Warnings
	}
	c.Value = fmt.Sprint(errs + warns)
	if errs+warns == 0 {
		c.Detail = fmt.Sprintf("all %d checks passed", len(d.QualitySummary))
		return c
	}
	c.Detail = fmt.Sprintf("%d errors · %d warnings from %d checks", errs, warns, len(d.QualitySummary))
	return c
}

// rankMove is a domain whose global rank changed since the previous snapshot.
type rankMove struct {
	Domain, From, To, Change string
	Tone                     string
	weight                   float64 // |log-ratio| × visits: the rule of changes_movers for ranks
}

// changesSection is "what changed": movers by visits (from the snapshot's history) and by rank
// (against the previous snapshot).
type changesSection struct {
	Digest       *digestSection
	Folded       *foldedChanges // the digest's tables beyond their first rows, shown folded
	Note         string         // why there is no digest, or ""
	PrevSnapshot string
	Risers       []moverRow
	RankMoves    []rankMove
}

type moverRow struct{ Domain, Change, Tone, From, To, Months string }

func buildChanges(d *data) *changesSection {
	c := &changesSection{PrevSnapshot: d.PrevSnapshot, Digest: buildDigest(d.Digest), Folded: buildFolded(d.Digest), Note: d.DigestNote}
	c.Risers = moverRows(risers(d), moversShown)
	for i := range d.Sites {
		s := &d.Sites[i]
		weight, ok := rankWeight(s)
		if !ok {
			continue
		}
		delta := math.Log(float64(s.PrevRank.Int64) / float64(s.GlobalRank.Int64))
		m := rankMove{Domain: s.Domain, From: rank(s.PrevRank), To: rank(s.GlobalRank), weight: weight, Tone: tone(delta)}
		if delta > 0 {
			m.Change = fmt.Sprintf("up %s places", numfmt.Thousands(s.PrevRank.Int64-s.GlobalRank.Int64))
		} else {
			m.Change = fmt.Sprintf("down %s places", numfmt.Thousands(s.GlobalRank.Int64-s.PrevRank.Int64))
		}
		c.RankMoves = append(c.RankMoves, m)
	}
	sort.SliceStable(c.RankMoves, func(i, j int) bool { return c.RankMoves[i].weight > c.RankMoves[j].weight })
	if len(c.RankMoves) > rankMovesShown {
		c.RankMoves = c.RankMoves[:rankMovesShown]
	}
	return c
}

// rankWeight is a rank move's weight, |log-ratio| × visits (the rule of changes_movers for
// ranks), false when the domain's rank did not move or is unknown in either snapshot.
func rankWeight(s *site) (float64, bool) {
	if !s.GlobalRank.Valid || !s.PrevRank.Valid || s.GlobalRank.Int64 == s.PrevRank.Int64 || s.GlobalRank.Int64 <= 0 || s.PrevRank.Int64 <= 0 {
		return 0, false
	}
	return math.Abs(math.Log(float64(s.PrevRank.Int64)/float64(s.GlobalRank.Int64))) * s.TotalVisits.Float64, true
}

func moverRows(ss []site, n int) []moverRow {
	var out []moverRow
	for i, s := range ss {
		if i == n {
			break
		}
		ch, _ := s.mom()
		out = append(out, moverRow{Domain: s.Domain, Change: numfmt.Change(ch), Tone: changeTone(ch), From: numfmt.Count(s.PrevVisits.Float64),
			To: numfmt.Count(s.LastVisits.Float64), Months: s.LastMonth.AddDate(0, -1, 0).Format("Jan") + " → " + s.LastMonth.Format("Jan 2006")})
	}
	return out
}
