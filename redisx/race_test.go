//go:build race

package redisx_test

// raceEnabled: the race detector drops sync.Pool items on purpose, so
// allocation counts are only meaningful without it.
const raceEnabled = true
