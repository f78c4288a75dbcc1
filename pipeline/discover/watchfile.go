package discover

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"sitewatch/pipeline/atomicfile"
)

// AddedComment starts the comment discover writes on each line it adds; `status` and the
// monthly budget count the lines carrying it.
const AddedComment = "# added by sitewatch discover"

// PrevSuffix names the copy of the previous domains.yaml kept beside it on every change.
const PrevSuffix = ".prev"

// ErrChanged is wrapped when domains.yaml changed between its read and the write; nothing is
// written.
var ErrChanged = errors.New("changed since it was read")

// ErrCannotAppend is wrapped when the watchlist's shape leaves no place to add a line (a flow
// list, an alias, no list at all); nothing is written.
var ErrCannotAppend = errors.New("cannot add to the watchlist")

// Watchfile is domains.yaml as read, byte for byte.
type Watchfile struct {
	Path string // the file written (symlinks resolved)
	Data []byte
	mode os.FileMode
}

// ReadWatchfile reads the config file at path. It returns the file system's error.
func ReadWatchfile(path string) (*Watchfile, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	info, err := os.Stat(real)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(real)
	if err != nil {
		return nil, err
	}
	return &Watchfile{Path: real, Data: data, mode: info.Mode().Perm()}, nil
}

// Addition is one line discover inserts.
type Addition struct {
	Domain string
	Line   int    // its 1-based line in the new file
	Text   string // the whole line without its line end
}

// Append returns the file with one line per domain inserted after the last item of the
// top-level domains list, in the list's own indentation and line ends, each line ending in
// "# added by sitewatch discover YYYY-MM-DD from YYYY-MM" (the day, and the month whose
// candidates they are; from is left out when ""). Every byte of the original is kept, in order:
// the new file minus the added lines is the old file. It returns an error wrapping
// ErrCannotAppend when the list is not a block list it can extend.
func (w *Watchfile) Append(domains []string, day time.Time, from string) ([]byte, []Addition, error) {
	if len(domains) == 0 {
		return slices.Clone(w.Data), nil, nil
	}
	seq, err := domainsList(w.Data)
	if err != nil {
		return nil, nil, err
	}
	lines := splitLines(w.Data)
	last := lastContentLine(lines, seq)
	indent, eol := itemIndent(lines, seq), lineEnd(lines, last)
	at := lineStart(lines, last+1) // byte offset where the new lines go
	var ins bytes.Buffer
	adds := make([]Addition, len(domains))
	for i, d := range domains {
		text := fmt.Sprintf("%s%s  %s %s", indent, d, AddedComment, day.UTC().Format(time.DateOnly))
		if from != "" {
			text += " from " + from
		}
		adds[i] = Addition{Domain: d, Line: last + 2 + i, Text: text}
		ins.WriteString(text + eol)
	}
	prefix := w.Data[:at]
	if at > 0 && !bytes.HasSuffix(prefix, []byte("\n")) { // the last item ends the file without a line end
		prefix = append(slices.Clone(prefix), eol...)
	}
	out := slices.Concat(prefix, ins.Bytes(), w.Data[at:])
	if err := checkAppended(out, w.Data, domains); err != nil {
		return nil, nil, err
	}
	return out, adds, nil
}

// domainsList finds the top-level domains block list in the node tree.
func domainsList(data []byte) (*yaml.Node, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("%w: the file is not valid YAML: %v", ErrCannotAppend, err)
	}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%w: the file is not a mapping of keys", ErrCannotAppend)
	}
	m := root.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value != "domains" {
			continue
		}
		v := m.Content[i+1]
		switch {
		case v.Kind == yaml.AliasNode:
			return nil, fmt.Errorf("%w: domains: is an alias (*%s); add the domains where the list is written", ErrCannotAppend, v.Value)
		case v.Kind != yaml.SequenceNode || len(v.Content) == 0:
			return nil, fmt.Errorf("%w: domains: holds no list of domains; write one domain per line (\"  - example.com\")", ErrCannotAppend)
		case v.Style&yaml.FlowStyle != 0:
			return nil, fmt.Errorf("%w: domains: is written as a [flow, list]; write it one domain per line (\"  - example.com\") so lines can be added", ErrCannotAppend)
		}
		return v, nil
	}
	return nil, fmt.Errorf("%w: no domains: list in the file", ErrCannotAppend)
}

// splitLines cuts data into lines, each keeping its line end.
func splitLines(data []byte) [][]byte {
	return bytes.SplitAfter(data, []byte("\n"))
}

