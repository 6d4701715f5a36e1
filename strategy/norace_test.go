//go:build !race

package strategy_test

const raceEnabled = false
