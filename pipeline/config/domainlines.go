package config

import (
	"math"
	"strings"
)

// splitDomains takes a top-level `domains:` block written the usual way (one plain domain per
// `- ` line) out of text before it is parsed as YAML. The YAML parser builds a node per item:
// for a watchlist of a million domains that was ~340 MB of memory in every command, which
// set the peak of a `publish` or a `restore` (issue 34). Here the items are read line by
// line into substrings of the file's text (one copy, read by Load).
//
// rest is text with the block's items blanked (line numbers stay) and its key as
// `domains: []`; domains and lines are the items as the YAML parser reads them (a null item
// as ""). ok is false — and the caller parses text whole — unless text holds exactly one such
// block of items on single lines at one indentation, each a plain scalar with no YAML syntax in
// it, with nothing but blank lines and comments between them.
func splitDomains(text string) (rest []byte, domains []string, lines []int32, ok bool) {
	if strings.IndexByte(text, '\r') >= 0 || len(text) >= math.MaxInt32 {
		return nil, nil, nil, false // offsets and lines are kept in 32 bits
	}
	all := lineStarts(text)
	line := func(i int) string { return strings.TrimSuffix(text[all[i]:all[i+1]], "\n") }
	key := -1
	for i := range len(all) - 1 {
		if l := line(i); strings.HasPrefix(l, "domains") {
			if key >= 0 || !isDomainsKey(l) {
				return nil, nil, nil, false // a second key, or a flow list: the parser decides
			}
			key = i
		}
	}
	if key < 0 || !oneDocument(text, all, key) {
		return nil, nil, nil, false
	}
	domains, lines = make([]string, 0, len(all)-key), make([]int32, 0, len(all)-key)
	end, indent := key+1, -1
	for ; end < len(all)-1; end++ {
		l := line(end)
		body := strings.TrimLeft(l, " ")
		if body == "" || body[0] == '#' {
			continue
		}
		at := len(l) - len(body)
		if !strings.HasPrefix(body, "-") || (len(body) > 1 && body[1] != ' ') {
			if at == 0 {
				break // the next top-level key
			}
			return nil, nil, nil, false // nested or continued content
		}
		if indent < 0 {
			indent = at
		}
		value, simple := plainItem(body[1:])
		if at != indent || !simple {
			return nil, nil, nil, false
		}
		domains = append(domains, value)
		lines = append(lines, int32(end+1))
	}
	if len(domains) == 0 {
		return nil, nil, nil, false // `domains:` with no item: the parser's message says why
	}
	// The rest keeps every other line where it was: the block's lines become empty ones.
	rest = make([]byte, 0, int(all[key])+len("domains: []\n")+(end-key)+len(text)-int(all[end]))
	rest = append(rest, text[:all[key]]...)
	rest = append(rest, "domains: []\n"...)
	rest = append(rest, strings.Repeat("\n", end-key-1)...)
	rest = append(rest, text[all[end]:]...)
	return rest, domains, lines, true
}

// lineStarts returns the offset of each line of text (shorter than 2 GiB) and, last,
// len(text): line i is text[starts[i]:starts[i+1]].
func lineStarts(text string) []int32 {
	starts := make([]int32, 0, strings.Count(text, "\n")+2)
	for at := 0; at < len(text); {
		starts = append(starts, int32(at))
		next := strings.IndexByte(text[at:], '\n')
		if next < 0 {
			break
		}
		at += next + 1
	}
	return append(starts, int32(len(text)))
}

// isDomainsKey says whether line is `domains:` alone (a comment may follow).
func isDomainsKey(line string) bool {
	after := strings.TrimSpace(strings.TrimPrefix(line, "domains:"))
	return strings.HasPrefix(line, "domains:") && (after == "" || after[0] == '#')
}

// plainItem reads what follows an item's `-`: a plain scalar (and a comment), the value the
// YAML parser gives it. simple is false for anything the parser might read otherwise: quotes,
// flow, anchors, tags, block scalars, `: ` or ` #` inside, tabs.
func plainItem(s string) (value string, simple bool) {
	if c := strings.Index(s, " #"); c >= 0 {
		s = s[:c]
	}
	s = strings.Trim(s, " ")
	switch s {
	case "", "~", "null", "Null", "NULL":
		return "", true
	}
	if strings.ContainsAny(s[:1], "-?:,[]{}#&*!|>'\"%@`") || strings.ContainsAny(s, "\t") ||
		strings.Contains(s, ": ") || strings.HasSuffix(s, ":") {
		return "", false
	}
	return s, true
}

// oneDocument says whether the key at line key is in the first (or only) YAML document, the
// one the parser reads, and no document follows: at most a `---` before it, none after.
func oneDocument(text string, all []int32, key int) bool {
	starts := 0
	for i := range len(all) - 1 {
		switch l := text[all[i]:all[i+1]]; {
		case strings.HasPrefix(l, "..."):
			return false
		case strings.HasPrefix(l, "---"):
			if starts++; starts > 1 || i > key {
				return false
			}
		}
	}
	return true
}
