//go:build !race

package report

// raceDetector is false in a normal build (see race_on_test.go).
const raceDetector = false