// lastContentLine is the 0-based line holding the end of the list's last item: the last line
// before the next key of the file (or its end) that is neither blank nor only a comment, so
// the comments and blank lines that follow the list stay after the added lines.
func lastContentLine(lines [][]byte, seq *yaml.Node) int {
	lastItem := seq.Content[len(seq.Content)-1].Line - 1
	end := len(lines) // exclusive: the first line of the next top-level key, found by indentation
	for i := lastItem + 1; i < len(lines); i++ {
		t := bytes.TrimRight(lines[i], "\r\n")
		if len(t) > 0 && t[0] != ' ' && t[0] != '#' && t[0] != '-' {
			end = i
			break
		}
	}
	for i := end - 1; i > lastItem; i-- {
		t := bytes.TrimSpace(lines[i])
		if len(t) > 0 && t[0] != '#' {
			return i
		}
	}
	return lastItem
}

// itemIndent is what precedes an item's value on the last item's line: "  - " or "- ".
func itemIndent(lines [][]byte, seq *yaml.Node) string {
	item := seq.Content[len(seq.Content)-1]
	line := string(bytes.TrimRight(lines[item.Line-1], "\r\n"))
	if dash := strings.Index(line, "-"); dash >= 0 && strings.TrimSpace(line[:dash]) == "" {
		rest := line[dash+1:]
		return line[:dash+1] + rest[:len(rest)-len(strings.TrimLeft(rest, " "))]
	}
	return strings.Repeat(" ", max(item.Column-3, 0)) + "- "
}

// lineEnd is the line end the file uses at line i ("\r\n" or "\n"), from the first line that
// has one when line i is the last.
func lineEnd(lines [][]byte, i int) string {
	for _, l := range append([][]byte{lines[i]}, lines...) {
		if bytes.HasSuffix(l, []byte("\r\n")) {
			return "\r\n"
		}
		if bytes.HasSuffix(l, []byte("\n")) {
			return "\n"
		}
	}
	return "\n"
}

// lineStart is the byte offset of 0-based line i (len(data) past the end).
func lineStart(lines [][]byte, i int) int {
	n := 0
	for _, l := range lines[:min(i, len(lines))] {
		n += len(l)
	}
	return n
}

// checkAppended parses the new file and checks that its list is the old list followed by
// domains: an edit that YAML would read otherwise (a block scalar, an odd indentation) is
// refused instead of written.
func checkAppended(out, old []byte, domains []string) error {
	before, err := listValues(old)
	if err != nil {
		return err
	}
	after, err := listValues(out)
	if err != nil {
		return fmt.Errorf("%w: the edited file would not parse (%v); add the domains by hand", ErrCannotAppend, err)
	}
	if !slices.Equal(after, slices.Concat(before, domains)) {
		return fmt.Errorf("%w: the edited list would read %d entries instead of the %d listed plus %d; add the domains by hand",
			ErrCannotAppend, len(after), len(before), len(domains))
	}
	return nil
}

func listValues(data []byte) ([]string, error) {
	seq, err := domainsList(data)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(seq.Content))
	for i, n := range seq.Content {
		for n.Kind == yaml.AliasNode {
			n = n.Alias
		}
		out[i] = n.Value
	}
	return out, nil
}

// Replace writes data over the file if it still holds what was read, keeping the previous
// content beside it (Path + PrevSuffix). It refuses, writing nothing, with an error wrapping
// ErrChanged when the file changed since it was read, or the file system's error when the
// file or its directory is not writable. Messages do not repeat Path; callers name it.
func (w *Watchfile) Replace(data []byte) error {
	now, err := os.ReadFile(w.Path)
	if err != nil {
		return fmt.Errorf("re-read before writing: %w; nothing written", err)
	}
	if !bytes.Equal(now, w.Data) {
		return fmt.Errorf("%w (edited meanwhile?); nothing written: run the command again", ErrChanged)
	}
	f, err := os.OpenFile(w.Path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("not writable (%w); nothing written", err)
	}
	_ = f.Close() // opened only to learn whether it may be written
	if err := atomicfile.WriteFile(w.Path+PrevSuffix, w.Data, w.mode); err != nil {
		return fmt.Errorf("keep the previous file as %s: %w; nothing written", w.Path+PrevSuffix, err)
	}
	if err := atomicfile.WriteFile(w.Path, data, w.mode); err != nil {
		return fmt.Errorf("write: %w; the file is unchanged", err)
	}
	return nil
}
