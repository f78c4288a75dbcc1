package flatten

import (
	"sitewatch/schema"

	"fmt"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// FlattenError reports a value that cannot be turned into a warehouse column (a malformed
// date), naming the domain and the JSON path. The domain's rows are not added.
type FlattenError struct {
	Domain string
	Path   string // JSON path, e.g. traffic.history[3].month
	Value  string
	Want   string // expected format, e.g. YYYY-MM-DD
}

func (e *FlattenError) Error() string {
	return fmt.Sprintf("flatten %s: %s is %q, not a %s date: the response is malformed, so this domain is not loaded",
		e.Domain, e.Path, e.Value, e.Want)
}

// Is makes errors.Is(err, schema.ErrMalformedValue) hold for a *FlattenError.
func (e *FlattenError) Is(target error) bool { return target == schema.ErrMalformedValue }

// Batch accumulates the flattened rows of many domains in Arrow builders, one per snapshot
// table. NewRecords hands them out as records and resets the builders, so a Batch can be
// reused for bounded-size chunks of a stream. A Batch is not safe for concurrent use; Release
// frees its builders.
type Batch struct {
	mem     memory.Allocator
	b       [numSnapshotTables]*array.RecordBuilder
	domains int
	rows    int

	// scratch for Add's parse phase
	histMonths []arrow.Date32
	platMonths [][]arrow.Date32
}

// NewBatch returns an empty Batch allocating from mem (nil: memory.DefaultAllocator).
func NewBatch(mem memory.Allocator) *Batch {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	b := &Batch{mem: mem}
	for i, t := range SnapshotTables {
		b.b[i] = array.NewRecordBuilder(mem, t.Schema)
	}
	return b
}

// Release frees the builders.
func (b *Batch) Release() {
	for i, rb := range b.b {
		if rb != nil {
			rb.Release()
			b.b[i] = nil
		}
	}
}

// Domains is the number of domains added since the last NewRecords.
func (b *Batch) Domains() int { return b.domains }

// Rows is the number of rows, over all tables, added since the last NewRecords.
func (b *Batch) Rows() int { return b.rows }

// NewRecords returns one record per entry of SnapshotTables (in that order; a record may have
// zero rows) and resets the batch. The caller releases the records.
func (b *Batch) NewRecords() []arrow.Record {
	recs := make([]arrow.Record, len(b.b))
	for i, rb := range b.b {
		// NewRecord drops the builders' capacity; reserve what this chunk needed so the next
		// chunk of similar size does not regrow every buffer from zero.
		n := 0
		dataLens := make([]int, len(rb.Fields()))
		for j, f := range rb.Fields() {
			n = f.Len()
			if sb, ok := f.(*array.StringBuilder); ok {
				dataLens[j] = sb.DataLen()
			}
		}
		recs[i] = rb.NewRecord()
		if n > 0 {
			rb.Reserve(n)
			for j, f := range rb.Fields() {
				if sb, ok := f.(*array.StringBuilder); ok && dataLens[j] > 0 {
					sb.ReserveData(dataLens[j])
				}
			}
		}
	}
	b.domains, b.rows = 0, 0
	return recs
}

func parseDay(s string) (arrow.Date32, bool) {
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		return 0, false
	}
	return arrow.Date32FromTime(t), true
}

func parseMonth(s string) (arrow.Date32, bool) {
	t, err := time.Parse("2006-01", s)
	if err != nil {
		return 0, false
	}
	return arrow.Date32FromTime(t), true
}

