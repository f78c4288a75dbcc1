package report

import (
	"strings"

	"sitewatch/pipeline/changes"
	"sitewatch/pipeline/numfmt"
)

// foldedChanges are the rows of What changed's tables of additions and removals beyond the
// first changeRows domains (digest.go shows those), for the page to show folded in a
// <details>: a mailed file holds the full lists instead of pointing its reader to the CLI.
type foldedChanges struct {
	Competitors, Platforms, Keywords, Countries []foldRow
	// Omitted* count the domains beyond maxFolded (only in `sitewatch changes` and the views).
	OmittedCompetitors, OmittedPlatforms, OmittedKeywords, OmittedCountries int
}

type foldRow struct{ Domain, Added, Removed string }

// foldList collects additions and removals per domain in the digest's order (its domains by
// visits, largest first).
type foldList struct {
	order          []string
	added, removed map[string][]string
}

func (f *foldList) add(domain string, added bool, item string) {
	if f.added == nil {
		f.added, f.removed = map[string][]string{}, map[string][]string{}
	}
	_, a := f.added[domain]
	_, r := f.removed[domain]
	if !a && !r {
		f.order = append(f.order, domain)
		f.added[domain], f.removed[domain] = nil, nil
	}
	if added {
		f.added[domain] = append(f.added[domain], item)
	} else {
		f.removed[domain] = append(f.removed[domain], item)
	}
}

// rest returns the rows after the first changeRows domains, up to maxFolded, and how many
// domains are left beyond those. Every item of a domain is listed: the cell is folded away.
func (f *foldList) rest() ([]foldRow, int) {
	var out []foldRow
	omitted := 0
	for i, d := range f.order {
		switch {
		case i < changeRows:
			continue
		case i >= changeRows+maxFolded:
			omitted++
			continue
		}
		out = append(out, foldRow{Domain: d, Added: allItems(f.added[d]), Removed: allItems(f.removed[d])})
	}
	return out, omitted
}

func allItems(items []string) string {
	if len(items) == 0 {
		return numfmt.Dash
	}
	return strings.Join(items, ", ")
}

func buildFolded(dg *changes.Digest) *foldedChanges {
	if dg == nil || dg.PreviousMonth == "" {
		return nil
	}
	var comp, plat, kw, geo foldList
	for _, c := range dg.Competitors {
		comp.add(c.Domain, c.Change == "new", c.Competitor)
	}
	for _, p := range dg.AIPlatforms {
		plat.add(p.Domain, p.Change == "new", p.Platform)
	}
	for _, k := range dg.Keywords {
		kw.add(k.Domain, k.Change == "new", k.Keyword)
	}
	for _, c := range dg.Countries {
		name := c.CountryName
		if name == "" {
			name = c.CountryCode
		}
		geo.add(c.Domain, c.Change == "entered", name)
	}
	f := &foldedChanges{}
	f.Competitors, f.OmittedCompetitors = comp.rest()
	f.Platforms, f.OmittedPlatforms = plat.rest()
	f.Keywords, f.OmittedKeywords = kw.rest()
	f.Countries, f.OmittedCountries = geo.rest()
	return f
}
