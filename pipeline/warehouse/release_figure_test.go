package warehouse

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
)

// The README's figures table stores the rebuild ratio of the last release in the row of
// BenchmarkRebuild, written as
//
//	`ratio_vs_current_duckdb` of the last release (<commit>): **<ratio>**
//
// and BenchmarkRebuild prints today's ratio beside it, so a slower rebuild shows in the round
// that makes it (issue 29).
var releaseFigure = regexp.MustCompile("`ratio_vs_current_duckdb` of the last release \\(([0-9a-f]{7,40})\\): \\*\\*([0-9]+(?:\\.[0-9]+)?)\\*\\*")

// slowerBy is how much worse than the release figure a ratio may be before it is called slower.
const slowerBy = 0.10

// readReleaseRatio finds the README.md of the module holding dir and returns the stored
// release ratio and the commit it was measured on.
func readReleaseRatio(dir string) (ratio float64, commit string, err error) {
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return 0, "", errors.New("no go.mod above the package: cannot find README.md")
		}
		dir = parent
	}
	readme := filepath.Join(dir, "README.md")
	text, err := os.ReadFile(readme)
	if err != nil {
		return 0, "", err
	}
	m := releaseFigure.FindSubmatch(text)
	if m == nil {
		return 0, "", fmt.Errorf("%s has no release figure of the rebuild (the BenchmarkRebuild row should say \"`ratio_vs_current_duckdb` of the last release (<commit>): **<ratio>**\")", readme)
	}
	ratio, err = strconv.ParseFloat(string(m[2]), 64)
	return ratio, string(m[1]), err
}

// compareToRelease says how today's ratio stands against the release's: the change in
// percent and "slower" when it is more than slowerBy worse (a higher ratio is slower).
func compareToRelease(today, release float64, commit string) (line string, slower bool) {
	change := today/release - 1
	verdict := "within 10%"
	switch {
	case change > slowerBy:
		verdict, slower = "slower", true
	case change < -slowerBy:
		verdict = "faster"
	}
	return fmt.Sprintf("rebuild ratio_vs_current_duckdb %.2f, last release (%s) %.2f: %+.0f%%, %s", today, commit, release, 100*change, verdict), slower
}