// Add flattens one domain's overview and similar-sites responses (either may be nil: its
// columns are NULL and its child tables get no rows) into the batch. domain is the normalized
// watchlist domain written to every row; fetchedAt (the overview's fetch time) becomes
// sites.fetched_at in UTC. A malformed date returns a *FlattenError and adds nothing.
//
// Mapping decisions: a missing or null object gives NULL columns and no child rows, never 0.
// sources_share, when present, gives one row per channel of SourcesShare.Channels(), with a
// NULL share for a null or missing channel. Child items whose identifying string is empty or
// null (keyword, platform name, country code, similar domain, tag, prompt) are skipped, since
// those columns are NOT NULL; positions still count them, so position stays the 1-based index
// in the response. Tags are deduplicated per domain.
func (b *Batch) Add(snapshot, domain string, fetchedAt time.Time, ov *schema.SiteOverview, sim *schema.SiteSimilar) error {
	if err := b.parseDates(domain, ov); err != nil {
		return err
	}
	if ov == nil {
		ov = &schema.SiteOverview{}
	}
	if sim == nil {
		sim = &schema.SiteSimilar{}
	}
	b.addSite(snapshot, domain, fetchedAt, ov, sim)
	b.addOverviewChildren(snapshot, domain, ov)
	b.addSimilarChildren(snapshot, domain, sim)
	b.domains++
	return nil
}

// parseDates checks and converts every date of ov before anything is appended, so a malformed
// one leaves the batch untouched.
func (b *Batch) parseDates(domain string, ov *schema.SiteOverview) error {
	b.histMonths = b.histMonths[:0]
	b.platMonths = b.platMonths[:0]
	if ov == nil {
		return nil
	}
	if d := ov.Meta.SnapshotDate; d != nil {
		if _, ok := parseDay(*d); !ok {
			return &FlattenError{domain, "meta.snapshot_date", *d, "YYYY-MM-DD"}
		}
	}
	if ov.Traffic != nil {
		for i, h := range ov.Traffic.History {
			d, ok := parseDay(h.Month)
			if !ok {
				return &FlattenError{domain, fmt.Sprintf("traffic.history[%d].month", i), h.Month, "YYYY-MM-DD"}
			}
			b.histMonths = append(b.histMonths, d)
		}
	}
	if ov.AIReferrals != nil {
		for i, p := range ov.AIReferrals.Platforms {
			var months []arrow.Date32
			if i < cap(b.platMonths) {
				months = b.platMonths[:i+1][i][:0]
			}
			for j, h := range p.History {
				d, ok := parseMonth(h.Month)
				if !ok {
					return &FlattenError{domain, fmt.Sprintf("ai_referrals.platforms[%d].history[%d].month", i, j), h.Month, "YYYY-MM"}
				}
				months = append(months, d)
			}
			b.platMonths = append(b.platMonths, months)
		}
	}
	return nil
}

func (b *Batch) addSite(snapshot, domain string, fetchedAt time.Time, ov *schema.SiteOverview, sim *schema.SiteSimilar) {
	f := b.b[idxSites].Fields()
	appendString(f[0], snapshot)
	appendString(f[1], domain)
	appendOptString(f[2], nonEmpty(ov.Meta.Request.URL))
	if d := ov.Meta.SnapshotDate; d != nil {
		day, _ := parseDay(*d)
		f[3].(*array.Date32Builder).Append(day)
	} else {
		f[3].AppendNull()
	}
	appendOptString(f[4], ov.Meta.DataCoverage)

	w := ov.Website
	if w == nil {
		w = &schema.Website{}
	}
	appendOptString(f[5], w.Title)
	appendOptString(f[6], w.Description)
	var cat schema.Category
	if w.Category != nil {
		cat = *w.Category
	}
	appendOptString(f[7], cat.Slug)
	appendOptString(f[8], cat.Name)
	var img schema.Images
	if w.Images != nil {
		img = *w.Images
	}
	appendOptString(f[9], img.FaviconURL)
	appendOptString(f[10], img.ScreenshotDesktopURL)
	appendOptString(f[11], img.ScreenshotMobileURL)
	var flags schema.Flags
	if w.Flags != nil {
		flags = *w.Flags
	}
	appendOptBool(f[12], flags.IsSmallSite)
	appendOptBool(f[13], flags.IsFromGoogleAnalytics)

	t := ov.Traffic
	if t == nil {
		t = &schema.Traffic{}
	}
	appendOptBool(f[14], t.IsDataFromGA)

	global, country, category := ranks(ov.Rankings)
	appendOptInt64(f[15], global.Rank)
	appendOptString(f[16], country.CountryCode)
	appendOptInt64(f[17], country.Rank)
	appendOptInt64(f[18], category.Rank)

	var eng schema.Engagement
	if t.Engagement != nil {
		eng = *t.Engagement
	}
	appendOptFloat64(f[19], eng.PagesPerVisit)
	appendOptFloat64(f[20], eng.BounceRate)
	appendOptFloat64(f[21], eng.AverageVisitDurationSeconds)
	appendOptString(f[22], t.Period)

	var ai schema.AIReferrals
	if ov.AIReferrals != nil {
		ai = *ov.AIReferrals
	}
	appendOptInt64(f[23], ai.TotalVisits)
	appendOptFloat64(f[24], ai.GlobalTrafficShare)
	var total *float64
	if sim.Traffic != nil {
		total = sim.Traffic.TotalVisits
	}
	appendOptFloat64(f[25], total)
	if fetchedAt.IsZero() {
		f[26].AppendNull()
	} else {
		f[26].(*array.TimestampBuilder).Append(arrow.Timestamp(fetchedAt.UTC().UnixMicro()))
	}
	b.rows++
}

