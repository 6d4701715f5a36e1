package benchmarks

import (
	"runtime"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redisx-go/kit/benchmarks/load"
	"github.com/redisx-go/kit/benchmarks/verdict"
)

// sample is one measured run of a target at a level.
type sample struct {
	load.Outcome
	qps          float64
	cpu          time.Duration // user + system time of the process
	mallocs      uint64
	bytes        uint64
	conns        int
	lanes        int // a Multiplexed target's lanes open at the end (Stats.Lanes)
	hits, misses int64
	received     int64 // keys a near-cache's invalidation messages named (Stats.InvalidationsReceived)
	localBytes   int64 // what a near-cache held at the end (Stats.LocalBytes)
	// late holds the sends' lateness of an open-loop sample (nil in
	// closed loop), valid until the next sample.
	late *hdr.Histogram
}

// cellAcc accumulates the samples of one cell.
type cellAcc struct {
	cell verdict.Cell
	hist *hdr.Histogram
	late *hdr.Histogram // open loop only
	cpu  time.Duration
	mall uint64
	byts uint64
	hits int64
	miss int64
	recv int64
	// writes is the share of the workload's ops that write (Workload.Writes).
	writes float64
}

func newCellAcc(w Workload, t Target, level int, rate float64) *cellAcc {
	return &cellAcc{
		cell:   verdict.Cell{Workload: w.Name, Target: t.Name, Concurrency: level, Peer: t.Peer, Stale: t.Stale, MaxConns: t.Conns, Rate: rate},
		hist:   load.NewHistogram(),
		writes: w.Writes,
	}
}

// add folds s, whose latencies are in h, into the cell.
func (a *cellAcc) add(s sample, h *hdr.Histogram) {
	c := &a.cell
	c.QPSSamples = append(c.QPSSamples, s.qps)
	c.P99Samples = append(c.P99Samples, float64(h.ValueAtQuantile(99))/1e6)
	c.Samples++
	c.Ops += s.Ops
	c.Errors += s.Errs
	c.Unsent += s.Behind
	if s.First != nil && c.FirstError == "" {
		c.FirstError = s.First.Error()
	}
	c.Conns = max(c.Conns, s.conns)
	c.Lanes = max(c.Lanes, s.lanes)
	c.LocalBytes = max(c.LocalBytes, s.localBytes)
	a.hist.Merge(h)
	if s.late != nil {
		if a.late == nil {
			a.late = load.NewHistogram()
		}
		a.late.Merge(s.late)
	}
	a.cpu += s.cpu
	a.mall += s.mallocs
	a.byts += s.bytes
	a.hits += s.hits
	a.miss += s.misses
	a.recv += s.received
}

// fail marks the cell failed with err (the target could not be opened,
// or its workload could not be set up).
func (a *cellAcc) fail(err error) {
	a.cell.Failed = true
	if a.cell.FirstError == "" {
		a.cell.FirstError = err.Error()
	}
}

// finish computes the cell's statistics.
func (a *cellAcc) finish() verdict.Cell {
	c := a.cell
	c.Failed = c.Failed || c.Errors > 0
	c.QPS, c.QPSLow, c.QPSHigh = verdict.Summarize(c.QPSSamples)
	ms := func(q float64) float64 { return float64(a.hist.ValueAtQuantile(q)) / 1e6 }
	c.P50ms, c.P90ms, c.P99ms, c.P999ms = ms(50), ms(90), ms(99), ms(99.9)
	c.MaxMs = float64(a.hist.Max()) / 1e6
	if a.late != nil {
		c.LatenessP99ms = float64(a.late.ValueAtQuantile(99)) / 1e6
	}
	if c.Ops > 0 {
		n := float64(c.Ops)
		c.CPUPerOp = float64(a.cpu.Microseconds()) / n
		c.AllocsPerOp = float64(a.mall) / n
		c.BytesPerOp = float64(a.byts) / n
	}
	if a.hits+a.miss > 0 {
		c.HitRatio = float64(a.hits) / float64(a.hits+a.miss)
		if a.writes > 0 && c.Ops > 0 {
			c.InvalidationsPerWrite = float64(a.recv) / (float64(c.Ops) * a.writes)
		}
	}
	return c
}

// usage is what the process spent: CPU time and heap allocations.
type usage struct {
	cpu     time.Duration
	mallocs uint64
	bytes   uint64
}

func readUsage() usage {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return usage{cpu: processCPU(), mallocs: m.Mallocs, bytes: m.TotalAlloc}
}

func (u usage) since(before usage) usage {
	return usage{cpu: u.cpu - before.cpu, mallocs: u.mallocs - before.mallocs, bytes: u.bytes - before.bytes}
}
