package benchmarks

import (
	"fmt"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// keepOffCPU moves every thread of this process off CPU cpu, onto the
// others it may run on, and lowers GOMAXPROCS to their number. Threads
// the runtime starts later are cloned from these and inherit the mask; a
// thread started while the walk runs is caught by the next walk, which
// repeats until one finds every thread already moved.
func keepOffCPU(cpu int) (allowed int, err error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return 0, fmt.Errorf("sched_getaffinity: %w", err)
	}
	set.Clear(cpu)
	if set.Count() == 0 {
		return 0, fmt.Errorf("no CPU but %d to run on", cpu)
	}
	for range 5 {
		moved, err := setThreads(&set)
		if err != nil {
			return 0, err
		}
		if moved == 0 {
			if runtime.GOMAXPROCS(0) > set.Count() {
				runtime.GOMAXPROCS(set.Count())
			}
			return set.Count(), nil
		}
	}
	return 0, fmt.Errorf("threads kept starting while they were moved off CPU %d", cpu)
}

// setThreads gives every thread of the process the CPU mask set and
// counts those whose mask changed.
func setThreads(set *unix.CPUSet) (moved int, err error) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0, err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		var cur unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &cur); err != nil {
			continue // the thread has exited
		}
		if cur == *set {
			continue
		}
		if err := unix.SchedSetaffinity(tid, set); err != nil {
			return moved, fmt.Errorf("sched_setaffinity of thread %d: %w", tid, err)
		}
		moved++
	}
	return moved, nil
}
