package report

import (
	"context"
	"database/sql"
	"fmt"
	"html/template"
	"sort"
	"strings"
	"time"

	"sitewatch/pipeline/numfmt"
)

// panel is one flagged domain's own place in the page, or one of the largest falls', one click
// or tap from every mention of it (needs attention, largest falls, the headline cards, the All
// domains table): why it is listed, its whole history with the year-ago month marked, its
// channels and its competitors.
type panel struct {
	ID, Domain, Severity                        string
	Back, BackTitle                             string // the section listing it: attention or falls
	Reasons                                     []string
	Last, LastMonth, MoM, MoMTone, YoY, YoYTone string
	Rank                                        string
	SVG                                         template.HTML
	Channels                                    string
	Competitors                                 []string
}

// panelID is the anchor of a domain's panel: domains hold only letters, digits, dots and
// hyphens, all valid in an id.
func panelID(domain string) string { return "d-" + domain }

// maxPanelCompetitors are listed in a panel, by the API's order of similarity.
const maxPanelCompetitors = 5

// maxPanelChannels are named in a panel, largest share first.
const maxPanelChannels = 5

// panelDomains are the domains with a panel: those needs attention names, in its order, then
// the largest falls it does not name, in theirs.
func panelDomains(d *data) []string {
	out := flaggedDomains(d)
	flagged := drawnFlagged(d)
	for _, f := range d.Falls {
		if !flagged[f.Domain] {
			out = append(out, f.Domain)
		}
	}
	return out
}

func buildPanels(d *data) []panel {
	bySite := map[string]*site{}
	for i := range d.Sites {
		bySite[d.Sites[i].Domain] = &d.Sites[i]
	}
	var out []panel
	flagged := drawnFlagged(d)
	if d.Attention != nil {
		for _, a := range d.Attention.Domains[:min(len(d.Attention.Domains), flaggedInPage)] {
			p := newPanel(d, a.Domain, bySite[a.Domain])
			p.Back, p.BackTitle = "attention", "Needs attention"
			for _, r := range a.Reasons {
				p.Reasons = append(p.Reasons, r.Text)
			}
			if len(a.Reasons) > 0 {
				p.Severity = a.Reasons[0].Severity
			}
			out = append(out, p)
		}
	}
	for _, f := range d.Falls {
		if !flagged[f.Domain] {
			p := newPanel(d, f.Domain, bySite[f.Domain])
			p.Back, p.BackTitle, p.Reasons = "falls", "Largest falls", []string{fallReason(f)}
			out = append(out, p)
		}
	}
	return out
}

// newPanel is domain's panel without its reasons: figures, chart, channels and competitors.
func newPanel(d *data, domain string, s *site) panel {
	p := panel{ID: panelID(domain), Domain: domain, Last: numfmt.Dash, MoM: numfmt.Dash, YoY: numfmt.Dash, Rank: numfmt.Dash}
	if s != nil {
		p.fill(d, s)
	} else {
		p.SVG = sparkline(domain, d.History[domain], time.Time{})
	}
	p.Channels = channelLine(d, domain)
	p.Competitors = d.PanelCompetitors[domain]
	return p
}

// fill sets the panel's figures and chart from the domain's site row.
func (p *panel) fill(d *data, s *site) {
	p.Last, p.Rank = humanNull(s.LastVisits), rank(s.GlobalRank)
	if !s.LastMonth.IsZero() {
		p.LastMonth = s.LastMonth.Format("Jan 2006")
	}
	if ch, ok := s.mom(); ok {
		p.MoM, p.MoMTone = numfmt.Change(ch), changeTone(ch)
	}
	p.YoY, p.YoYTone = s.yoyText()
	p.SVG = sparkline(s.Domain, d.History[s.Domain], s.LastMonth.AddDate(-1, 0, 0))
}

// channelLine names the domain's largest channels with their shares: "Direct 41.2% ·
// Organic search 30.0% · …", "" without channel data.
func channelLine(d *data, domain string) string {
	var cs []channelShare
	for _, c := range d.Channels {
		if c.Domain == domain && c.Share > 0 {
			cs = append(cs, c)
		}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].Share > cs[j].Share })
	parts := make([]string, 0, maxPanelChannels)
	for i, c := range cs {
		if i == maxPanelChannels {
			break
		}
		name := c.Channel
		if n, ok := channelNames[name]; ok {
			name = n
		}
		parts = append(parts, name+"\u00a0"+numfmt.Share(c.Share))
	}
	return strings.Join(parts, " · ")
}

// loadPanelCompetitors reads the first maxPanelCompetitors competitors of each domain with a
// panel, with their visits.
func (d *data) loadPanelCompetitors(ctx context.Context, db *sql.DB) error {
	d.PanelCompetitors = map[string][]string{}
	flagged := panelDomains(d)
	if len(flagged) == 0 {
		return nil
	}
	args := []any{d.Snapshot}
	for _, dom := range flagged {
		args = append(args, dom)
	}
	args = append(args, maxPanelCompetitors)
	err := each(ctx, db, `
		SELECT domain, competitor, competitor_total_visits FROM competitors
		WHERE snapshot_month = ? AND domain IN (`+strings.TrimSuffix(strings.Repeat("?, ", len(flagged)), ", ")+`)
		QUALIFY row_number() OVER (PARTITION BY domain ORDER BY competitor_position) <= ?
		ORDER BY domain, competitor_position`, args, func(r *sql.Rows) error {
		var dom, comp string
		var visits sql.NullFloat64
		if err := r.Scan(&dom, &comp, &visits); err != nil {
			return err
		}
		if visits.Valid {
			comp += " (" + numfmt.Count(visits.Float64) + "\u00a0visits)"
		}
		d.PanelCompetitors[dom] = append(d.PanelCompetitors[dom], comp)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read the flagged domains' competitors: %w", err)
	}
	return nil
}
