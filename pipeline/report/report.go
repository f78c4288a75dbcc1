// Package report writes the monthly HTML report of one snapshot: a single self-contained file
// (inline SVG charts drawn with gonum.org/v1/plot, the chart font embedded as a data URI, no
// scripts, no network) showing traffic trends, channel mix, AI referrals and competitors, with
// estimates labelled and the API's snapshot date and reporting period shown.
package report

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"sort"
	"strings"

	"gonum.org/v1/plot/font"
)

// Write renders the report of snapshot (YYYY-MM) from the warehouse db to w. It returns an
// error when snapshot is malformed, when the warehouse holds no sites rows for it (the message
// lists the snapshots that exist), or when a query, a chart or the write fails.
func Write(ctx context.Context, db *sql.DB, snapshot string, w io.Writer) error {
	d, err := load(ctx, db, snapshot)
	if err != nil {
		return err
	}
	page, err := build(d)
	if err != nil {
		return fmt.Errorf("report %s: %w", snapshot, err)
	}
	var buf bytes.Buffer
	if err := pageTmpl.Execute(&buf, page); err != nil {
		return fmt.Errorf("report %s: render html: %w", snapshot, err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("report %s: write: %w", snapshot, err)
	}
	return nil
}

type pageData struct {
	Snapshot      string
	SnapshotDates string // the API's meta.snapshot_date values, "2026-02-01" or "2026-02-01 – 2026-02-03"
	Periods       string // traffic.period values
	Domains       int
	FontFace      template.CSS
	Charts        []*chart
	Sites         []siteRow
	AI            []aiRow
	Competitors   []compRow
}

type siteRow struct {
	Domain, Title, SnapshotDate, Period, Rank, Visits, Source, LastMonth, LastVisits, MoM, AIVisits, Bounce, Countries string
}

type aiRow struct{ Domain, Platform, SharePct, Estimated string }

type compRow struct{ Domain, Competitor, Rank, Visits, Ratio, Watchlist string }

func build(d *data) (*pageData, error) {
	p := &pageData{Snapshot: d.Snapshot, Domains: len(d.Sites)}
	var dates, periods []string
	for _, s := range d.Sites {
		dates = append(dates, s.SnapshotDate)
		periods = append(periods, s.Period)
		r := siteRow{
			Domain: s.Domain, Title: s.Title, SnapshotDate: orDash(s.SnapshotDate), Period: orDash(s.Period),
			Rank: "—", Visits: "—", LastMonth: orDash(s.LastMonth), LastVisits: "—", MoM: "—", AIVisits: "—",
			Bounce: "—", Countries: orDash(s.TopCountries), Source: "estimate",
		}
		if s.FromGA {
			r.Source = "analytics"
		}
		if s.GlobalRank.Valid {
			r.Rank = fmt.Sprintf("#%d", s.GlobalRank.Int64)
		}
		if s.TotalVisits.Valid {
			r.Visits = human(s.TotalVisits.Float64)
		}
		if s.LastVisits.Valid {
			r.LastVisits = human(float64(s.LastVisits.Int64))
		}
		if s.MoM.Valid {
			r.MoM = fmt.Sprintf("%+.1f%%", s.MoM.Float64*100)
		}
		if s.AITotal.Valid {
			r.AIVisits = human(float64(s.AITotal.Int64))
		}
		if s.BounceRate.Valid {
			r.Bounce = fmt.Sprintf("%.1f%%", s.BounceRate.Float64*100)
		}
		p.Sites = append(p.Sites, r)
	}
	p.SnapshotDates, p.Periods = span(dates), span(periods)
	for _, a := range d.AI {
		r := aiRow{Domain: a.Domain, Platform: a.Platform, SharePct: trimZeros(fmt.Sprintf("%.2f", a.SharePct)), Estimated: "—"}
		if a.Estimated.Valid {
			r.Estimated = human(a.Estimated.Float64)
		}
		p.AI = append(p.AI, r)
	}
	perDomain := map[string]int{}
	for _, c := range d.Competitors {
		if perDomain[c.Domain] == 5 {
			continue // the five first-listed competitors per domain
		}
		perDomain[c.Domain]++
		r := compRow{Domain: c.Domain, Competitor: c.Competitor, Rank: "—", Visits: "—", Ratio: "—", Watchlist: ""}
		if c.CompRank.Valid {
			r.Rank = fmt.Sprintf("#%d", c.CompRank.Int64)
		}
		if c.CompVisits.Valid {
			r.Visits = human(c.CompVisits.Float64)
		}
		if c.Ratio.Valid {
			r.Ratio = fmt.Sprintf("%.2f×", c.Ratio.Float64)
		}
		if c.OnWatchlist {
			r.Watchlist = "yes"
		}
		p.Competitors = append(p.Competitors, r)
	}
	for _, mk := range []func(*data) (*chart, error){trafficChart, channelChart, aiChart, competitorChart} {
		c, err := mk(d)
		if err != nil {
			return nil, err
		}
		if c != nil {
			p.Charts = append(p.Charts, c)
		}
	}
	ff, err := fontFace()
	if err != nil {
		return nil, err
	}
	p.FontFace = ff
	return p, nil
}

// fontFace returns a CSS @font-face rule carrying the charts' font (Liberation Sans, bundled
// with gonum/plot) as a data URI, so the inline SVG text renders with the metrics it was laid out
// with on a machine without that font and without network.
func fontFace() (template.CSS, error) {
	face := font.DefaultCache.Lookup(chartFont, 12)
	if face.Face == nil {
		return "", fmt.Errorf("chart font %s %s not found", chartFont.Typeface, chartFont.Variant)
	}
	var raw bytes.Buffer
	if _, err := face.Face.WriteSourceTo(nil, &raw); err != nil {
		return "", fmt.Errorf("read chart font: %w", err)
	}
	return template.CSS(`@font-face{font-family:"Liberation Sans";font-weight:normal;font-style:normal;src:url(data:font/ttf;base64,` +
		base64.StdEncoding.EncodeToString(raw.Bytes()) + `) format("truetype");}`), nil
}

// span summarizes distinct non-empty values: "a", or "a – b" for the smallest and largest.
func span(vals []string) string {
	var vs []string
	for _, v := range vals {
		if v != "" {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return "not stated by the API"
	}
	sort.Strings(vs)
	if vs[0] == vs[len(vs)-1] {
		return vs[0]
	}
	return vs[0] + " – " + vs[len(vs)-1]
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "—"
	}
	return s
}

var pageTmpl = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>sitewatch report — snapshot {{.Snapshot}}</title>
<style>
{{.FontFace}}
body{font-family:"Liberation Sans",Arial,Helvetica,sans-serif;margin:0;background:#f5f6f8;color:#1d2330;}
main{max-width:1200px;margin:0 auto;padding:24px 32px 48px;}
h1{font-size:28px;margin:8px 0 4px;}
h2{font-size:20px;margin:32px 0 4px;}
.meta{font-size:15px;color:#3b4252;margin:4px 0;}
.meta b{color:#1d2330;}
.estimate{display:inline-block;background:#fff4d6;border:1px solid #e8c66a;border-radius:4px;padding:6px 10px;font-size:14px;margin:10px 0;}
section.chart{background:#fff;border:1px solid #dde1e7;border-radius:6px;padding:12px 16px;margin:16px 0;}
section.chart h2{margin-top:4px;}
section.chart svg{width:100%;height:auto;display:block;}
.note{font-size:13px;color:#4c566a;margin:2px 0 8px;}
table{border-collapse:collapse;width:100%;background:#fff;font-size:13px;margin:8px 0;}
th,td{border:1px solid #dde1e7;padding:4px 6px;text-align:left;vertical-align:top;}
th{background:#eef1f5;}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap;}
td.nw{white-space:nowrap;}
</style>
</head>
<body>
<main>
<h1>sitewatch report — snapshot {{.Snapshot}}</h1>
<p class="meta"><b>Data snapshot date (API):</b> {{.SnapshotDates}} &nbsp;·&nbsp; <b>Reporting period:</b> {{.Periods}} &nbsp;·&nbsp; <b>Domains:</b> {{.Domains}}</p>
<p class="estimate">Traffic, engagement, channel, country, AI and competitor figures are <b>estimates</b> from the Site Intelligence API, except traffic marked “analytics” (from a connected analytics source). Per-domain snapshot dates and periods are in the table below.</p>
{{range .Charts}}
<section class="chart" id="{{.ID}}">
<h2>{{.Title}}</h2>
<p class="note">{{.Note}}</p>
{{.SVG}}
</section>
{{end}}
<h2>Watchlist</h2>
<p class="note">Visits in period: traffic.total_visits. Last month: the newest month of this snapshot's history, change against the previous calendar month.</p>
<table>
<tr><th>Domain</th><th>Title</th><th>Snapshot date</th><th>Period</th><th>Global rank</th><th>Visits in period</th><th>Traffic data</th><th>Last month</th><th>Visits</th><th>MoM</th><th>AI visits (est.)</th><th>Bounce rate</th><th>Top countries</th></tr>
{{range .Sites}}<tr><td>{{.Domain}}</td><td>{{.Title}}</td><td class="nw">{{.SnapshotDate}}</td><td class="nw">{{.Period}}</td><td class="num">{{.Rank}}</td><td class="num">{{.Visits}}</td><td>{{.Source}}</td><td class="nw">{{.LastMonth}}</td><td class="num">{{.LastVisits}}</td><td class="num">{{.MoM}}</td><td class="num">{{.AIVisits}}</td><td class="num">{{.Bounce}}</td><td>{{.Countries}}</td></tr>
{{end}}</table>
{{if .AI}}
<h2>AI platforms</h2>
<p class="note">Share: percent 0–100 of the domain's AI-referred visits, as returned. Estimated visits = share / 100 × AI-referred visits (an estimate).</p>
<table>
<tr><th>Domain</th><th>Platform</th><th>Share %</th><th>Estimated visits</th></tr>
{{range .AI}}<tr><td>{{.Domain}}</td><td>{{.Platform}}</td><td class="num">{{.SharePct}}</td><td class="num">{{.Estimated}}</td></tr>
{{end}}</table>
{{end}}
{{if .Competitors}}
<h2>Competitors</h2>
<p class="note">The first five similar sites listed for each domain. Ratio: competitor visits / domain visits (estimates).</p>
<table>
<tr><th>Domain</th><th>Competitor</th><th>Global rank</th><th>Visits (est.)</th><th>Ratio</th><th>On watchlist</th></tr>
{{range .Competitors}}<tr><td>{{.Domain}}</td><td>{{.Competitor}}</td><td class="num">{{.Rank}}</td><td class="num">{{.Visits}}</td><td class="num">{{.Ratio}}</td><td>{{.Watchlist}}</td></tr>
{{end}}</table>
{{end}}
</main>
</body>
</html>
`))
