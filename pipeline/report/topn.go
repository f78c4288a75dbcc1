package report

import (
	"fmt"
	"sort"
	"strings"
)

// topN bounds every per-domain section, so the page stays readable for 5 or 5,000 domains;
// the "All domains" table lists every domain.
const topN = 30

// topSites are the topN most visited domains (d.Sites is sorted by visits, largest first).
func topSites(d *data) []site {
	return d.Sites[:min(topN, len(d.Sites))]
}

// maxNamed bounds a list of names in running text ("No channel data for: …").
const maxNamed = 10

// someNames joins up to maxNamed names and counts the rest.
func someNames(names []string) string {
	if len(names) > maxNamed {
		return strings.Join(names[:maxNamed], ", ") + fmt.Sprintf(" and %d more", len(names)-maxNamed)
	}
	return strings.Join(names, ", ")
}

// cutNote says which domains a section shows when the watchlist is longer than topN.
func cutNote(d *data, what string) string {
	if d.Totals.Loaded <= topN {
		return ""
	}
	return fmt.Sprintf("Showing %s: the %d most visited of %d domains. Every domain is in All domains below.", what, topN, d.Totals.Loaded)
}

// yoyLeaders are the topN domains whose visits changed most year on year, in visits (the
// report's ranking rule), then the domains without a year-on-year figure among the most
// visited, so a short watchlist still shows why a domain has no bar. The leaders are every
// loaded domain's: sitePass keeps them in d.Sites.
func yoyLeaders(d *data) []site {
	if d.Totals.Loaded <= topN {
		return d.Sites
	}
	var with []site
	for _, s := range d.Sites {
		if _, ok := s.yoy(); ok {
			with = append(with, s)
		}
	}
	moved := func(s site) float64 { return visitsMoved(s.LastVisits, s.YearAgoVisits) }
	sort.SliceStable(with, func(i, j int) bool { return moved(with[i]) > moved(with[j]) })
	return with[:min(topN, len(with))]
}
