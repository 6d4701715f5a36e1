//go:build !race

package redisx_test

const raceEnabled = false