func (b *Batch) addOverviewChildren(snapshot, domain string, ov *schema.SiteOverview) {
	if t := ov.Traffic; t != nil {
		f := b.b[idxTrafficHistory].Fields()
		for i, h := range t.History {
			appendString(f[0], snapshot)
			appendString(f[1], domain)
			f[2].(*array.Date32Builder).Append(b.histMonths[i])
			appendOptInt64(f[3], h.Visits)
			b.rows++
		}
		if t.SourcesShare != nil {
			f := b.b[idxSourcesShare].Fields()
			for _, c := range t.SourcesShare.Channels() {
				appendString(f[0], snapshot)
				appendString(f[1], domain)
				appendString(f[2], c.Channel)
				appendOptFloat64(f[3], c.Share)
				b.rows++
			}
		}
		f = b.b[idxGeographyShare].Fields()
		for _, g := range t.GeographyShare {
			if g.CountryCode == "" {
				continue
			}
			appendString(f[0], snapshot)
			appendString(f[1], domain)
			appendString(f[2], g.CountryCode)
			appendOptFloat64(f[3], g.Share)
			b.rows++
		}
	}
	if ov.SEO != nil {
		f := b.b[idxKeywords].Fields()
		for i, k := range ov.SEO.TopKeywords {
			if k.Keyword == "" {
				continue
			}
			appendString(f[0], snapshot)
			appendString(f[1], domain)
			f[2].(*array.Int32Builder).Append(int32(i + 1))
			appendString(f[3], k.Keyword)
			appendOptInt64(f[4], k.SearchVolume)
			appendOptFloat64(f[5], k.CPCUSD)
			appendOptFloat64(f[6], k.EstimatedValueUSD)
			b.rows++
		}
	}
	if ai := ov.AIReferrals; ai != nil {
		fp := b.b[idxAIPlatforms].Fields()
		fh := b.b[idxAIPlatformHistory].Fields()
		for i, p := range ai.Platforms {
			if p.Name == "" {
				continue
			}
			appendString(fp[0], snapshot)
			appendString(fp[1], domain)
			appendString(fp[2], p.Name)
			appendOptInt64(fp[3], p.Rank)
			appendOptFloat64(fp[4], p.Share)
			b.rows++
			for j, h := range p.History {
				appendString(fh[0], snapshot)
				appendString(fh[1], domain)
				appendString(fh[2], p.Name)
				fh[3].(*array.Date32Builder).Append(b.platMonths[i][j])
				appendOptFloat64(fh[4], h.Share)
				b.rows++
			}
		}
		f := b.b[idxAIPrompts].Fields()
		for i, p := range ai.TopPrompts {
			if p == "" {
				continue
			}
			appendString(f[0], snapshot)
			appendString(f[1], domain)
			f[2].(*array.Int32Builder).Append(int32(i + 1))
			appendString(f[3], p)
			b.rows++
		}
	}
}

