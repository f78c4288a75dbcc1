// Package testenv decides what a test does when something it needs from the machine is
// missing (a program, a package's files, a platform's semantics): elsewhere it skips, under CI
// it fails. A CI run (.ci/run sets CI=true, as CI services do) installs every prerequisite, so a
// skip there would only hide a test that never ran.
//
// Skips that are the caller's choice stay skips everywhere: -short, a child-process role
// (a test that only acts when its parent sets an environment variable), an opt-in (SITEWATCH_*),
// or a measurement kept out of the race detector's pass.
package testenv

import (
	"os"
	"strconv"
	"testing"
)

// InCI reports whether the tests run under CI: CI set to a true value (true, 1, …) or to any
// value that is not a boolean; unset, empty or false means a developer's machine.
func InCI() bool {
	v := os.Getenv("CI")
	if v == "" {
		return false
	}
	b, err := strconv.ParseBool(v)
	return err != nil || b
}

// Missing ends t because a prerequisite is missing: a skip on a developer's machine, a failure
// under CI. The message should name what is missing and how to install it.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if InCI() {
		t.Fatalf(format+" (CI=true: a missing prerequisite fails the test; .ci/run installs it)", args...)
	}
	t.Skipf(format, args...)
}
