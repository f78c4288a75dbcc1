package pipeline

import "sitewatch/pipeline/model"

// SourceSpend is what one credit source paid in a run and what it has left.
type SourceSpend = model.SourceSpend

// spendBySource reads each source's spend from the run's fetcher (nil when the fetcher does
// not count its sources).
func spendBySource(f Fetcher) []SourceSpend {
	if m, ok := f.(SourceCounter); ok {
		return m.Spend()
	}
	return nil
}

// creditsBySource is runs.credits_by_source for the run's spend ("" before the run knows it).
func (s *Summary) creditsBySource() string {
	spend := make([]model.SourceCredits, len(s.Sources))
	for i, src := range s.Sources {
		spend[i] = model.SourceCredits{Name: src.Name, Credits: src.Credits}
	}
	return model.CreditsBySourceJSON(spend)
}
