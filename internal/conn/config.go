package conn

import (
	"context"
	"crypto/tls"
	"net"
	"strconv"
	"sync/atomic"
	"time"
)

// Config is strategy.Config, field for field, for the transports:
// package strategy converts one into the other (a conversion, so the
// compiler keeps the two in step). The fields' docs are strategy's.
type Config struct {
	Addrs        []string
	Username     string
	Password     string
	Credentials  func(ctx context.Context) (username, password string, err error)
	MaxConnAge   time.Duration
	DB           int
	TLS          *tls.Config
	DialTimeout  time.Duration
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	ClientName   string
	Sentinel     *Sentinel
	ReadFrom     ReadFrom
	OnConnect    func(ctx context.Context, addr string, nc net.Conn) error
}

// ReadFrom is strategy.ReadFrom: which node serves reads. Its docs are
// strategy's.
type ReadFrom uint8

// The values of ReadFrom.
const (
	ReadPrimary ReadFrom = iota
	ReadReplicaPreferred
	ReadNearest
)

// Sentinel is strategy.SentinelConfig: the sentinels that name the master
// when Config.Sentinel is set. Its fields' docs are strategy's.
type Sentinel struct {
	Master   string
	Addrs    []string
	Username string
	Password string
}

// Stats is strategy.Stats, field for field (see Config): what a
// transport reports. The fields' docs are strategy's.
type Stats struct {
	Strategy string

	Conns int
	Lanes int

	Pending  int64
	Flushes  int64
	Commands int64

	InUse           int
	Idle            int
	MaxConns        int
	Acquires        int64
	AcquireWait     time.Duration
	EmptyAcquires   int64
	CanceledAcquire int64

	Nodes             int
	Masters           int
	Redirects         int64
	TopologyRefreshes int64

	LocalHits             int64
	LocalMisses           int64
	Invalidations         int64
	InvalidationsReceived int64
	LocalFlushes          int64
	Evictions             int64
	LocalBytes            int64

	Dials       int64
	DialErrors  int64
	BrokenConns int64
}

// AddNode adds a node's figures to s.
func (s *Stats) AddNode(ns Stats) {
	s.Nodes += ns.Nodes
	s.Conns += ns.Conns
	s.Lanes += ns.Lanes
	s.Pending += ns.Pending
	s.InUse += ns.InUse
	s.Idle += ns.Idle
	s.MaxConns += ns.MaxConns
	s.AddCounters(ns)
}

// AddCounters adds the counters of ns — the figures that only grow — to s.
func (s *Stats) AddCounters(ns Stats) {
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

// String returns the name of r in a URL's read_from parameter: primary,
// replica or nearest.
func (r ReadFrom) String() string {
	switch r {
	case ReadPrimary:
		return "primary"
	case ReadReplicaPreferred:
		return "replica"
	case ReadNearest:
		return "nearest"
	}
	return "ReadFrom(" + strconv.Itoa(int(r)) + ")"
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
