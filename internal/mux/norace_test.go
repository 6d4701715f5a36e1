//go:build !race

package mux

const raceOn = false
