package pipeline

import (
	"context"
	"regexp"
	"slices"
	"testing"

	"sitewatch/pipeline/dictionary"
)

// TestRunStatusesDocumented: the comment on runs.status (what `sitewatch schema` and
// docs/data-dictionary.md print) names every status a run records, and only those.
func TestRunStatusesDocumented(t *testing.T) {
	d, err := dictionary.Default(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	runs, ok := d.Object("runs")
	if !ok {
		t.Fatal("the dictionary has no runs table")
	}
	var comment string
	for _, c := range runs.Columns {
		if c.Name == "status" {
			comment = c.Comment
		}
	}
	var documented []string
	for _, m := range regexp.MustCompile(`([a-z_]+) \(`).FindAllStringSubmatch(comment, -1) {
		documented = append(documented, m[1])
	}
	want := []string{StatusRunning, StatusComplete, StatusUpToDate, StatusStoppedCredits, StatusFailed,
		StatusUnauthorized, StatusInterrupted, StatusMonthMismatch, StatusMonthTurned, StatusAbandoned}
	slices.Sort(documented)
	slices.Sort(want)
	if !slices.Equal(documented, want) {
		t.Errorf("runs.status documents %v, runs record %v", documented, want)
	}
}
