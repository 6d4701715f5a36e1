package load

import (
	"syscall"
	"time"
)

// osYield gives the CPU to another thread ready to run on it, if any
// (sched_yield): the pacer's spin must not keep a woken server or
// client thread waiting for the end of its time slice.
func osYield() { _, _, _ = syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }

// sleepWindow is the least spin window of the pacer: nanosleep wakes
// within the thread's timer slack (50 µs by default) and a wake-up.
const sleepWindow = 200 * time.Microsecond

// sleepFor sleeps for d in a nanosleep system call: a high-resolution
// kernel timer, where Go's timers wake on the netpoller's millisecond
// grid. The goroutine's thread blocks; the runtime hands its P to
// another thread if work waits.
func sleepFor(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}
