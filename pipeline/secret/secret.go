// Package secret removes configured secrets (API keys, the webhook URL's token, the S3 secret,
// the catalog password) from text that leaves the process: log lines and error messages that
// quote what an untrusted peer (the API, the webhook, the S3 service) answered. Each secret is
// recognized in every encoding a peer could reflect it in: plain, percent-encoded (path and
// query escaping, either hex case), JSON- and HTML-escaped, and base64 (four alphabets).
// It also keeps the API key from leaving in clear: CheckBaseURL (read by the config and by the
// client) and RedactURL, a URL without the parts a secret would sit in.
package secret

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"html"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Redacted replaces every form of a secret.
const Redacted = "[REDACTED]"

// minLen is the shortest value taken as a secret: a shorter one ("T0", "v1") is too likely to
// be an ordinary word of a message, and too short to be a credential.
const minLen = 6

// Set knows every form of a list of secrets. A nil *Set redacts nothing.
type Set struct {
	forms    [][]byte // longest first, so a form inside a longer one never splits it
	replacer *strings.Replacer
}

var percentHex = regexp.MustCompile(`%[0-9A-F]{2}`)

// New returns the Set of values (empty and too short values are ignored).
func New(values ...string) *Set {
	var forms []string
	add := func(s string) {
		if len(s) >= minLen && !slices.Contains(forms, s) {
			forms = append(forms, s)
		}
	}
	for _, v := range values {
		if len(v) < minLen {
			continue
		}
		for _, f := range encodings(v) {
			add(f)
		}
	}
	if len(forms) == 0 {
		return nil
	}
	slices.SortStableFunc(forms, func(a, b string) int { return len(b) - len(a) })
	s := &Set{}
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		s.forms = append(s.forms, []byte(f))
		pairs = append(pairs, f, Redacted)
	}
	s.replacer = strings.NewReplacer(pairs...)
	return s
}

// encodings lists the forms of v a peer could reflect.
func encodings(v string) []string {
	out := []string{v, html.EscapeString(v)}
	for _, esc := range []string{url.QueryEscape(v), url.PathEscape(v)} {
		out = append(out, esc, percentHex.ReplaceAllStringFunc(esc, strings.ToLower))
	}
	if j, err := json.Marshal(v); err == nil {
		out = append(out, string(j[1:len(j)-1]))
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		out = append(out, enc.EncodeToString([]byte(v)))
	}
	return out
}

// Redact returns text with every form of every secret replaced by [REDACTED].
func (s *Set) Redact(text string) string {
	if s == nil {
		return text
	}
	return s.replacer.Replace(text)
}

// In reports whether b holds any form of any secret.
func (s *Set) In(b []byte) bool {
	if s == nil {
		return false
	}
	for _, f := range s.forms {
		if bytes.Contains(b, f) {
			return true
		}
	}
	return false
}

// Join returns a Set of the secrets of both (nil when both are).
func Join(values ...[]string) *Set {
	return New(slices.Concat(values...)...)
}

// URLParts returns the secret parts of a URL that carries a token, such as a webhook URL:
// the whole URL, its path, every path segment that looks like a token (digits or 16+
// characters), userinfo and every query value. Services put their tokens in any of them.
func URLParts(raw string) []string {
	if raw == "" {
		return nil
	}
	out := []string{raw}
	u, err := url.Parse(raw)
	if err != nil {
		return out
	}
	if u.User != nil {
		out = append(out, u.User.String())
		if p, ok := u.User.Password(); ok {
			out = append(out, p)
		}
	}
	if u.Path != "" && u.Path != "/" {
		out = append(out, u.Path, strings.TrimPrefix(u.Path, "/"), u.EscapedPath())
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if tokenLike(seg) {
			out = append(out, seg)
		}
	}
	if u.RawQuery != "" {
		out = append(out, u.RawQuery)
	}
	for _, vs := range u.Query() {
		out = append(out, vs...)
	}
	return out
}

// tokenLike says whether a path segment could be a credential rather than a word such as
// "services" or "webhooks".
func tokenLike(seg string) bool {
	return len(seg) >= 16 || strings.ContainsAny(seg, "0123456789")
}
