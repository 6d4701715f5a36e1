//go:build !linux

package load

import "time"

// osYield does nothing here: the pacer spins without yielding its CPU
// (sched_yield is called only on Linux).
func osYield() {}

// sleepWindow is the least spin window of the pacer: Go's timers may
// wake a millisecond late and more.
const sleepWindow = 2 * time.Millisecond

// sleepFor sleeps for d on a Go timer.
func sleepFor(d time.Duration) { time.Sleep(d) }
