package secret

import (
	"context"
	"fmt"
	"log/slog"
)

// Logger returns a logger that writes through l with every form of every secret of s removed
// from the message and from every string, error and Stringer attribute. A nil s returns l.
func Logger(l *slog.Logger, s *Set) *slog.Logger {
	if s == nil || l == nil {
		return l
	}
	return RedactingLogger(l, s.Redact)
}

// RedactingLogger returns a logger that writes through l with redact applied to the message
// and to every string, error and Stringer attribute: for callers with a redaction of their own
// (the API client's keys).
func RedactingLogger(l *slog.Logger, redact func(string) string) *slog.Logger {
	return slog.New(handler{next: l.Handler(), redact: redact})
}

type handler struct {
	next   slog.Handler
	redact func(string) string
}

func (h handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.redact(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = h.attr(a)
	}
	return handler{next: h.next.WithAttrs(clean), redact: h.redact}
}

func (h handler) WithGroup(name string) slog.Handler {
	return handler{next: h.next.WithGroup(name), redact: h.redact}
}

func (h handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.redact(v.String()))
	case slog.KindGroup:
		g := v.Group()
		clean := make([]any, len(g))
		for i, x := range g {
			clean[i] = h.attr(x)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, h.redact(x.Error()))
		case fmt.Stringer:
			return slog.String(a.Key, h.redact(x.String()))
		default:
			return slog.String(a.Key, h.redact(fmt.Sprint(x)))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// Error is err with its message redacted; errors.Is and errors.As still see err.
type Error struct {
	msg string
	err error
}

// Wrap returns err with s's secrets removed from its message (err itself when s is nil or
// the message holds none).
func Wrap(err error, s *Set) error {
	if err == nil || s == nil {
		return err
	}
	msg := s.Redact(err.Error())
	if msg == err.Error() {
		return err
	}
	return &Error{msg: msg, err: err}
}

func (e *Error) Error() string { return e.msg }
func (e *Error) Unwrap() error { return e.err }
