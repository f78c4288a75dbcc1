//go:build !race

package fencesim

const raceSeeds = defaultSeeds
