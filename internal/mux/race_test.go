//go:build race

package mux

// raceOn: allocation counts are distorted by the race detector.
const raceOn = true
