package secret

import (
	"bytes"
	"encoding/base64"
	"errors"
	"html"
	"log/slog"
	"net/url"
	"strings"
	"testing"
)

// TestRedactEveryEncoding: each secret part of a webhook URL, and a key, is removed in every
// form a peer could echo it in.
func TestRedactEveryEncoding(t *testing.T) {
	hook := "https://hooks.example/services/T000/B000/Xy9hookTOKEN42?token=q-secret-77&x=1"
	s := Join(URLParts(hook), []string{"api-key-5f2b/+="})
	for _, secret := range []string{"/services/T000/B000/Xy9hookTOKEN42", "Xy9hookTOKEN42", "q-secret-77", "api-key-5f2b/+="} {
		for name, form := range map[string]string{
			"plain":  secret,
			"query":  url.QueryEscape(secret),
			"path":   url.PathEscape(secret),
			"lower":  percentHex.ReplaceAllStringFunc(url.QueryEscape(secret), strings.ToLower),
			"html":   html.EscapeString(secret),
			"base64": base64.StdEncoding.EncodeToString([]byte(secret)),
			"rawurl": base64.RawURLEncoding.EncodeToString([]byte(secret)),
		} {
			text := `404: no route for "` + form + `" here`
			got := s.Redact(text)
			if strings.Contains(got, form) && form != Redacted {
				t.Errorf("%s %s: %q still holds it", secret, name, got)
			}
			if !strings.Contains(got, Redacted) {
				t.Errorf("%s %s: %q marks no redaction", secret, name, got)
			}
		}
	}
	if got := s.Redact("the services answered 500"); got != "the services answered 500" {
		t.Errorf("an ordinary word was redacted: %q", got)
	}
}

// TestLoggerAndError: the logger removes secrets from messages and attributes; a wrapped
// error keeps its chain.
func TestLoggerAndError(t *testing.T) {
	s := New("hook-secret-93af")
	var buf bytes.Buffer
	l := Logger(slog.New(slog.NewTextHandler(&buf, nil)), s)
	base := errors.New("answered 500 (\"/services/hook-secret-93af\")")
	l.Warn("webhook hook-secret-93af failed", "err", base, "body", "aG9vay1zZWNyZXQtOTNhZg==", slog.Group("g", "x", "hook-secret-93af"))
	if strings.Contains(buf.String(), "hook-secret-93af") || strings.Contains(buf.String(), "aG9vay1zZWNyZXQtOTNhZg") {
		t.Errorf("log holds the secret: %s", buf.String())
	}
	w := Wrap(base, s)
	if strings.Contains(w.Error(), "hook-secret-93af") || !errors.Is(w, base) {
		t.Errorf("Wrap = %q (chain kept: %v)", w, errors.Is(w, base))
	}
	var nilSet *Set
	if nilSet.Redact("x") != "x" || Wrap(base, nil) != base {
		t.Error("a nil Set changes text")
	}
}
