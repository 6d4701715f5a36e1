//go:build race

package strategy

// raceOn: allocation counts are distorted by the race detector.
const raceOn = true
