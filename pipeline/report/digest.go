package report

import (
	"fmt"
	"math"
	"strings"

	"sitewatch/pipeline/changes"
	"sitewatch/pipeline/numfmt"
)

// digestSection renders changes.Digest: what changed between the snapshot and the complete
// month before it.
type digestSection struct {
	Month, Previous string
	Domains         int
	Movers          []moverTable
	Competitors     []changeRow
	Platforms       []changeRow
	Keywords        []changeRow
	Countries       []changeRow
	// More* count the domains beyond changeRows with changes of that kind (in `sitewatch changes`
	// and the changes_* views).
	MoreCompetitors, MorePlatforms, MoreKeywords, MoreCountries int
}

type moverTable struct {
	Title string
	Rows  []digestMover
}

type digestMover struct{ Domain, Previous, Current, Change, Tone string }

// changeRow is one domain's additions and removals of one kind (competitors, platforms, …).
type changeRow struct{ Domain, Added, Removed string }

var metricTitles = map[string]string{
	changes.MetricVisits:         "Visits",
	changes.MetricGlobalRank:     "Global rank",
	changes.MetricAIVisits:       "AI-referred visits",
	changes.MetricAITrafficShare: "AI share of traffic",
	changes.MetricChannelShare:   "Channel shares",
}

var metricOrder = []string{changes.MetricVisits, changes.MetricGlobalRank, changes.MetricAIVisits,
	changes.MetricAITrafficShare, changes.MetricChannelShare}

func buildDigest(dg *changes.Digest) *digestSection {
	if dg == nil || dg.PreviousMonth == "" {
		return nil
	}
	s := &digestSection{Month: dg.Month, Previous: dg.PreviousMonth, Domains: dg.Domains}
	for _, metric := range metricOrder {
		t := moverTable{Title: metricTitles[metric]}
		for _, m := range dg.Movers {
			if m.Metric == metric {
				t.Rows = append(t.Rows, digestMover{Domain: m.Domain + channelSuffix(m), Previous: metricValue(metric, m.Previous),
					Current: metricValue(metric, m.Current), Change: moverChange(m), Tone: moverTone(m)})
			}
		}
		if len(t.Rows) > 0 {
			s.Movers = append(s.Movers, t)
		}
	}
	comp := newChangeSet()
	for _, c := range dg.Competitors {
		comp.add(c.Domain, c.Change == "new", c.Competitor)
	}
	plat := newChangeSet()
	for _, p := range dg.AIPlatforms {
		plat.add(p.Domain, p.Change == "new", p.Platform)
	}
	kw := newChangeSet()
	for _, k := range dg.Keywords {
		kw.add(k.Domain, k.Change == "new", k.Keyword)
	}
	geo := newChangeSet()
	for _, c := range dg.Countries {
		name := c.CountryName
		if name == "" {
			name = c.CountryCode
		}
		geo.add(c.Domain, c.Change == "entered", name)
	}
	s.Competitors, s.MoreCompetitors = comp.rows()
	s.Platforms, s.MorePlatforms = plat.rows()
	s.Keywords, s.MoreKeywords = kw.rows()
	s.Countries, s.MoreCountries = geo.rows()
	return s
}

func channelSuffix(m changes.Mover) string {
	if m.Channel == "" {
		return ""
	}
	if n, ok := channelNames[m.Channel]; ok {
		return " · " + n
	}
	return " · " + m.Channel
}

func metricValue(metric string, v float64) string {
	switch metric {
	case changes.MetricGlobalRank:
		return "#" + numfmt.Thousands(int64(math.Round(v)))
	case changes.MetricAITrafficShare, changes.MetricChannelShare:
		return numfmt.Share(v)
	}
	return numfmt.Count(v)
}

func moverChange(m changes.Mover) string {
	switch m.Metric {
	case changes.MetricGlobalRank:
		n := int64(math.Abs(math.Round(m.Change)))
		places := numfmt.Thousands(n) + " places"
		if n == 1 {
			places = "1 place"
		}
		if m.Change < 0 {
			return "up " + places
		}
		return "down " + places
	case changes.MetricAITrafficShare, changes.MetricChannelShare:
		return strings.Replace(fmt.Sprintf("%+.1f pts", m.Change*100), "-", "−", 1)
	}
	if m.ChangeRatio == nil {
		return "from 0 to " + numfmt.Count(m.Current)
	}
	return numfmt.Change(*m.ChangeRatio)
}

func moverTone(m changes.Mover) string {
	if m.Improved == nil {
		return ""
	}
	if *m.Improved {
		return "up"
	}
	return "down"
}

// changeSet collects additions and removals per domain in first-seen order.
type changeSet struct {
	order          []string
	added, removed map[string][]string
}

func newChangeSet() *changeSet {
	return &changeSet{added: map[string][]string{}, removed: map[string][]string{}}
}

func (c *changeSet) add(domain string, added bool, item string) {
	if _, ok := c.added[domain]; !ok {
		if _, ok := c.removed[domain]; !ok {
			c.order = append(c.order, domain)
		}
	}
	if added {
		c.added[domain] = append(c.added[domain], item)
	} else {
		c.removed[domain] = append(c.removed[domain], item)
	}
}

// maxItems bounds one cell; the rest are counted.
const maxItems = 8

// changeRows bounds each table of additions and removals (competitors, platforms, …): the
// domains with the most visits first; `sitewatch changes` and the changes_* views have all.
const changeRows = 8

// rows are the first changeRows domains (the digest lists them by the domain's visits,
// largest first), and how many more there are.
func (c *changeSet) rows() ([]changeRow, int) {
	var out []changeRow
	for i, d := range c.order {
		if i == changeRows {
			return out, len(c.order) - changeRows
		}
		out = append(out, changeRow{Domain: d, Added: itemList(c.added[d]), Removed: itemList(c.removed[d])})
	}
	return out, 0
}

func itemList(items []string) string {
	if len(items) == 0 {
		return "—"
	}
	if len(items) > maxItems {
		return strings.Join(items[:maxItems], ", ") + fmt.Sprintf(" and %d more", len(items)-maxItems)
	}
	return strings.Join(items, ", ")
}
