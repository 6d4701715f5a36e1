package strategytest

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// StartWorkers runs body on n goroutines, g = 0 … n-1, until stop is
// closed. A panic in one goes to onPanic instead of killing the test
// binary. The returned function closes stop and waits for every worker; if
// one has not returned 5 s later, a call hangs, and it fails the test with
// every goroutine's stack. It may be called more than once.
func StartWorkers(t *testing.T, n int, onPanic func(g int, r any), body func(g int, stop <-chan struct{})) (stopWorkers func()) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := 0; g < n; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					onPanic(g, r)
				}
			}()
			body(g, stop)
		}()
	}
	stopped := false
	return func() {
		if stopped {
			return
		}
		stopped = true
		close(stop)
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("workers still running 5 s after stop: a call hangs\n%s", buf)
		}
	}
}
