package discover

import (
	"bufio"
	"bytes"
	"strings"

	"sitewatch/schema"
)

// CreditsPerDomain is what one watched domain costs a month: one credit per endpoint a
// snapshot fetches for it (overview and similar sites).
var CreditsPerDomain = int64(len(schema.DomainEndpoints))

// Affordable is how many of n domains a monthly budget of credits allows (2 credits each);
// a negative budget means no budget: all n.
func Affordable(n int, budget int64) int {
	if budget < 0 {
		return n
	}
	return int(min(int64(n), budget/CreditsPerDomain))
}

// YearlyCost is what n added domains cost in a year of monthly snapshots (credits).
func YearlyCost(n int) int64 { return int64(n) * CreditsPerDomain * 12 }

// Added is a watchlist line discover added, found by its comment.
type Added struct {
	Domain string
	Date   string // YYYY-MM-DD of the addition
	From   string // the month whose candidates it came from (YYYY-MM), "" when not written
	Line   int    // 1-based line in the file
}

// AddedLines lists the lines of a domains.yaml that carry AddedComment (by `discover --add` or
// `schedule`), in file order. A line whose comment the user removed no longer counts.
func AddedLines(data []byte) []Added {
	var out []Added
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), len(data)+1)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		i := strings.Index(line, AddedComment)
		if i < 0 {
			continue
		}
		item := strings.TrimSpace(line[:i])
		if !strings.HasPrefix(item, "-") {
			continue // a comment of its own, not a list item
		}
		a := Added{Domain: strings.Trim(strings.TrimSpace(item[1:]), `"'`), Line: n}
		fields := strings.Fields(line[i+len(AddedComment):])
		if len(fields) > 0 {
			a.Date = fields[0]
		}
		if len(fields) > 2 && fields[1] == "from" {
			a.From = fields[2]
		}
		out = append(out, a)
	}
	return out
}
