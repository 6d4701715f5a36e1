package transport

import (
	"sync/atomic"
	"time"

	"github.com/redisx-go/kit/backend"
)

// AddNode adds a node's figures ns to s (the deepest pipeline is the
// deepest of any node's).
func AddNode(s *backend.Stats, ns backend.Stats) {
	s.Nodes += ns.Nodes
	s.Conns += ns.Conns
	s.Lanes += ns.Lanes
	s.BigValueConns += ns.BigValueConns
	s.PipelineDepth = max(s.PipelineDepth, ns.PipelineDepth)
	s.Pending += ns.Pending
	s.InUse += ns.InUse
	s.Idle += ns.Idle
	s.MaxConns += ns.MaxConns
	AddCounters(s, ns)
}

// AddCounters adds the counters of ns — the figures that only grow — to s.
func AddCounters(s *backend.Stats, ns backend.Stats) {
	s.Flushes += ns.Flushes
	s.Commands += ns.Commands
	s.Acquires += ns.Acquires
	s.AcquireWait += ns.AcquireWait
	s.EmptyAcquires += ns.EmptyAcquires
	s.CanceledAcquire += ns.CanceledAcquire
	s.Dials += ns.Dials
	s.DialErrors += ns.DialErrors
	s.BrokenConns += ns.BrokenConns
}

// ObserveRTT folds one round trip into avg, a moving average in
// nanoseconds (0: none measured yet): how reads pick the nearest node.
func ObserveRTT(avg *atomic.Int64, d time.Duration) {
	old := avg.Load()
	if old == 0 {
		avg.Store(int64(d))
		return
	}
	avg.Store((old*7 + int64(d)*3) / 10)
}
