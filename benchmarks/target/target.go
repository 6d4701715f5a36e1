package target

import (
	"context"
	"crypto/tls"
	"slices"

	"github.com/redisx-go/kit/benchmarks/workload"
	"github.com/redisx-go/kit/redisx"
)

// Env is what a target connects to: the servers of one workload and the
// shared connection settings.
type Env struct {
	// Addrs are the standalone server (one address) or the cluster's
	// seeds.
	Addrs   []string
	Cluster bool
	// Sentinel, when set, names the sentinels of the standalone server
	// Addrs[0] is the master of (at the start of the run): a target that
	// can should connect through them and follow their failovers.
	Sentinel *redisx.SentinelOptions

	Username string
	Password string
	TLS      *tls.Config
	DB       int
	// ClientName must be set (CLIENT SETNAME) on every connection the
	// target opens: the harness counts the target's connections by it
	// (CLIENT LIST on every server, or every master of a cluster).
	// A target that does not set it reports 0 connections.
	ClientName string
}

// Topology says which deployments a target can measure.
type Topology int

// Topologies of a Target.
const (
	AnyTopology    Topology = iota // standalone servers and clusters
	StandaloneOnly                 // no cluster support (redigo's Pool)
	ClusterOnly                    // meaningful on a cluster only (SlotGrouped)
)

// Target is one client configuration under measurement.
type Target struct {
	// Name identifies the target in cells and verdicts ("pool-32").
	Name string
	// Open connects to env; the caller closes the Client.
	Open func(ctx context.Context, env Env) (workload.Client, error)
	// Conns is the number of connections it may open per server, for
	// the record (0: not fixed). Ties are broken by the connections
	// measured on the server, not by this.
	Conns int
	// Peer marks a client that is not redisx (rueidis, redigo, go-redis):
	// measured for comparison, never recommended.
	Peer bool
	// Stale marks a target whose reads may be stale up to a TTL: a
	// near-cache without tracking (localcache.TrackNone), which another
	// client's write reaches only when the entry expires. A tie among
	// equivalent targets never goes to it over a coherent one (see
	// verdict.Recommend). StrategyTarget and URLTarget set it.
	Stale    bool
	Topology Topology
	// Only, when set, names the workload families the target runs in
	// ("near"); nil: every family.
	Only []string
	// Isolated targets are open only while they are measured: opened
	// for each sample, primed (workload.Workload.Prime), warmed up (discarded)
	// and closed after it, so
	// that nothing of theirs weighs on the other targets' samples. A
	// near-cache is: while it is open, the server tracks the keys it read
	// and sends it an invalidation for each write another target makes
	// to them. StrategyTarget and URLTarget set it for localcache.Near.
	Isolated bool
	// URL configures the target through redisx.ParseURL; its host is
	// replaced by the measured server's in recommendations. Go is the
	// strategy as a Go expression ("strategy.Pool{Size: 32}"). Both are
	// empty for a peer.
	URL string
	Go  string
	// Servers, when set, are the servers the target measures instead of
	// the run's: a deployment of its own, checked for foreign keys
	// (unless the run's Servers.Force), seeded by each workload's Setup,
	// its connections counted and its keys deleted there, reached with
	// these Servers' credentials, TLS and database. Standalone names a
	// server, or a node of a cluster (INFO says so), which then stands
	// for the cluster; Cluster names a cluster's seeds. The target runs
	// the workloads of its deployment's kind only. Force is ignored.
	// URLTarget sets it from a URL with a host; nil: the run's servers.
	Servers *Servers
}

// RunsIn reports whether t applies to w on the deployment w needs.
func (t Target) RunsIn(w workload.Workload) bool {
	switch {
	case t.Topology == StandaloneOnly && w.Cluster, t.Topology == ClusterOnly && !w.Cluster:
		return false
	case t.Only != nil && !slices.Contains(t.Only, w.Family()):
		return false
	}
	return w.Targets == nil || slices.Contains(w.Targets, t.Name)
}

// Servers are the deployments a run measures, and how to reach them.
type Servers struct {
	// Standalone is the address of a standalone server ("host:port");
	// empty: the workloads that need one are skipped.
	Standalone string
	// Cluster are seed addresses of a Redis Cluster; nil: the cluster
	// workloads are skipped.
	Cluster []string
	// Sentinel, when set, names the sentinels that manage the standalone
	// server: the targets that can follow them do (redisx, rueidis,
	// go-redis), and benchmarks.Run sets Standalone, when empty, to the
	// master they name at the start.
	Sentinel *redisx.SentinelOptions

	Username string
	Password string
	TLS      *tls.Config
	DB       int
	// Force runs even when a database holds keys outside workload.KeyPrefix
	// (someone's data: the harness only ever deletes its own keys, but a
	// benchmark on a production server is rarely intended).
	Force bool
}

// CloneSentinel returns a copy of o, nil for nil: an Env's own, that a
// target's Open may keep without sharing the run's.
func CloneSentinel(o *redisx.SentinelOptions) *redisx.SentinelOptions {
	if o == nil {
		return nil
	}
	c := *o
	c.Addrs = append([]string(nil), o.Addrs...)
	return &c
}
