//go:build race

package fencesim

// raceSeeds: under the race detector a schedule costs ten times the CPU, so the default is
// a tenth (make test plays the full default again without it).
const raceSeeds = defaultSeeds / 10
