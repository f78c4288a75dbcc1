package report

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"

	"sitewatch/pipeline/changes"
	"sitewatch/pipeline/numfmt"
)

// fallsOpen is how many of the largest falls show before the fold; the rest (up to
// changes.MaxLinesPerSection, as `sitewatch changes` prints) sit in a <details> below them.
const fallsOpen = 5

// fallsSection is "Largest falls": the month's falls in visits by percent, a fall to zero
// first, ties by the visits lost — the ranking `sitewatch changes` prints in its second block,
// in the same words, and the one the headline's largest-fall card leads with. It is its own
// section, beside Needs attention, never filler in that list.
type fallsSection struct {
	Title, Empty string
	Lead, More   []fallRow
}

type fallRow struct {
	Rank                                 int
	Domain, Change, Visits, Before, Lost string
}

// loadFalls reads the month's largest falls: the digest's when it was read (the same settings,
// so the same list as `sitewatch changes`), else the same query, as an incomplete or first
// month has no digest.
func (d *data) loadFalls(ctx context.Context, db *sql.DB) error {
	if d.Digest != nil && d.Digest.Month == d.Snapshot {
		d.Falls = d.Digest.LargestFalls
		return nil
	}
	falls, err := changes.ReadLargestFalls(ctx, db, d.Snapshot, d.fallsFloor(), changes.MaxLinesPerSection)
	if err != nil {
		return err
	}
	d.Falls = falls
	return nil
}

// fallsFloor is the visits a domain needs the month before to be ranked (attention.min_visits).
func (d *data) fallsFloor() int64 { return d.settings.Attention.Resolved().MinVisits }

func buildFalls(d *data) *fallsSection {
	s := &fallsSection{Title: changes.FallsTitle(d.Snapshot, d.fallsFloor()), Empty: changes.NoFalls}
	for i, f := range d.Falls {
		row := fallRow{Rank: f.Rank, Domain: f.Domain, Change: numfmt.Change(f.ChangePct / 100),
			Visits: numfmt.Count(f.Visits), Before: numfmt.Count(f.Previous), Lost: numfmt.Count(f.Lost)}
		if i < fallsOpen {
			s.Lead = append(s.Lead, row)
		} else {
			s.More = append(s.More, row)
		}
	}
	return s
}

// fallCard is the headline's largest fall, ranked as the Largest falls section is (a fall to
// zero is the largest); a dash when no domain above the floor lost visits in the month.
func fallCard(d *data) card {
	if len(d.Falls) == 0 {
		return card{Label: "Largest fall in visits, MoM", Value: numfmt.Dash, Detail: changes.NoFalls + " in " + d.Snapshot}
	}
	f := d.Falls[0]
	ch := f.ChangePct / 100
	return card{Label: "Largest fall in visits, MoM", Value: f.Domain, Changes: []toned{{numfmt.Change(ch), changeTone(ch)}},
		Detail: numfmt.Count(f.Previous) + " → " + numfmt.Count(f.Visits) + " · #1 of Largest falls"}
}

// fallReason is a fall's line in its panel when needs attention does not name the domain.
func fallReason(f changes.Fall) string {
	return fmt.Sprintf("largest falls #%s: %s", strconv.Itoa(f.Rank), f.Text())
}
