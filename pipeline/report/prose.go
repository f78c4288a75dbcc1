package report

import (
	"html/template"
	"regexp"
	"strings"
)

// Prose from other packages and the warehouse (needs-attention reasons and rules, notes) is
// written for a terminal too: `command` in backticks, "35.0 %" with a space. prose makes it
// HTML: escaped, each backticked span a <code>, and a figure's unit joined to it by a no-break
// space, so no "%" wraps onto a line of its own on a phone.
var (
	codeSpan  = regexp.MustCompile("`([^`]+)`")
	unitSpace = regexp.MustCompile(`(\d) (%|pts\b|visits\b|k\b|M\b|B\b|×)`)
	signSpace = regexp.MustCompile(`(±|−|\+) (\d)`)
)

func prose(text string) template.HTML {
	s := template.HTMLEscapeString(text)
	s = unitSpace.ReplaceAllString(s, "$1\u00a0$2")
	s = signSpace.ReplaceAllString(s, "$1$2")
	s = codeSpan.ReplaceAllString(s, "<code>$1</code>")
	return template.HTML(strings.ReplaceAll(s, "`", "")) // #nosec G203 -- escaped above; only <code> added
}
