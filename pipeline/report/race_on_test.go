//go:build race

package report

// raceDetector is true in a -race build: its instrumentation slows the Go side of a report
// (row scanning, templates) about 3.5× (5,000 domains: 2.8 s → 9.6 s), so a write-time budget
// measured there measures the detector, not the product.
const raceDetector = true