func (b *Batch) addSimilarChildren(snapshot, domain string, sim *schema.SiteSimilar) {
	f := b.b[idxSimilarSites].Fields()
	for i, s := range sim.SimilarSites {
		if s.Domain == "" {
			continue
		}
		appendString(f[0], snapshot)
		appendString(f[1], domain)
		f[2].(*array.Int32Builder).Append(int32(i + 1))
		appendString(f[3], s.Domain)
		appendOptString(f[4], s.Title)
		appendOptString(f[5], s.Description)
		global, country, category := ranks(s.Rankings)
		appendOptInt64(f[6], global.Rank)
		appendOptString(f[7], country.CountryCode)
		appendOptString(f[8], country.CountryName)
		appendOptInt64(f[9], country.Rank)
		appendOptString(f[10], category.CategorySlug)
		appendOptInt64(f[11], category.Rank)
		var total *float64
		if s.Traffic != nil {
			total = s.Traffic.TotalVisits
		}
		appendOptFloat64(f[12], total)
		var img schema.Images
		if s.Images != nil {
			img = *s.Images
		}
		appendOptString(f[13], img.FaviconURL)
		appendOptString(f[14], img.ScreenshotDesktopURL)
		appendOptString(f[15], img.ScreenshotMobileURL)
		b.rows++
	}
	if sim.Website != nil && len(sim.Website.Tags) > 0 {
		f := b.b[idxSiteTags].Fields()
		seen := make(map[string]bool, len(sim.Website.Tags))
		for _, tag := range sim.Website.Tags {
			if tag == "" || seen[tag] {
				continue
			}
			seen[tag] = true
			appendString(f[0], snapshot)
			appendString(f[1], domain)
			appendString(f[2], tag)
			b.rows++
		}
	}
}

// CountriesRecord flattens a country metadata response into one record of CountriesTable.
// Entries without an alpha2 code are skipped. The caller releases the record.
func CountriesRecord(mem memory.Allocator, cm *schema.CountryMetadata) arrow.Record {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	rb := array.NewRecordBuilder(mem, CountriesTable.Schema)
	defer rb.Release()
	f := rb.Fields()
	for _, c := range cm.Countries {
		if c.Alpha2 == "" {
			continue
		}
		appendString(f[0], c.Alpha2)
		appendString(f[1], c.Alpha3)
		appendString(f[2], c.Numeric)
		appendString(f[3], c.Name)
	}
	return rb.NewRecord()
}

func ranks(r *schema.Rankings) (schema.GlobalRank, schema.CountryRank, schema.CategoryRank) {
	var g schema.GlobalRank
	var c schema.CountryRank
	var k schema.CategoryRank
	if r == nil {
		return g, c, k
	}
	if r.Global != nil {
		g = *r.Global
	}
	if r.Country != nil {
		c = *r.Country
	}
	if r.Category != nil {
		k = *r.Category
	}
	return g, c, k
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func appendString(b array.Builder, v string) { b.(*array.StringBuilder).Append(v) }

func appendOptString(b array.Builder, v *string) {
	if v == nil {
		b.AppendNull()
		return
	}
	b.(*array.StringBuilder).Append(*v)
}

func appendOptInt64(b array.Builder, v *int64) {
	if v == nil {
		b.AppendNull()
		return
	}
	b.(*array.Int64Builder).Append(*v)
}

func appendOptFloat64(b array.Builder, v *float64) {
	if v == nil {
		b.AppendNull()
		return
	}
	b.(*array.Float64Builder).Append(*v)
}

func appendOptBool(b array.Builder, v *bool) {
	if v == nil {
		b.AppendNull()
		return
	}
	b.(*array.BooleanBuilder).Append(*v)
}
