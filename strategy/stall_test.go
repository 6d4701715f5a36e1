package strategy_test

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// stallProbe measures the time the test process, or one of its threads,
// spent waiting for a CPU: on a loaded machine, or in a pause of the
// runtime. A caller whose context ends in such a wait cannot return
// before it is over, whatever the client does; a bound on a call's
// wall-clock time allows for it with waited.
//
// It measures two ways, on two goroutines. A sleeper does nothing but
// sleep 1 ms at a time and record how late it wakes: the whole process
// kept waiting, or the runtime stopping the world (which waits for every
// thread, one kept off a CPU included). And on Linux a sampler reads every
// 10 ms each thread's time spent runnable but not running
// (/proc/self/task/*/schedstat): one thread of the process can be kept
// off a CPU while its others, and the sleeper, run on.
type stallProbe struct {
	mu      sync.Mutex
	stalls  []stall
	samples []threadSample
	stop    chan struct{}
	wg      sync.WaitGroup
}

// stall is one wake-up of the sleeper that came late: late is the part of
// its sleep, ending at to, in which it could have run and did not.
type stall struct {
	to   time.Time
	late time.Duration
}

// threadSample is each thread's total wait for a CPU (run_delay, ns), by
// thread ID, at a time.
type threadSample struct {
	at      time.Time
	waiting map[string]int64
}

const (
	// stallThreshold is the lateness recorded as a stall: shorter ones
	// are a timer's ordinary slack.
	stallThreshold = 2 * time.Millisecond
	// samplePeriod is how often the threads' waits are read.
	samplePeriod = 10 * time.Millisecond
)

// startStallProbe starts a probe that runs until stopProbe or the end of
// t.
func startStallProbe(t *testing.T) *stallProbe {
	p := &stallProbe{stop: make(chan struct{})}
	p.wg.Add(2)
	go p.sleep()
	go p.sampleThreads()
	t.Cleanup(p.stopProbe)
	return p
}

// sleep is the sleeper: it does nothing else, so that it measures every
// moment.
func (p *stallProbe) sleep() {
	defer p.wg.Done()
	const nap = time.Millisecond
	for {
		select {
		case <-p.stop:
			return
		default:
		}
		from := time.Now()
		time.Sleep(nap)
		to := time.Now()
		if late := to.Sub(from) - nap; late > stallThreshold {
			p.mu.Lock()
			p.stalls = append(p.stalls, stall{to: to, late: late})
			p.mu.Unlock()
		}
	}
}

// sampleThreads reads the threads' waits every samplePeriod, and once
// more when the probe stops, after every call the test judges.
func (p *stallProbe) sampleThreads() {
	defer p.wg.Done()
	t := time.NewTicker(samplePeriod)
	defer t.Stop()
	for {
		p.sample(time.Now())
		select {
		case <-p.stop:
			p.sample(time.Now())
			return
		case <-t.C:
		}
	}
}

// sample records each thread's wait for a CPU; nothing where /proc does
// not tell it.
func (p *stallProbe) sample(at time.Time) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return
	}
	waiting := make(map[string]int64, len(tasks))
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/schedstat")
		if err != nil {
			continue // the thread ended
		}
		// "<on-CPU ns> <runnable, waiting ns> <timeslices>"
		if f := strings.Fields(string(b)); len(f) >= 2 {
			if ns, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				waiting[task.Name()] = ns
			}
		}
	}
	p.mu.Lock()
	p.samples = append(p.samples, threadSample{at: at, waiting: waiting})
	p.mu.Unlock()
}

// stopProbe stops the probe and waits for its goroutines; once or more.
func (p *stallProbe) stopProbe() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	p.wg.Wait()
}

// waited returns how long, at most, a goroutine of the process was kept
// from running within [from, to]: the sleeper's late wake-ups in it, or
// the longest wait of one thread between the samples around it,
// whichever is longer.
func (p *stallProbe) waited(from, to time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	var slept time.Duration
	for _, s := range p.stalls {
		a, b := s.to.Add(-s.late), s.to
		if a.Before(from) {
			a = from
		}
		if b.After(to) {
			b = to
		}
		if b.After(a) {
			slept += b.Sub(a)
		}
	}
	var before, after *threadSample
	for i := range p.samples {
		s := &p.samples[i]
		if !s.at.After(from) {
			before = s
		}
		if !s.at.Before(to) && after == nil {
			after = s
		}
	}
	if before == nil && len(p.samples) > 0 {
		before = &p.samples[0] // from came before the first sample
	}
	var thread time.Duration
	if before != nil && after != nil {
		for id, ns := range after.waiting {
			if was, ok := before.waiting[id]; ok {
				thread = max(thread, time.Duration(ns-was))
			}
		}
	}
	return max(slept, thread)
}
