package testenv

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// recorder stands in for a test: it records how Missing ended it instead of ending the caller.
type recorder struct {
	testing.TB
	how, msg string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.how, r.msg = "fail", fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Skipf(format string, args ...any) {
	r.how, r.msg = "skip", fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func endOf(f func(t testing.TB)) *recorder {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r
}

func TestMissing(t *testing.T) {
	for _, tc := range []struct{ ci, want string }{
		{"", "skip"}, {"false", "skip"}, {"0", "skip"},
		{"true", "fail"}, {"1", "fail"}, {"yes", "fail"},
	} {
		t.Run("CI="+tc.ci, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			r := endOf(func(tb testing.TB) { Missing(tb, "flock(1) is not installed") })
			if r.how != tc.want || !strings.HasPrefix(r.msg, "flock(1) is not installed") {
				t.Fatalf("Missing under CI=%q: %s %q, want %s naming what is missing", tc.ci, r.how, r.msg, tc.want)
			}
		})
	}
}
