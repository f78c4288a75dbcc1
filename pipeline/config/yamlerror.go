package config

import (
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// yamlSyntax reports a file that is not YAML on the line where the problem starts. yaml names
// the line where its scanner gave up, which for an unclosed quote or bracket is the end of the
// file (an unclosed quote on line 1 of a 16-line file was reported on line 16). The first line
// at which the file's beginning stops parsing is where the problem is; it is found by bisection,
// so a 100,000-line watchlist costs about 17 parses.
func yamlSyntax(p *problems, text string, err error) {
	lines := strings.SplitAfter(text, "\n")
	fails := func(n int) bool {
		var node yaml.Node
		return yaml.Unmarshal([]byte(strings.Join(lines[:n], "")), &node) != nil
	}
	n := sort.Search(len(lines), func(i int) bool { return fails(i + 1) }) + 1
	if n > len(lines) { // only the whole file fails (the beginnings all parse): trust yaml's line
		p.add(yamlLine(err), "not valid YAML: %s", yamlMessage(err))
		return
	}
	var node yaml.Node
	msg := yamlMessage(yaml.Unmarshal([]byte(strings.Join(lines[:n], "")), &node))
	if strings.Contains(msg, "end of stream") || strings.Contains(msg, "did not find expected") {
		msg += " (a quote, bracket or brace opened on this line is not closed)"
	}
	p.add(n, "not valid YAML: %s", msg)
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): `)

// yamlMessage is yaml's error without its "yaml: line N:" prefix (the problem carries the line).
func yamlMessage(err error) string {
	return strings.TrimPrefix(yamlLineRE.ReplaceAllString(err.Error(), ""), "yaml: ")
}

// yamlLine is the line yaml's error names, or 0.
func yamlLine(err error) int {
	m := yamlLineRE.FindStringSubmatch(err.Error())
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1]) // the pattern holds digits only
	return n
}
