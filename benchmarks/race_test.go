//go:build race

package benchmarks_test

// raceEnabled: the race detector slows the client several times over,
// so the SLO test's re-runs at a rate found near a limit mean nothing
// under it; `make test` runs that test again without it.
const raceEnabled = true
