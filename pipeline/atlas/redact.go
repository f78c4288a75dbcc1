package atlas

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// redacted replaces every form of a secret in text that leaves the client.
const redacted = "[REDACTED]"

// secrets knows every encoding of every key a server could reflect: plain, percent-encoded
// (query and path escaping, upper- and lower-case hex), JSON-escaped, and base64 (standard
// and URL alphabets, padded or not) of the key and of the Authorization value "Bearer <key>".
type secrets struct {
	forms    [][]byte // longest first, so a longer form is replaced before a form inside it
	replacer *strings.Replacer
}

var percentHex = regexp.MustCompile(`%[0-9A-F]{2}`)

func newSecrets(keys ...string) *secrets {
	var forms []string
	add := func(s string) {
		if s != "" && !slices.Contains(forms, s) {
			forms = append(forms, s)
		}
	}
	for _, k := range keys {
		if k == "" {
			continue
		}
		for _, v := range []string{k, "Bearer " + k} {
			add(v)
			for _, esc := range []string{url.QueryEscape(v), url.PathEscape(v)} {
				add(esc)
				add(percentHex.ReplaceAllStringFunc(esc, strings.ToLower))
			}
			if j, err := json.Marshal(v); err == nil {
				add(string(j[1 : len(j)-1]))
			}
			for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
				add(enc.EncodeToString([]byte(v)))
			}
		}
	}
	slices.SortStableFunc(forms, func(a, b string) int { return len(b) - len(a) })
	s := &secrets{}
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		s.forms = append(s.forms, []byte(f))
		pairs = append(pairs, f, redacted)
	}
	s.replacer = strings.NewReplacer(pairs...)
	return s
}

// redact returns text with every form of every key replaced by [REDACTED].
func (s *secrets) redact(text string) string { return s.replacer.Replace(text) }

// in reports whether b holds any form of any key.
func (s *secrets) in(b []byte) bool {
	for _, f := range s.forms {
		if bytes.Contains(b, f) {
			return true
		}
	}
	return false
}

// checkKey refuses a key with surrounding whitespace or control characters, saying where
// without printing the key.
func checkKey(setting, key string) error {
	if key == "" {
		return nil
	}
	var where string
	switch {
	case strings.HasSuffix(key, "\r\n") || strings.HasSuffix(key, "\r"):
		where = "it ends with a carriage return (\\r): was it read from a file with Windows line endings?"
	case strings.TrimSpace(key) != key:
		where = "it starts or ends with whitespace"
	default:
		if i := strings.IndexFunc(key, unicode.IsControl); i >= 0 {
			where = fmt.Sprintf("it holds a control character at byte %d", i+1)
		}
	}
	if where == "" {
		return nil
	}
	return &ConfigError{Setting: setting, Err: fmt.Errorf("%w (%s); nothing was sent", ErrBadKey, where)}
}
