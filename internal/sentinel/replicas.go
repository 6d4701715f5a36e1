package sentinel

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/dial"
	"github.com/redisx-go/kit/internal/failure"
	"github.com/redisx-go/kit/internal/transport"
)

// Reads from replicas (Config.ReadFrom). The replicas are those a
// sentinel lists, re-listed every relistTicks checks and after a switch;
// each is a member like the master's, with a health flag that a check
// every second sets (INFO replication: a replica linked to the current
// master) and a failed read clears. Reads pick among the healthy ones.

// relistTicks is how many checks (one a second) pass between two lists of
// the replicas.
const relistTicks = 5

// replica is one replica: its node, whether reads may go to it, and its
// measured round trip.
type replica struct {
	m       *member
	healthy atomic.Bool
	rtt     atomic.Int64 // a moving average, in nanoseconds; 0: not measured
}

// replicaSet is the replicas, an immutable slice swapped whole.
type replicaSet []*replica

// replicaConfig is the settings of the replicas' nodes: the master's,
// without the check that a connection reached a master, nor ReadFrom.
func replicaConfig(cfg backend.Config) backend.Config {
	cfg.Sentinel, cfg.ReadFrom = nil, backend.ReadPrimary
	return cfg
}

// tend lists and checks the replicas every rolePeriod until the backend's
// life ends: a goroutine of its own, so that a sentinel or a replica slow
// to answer never delays a discovery.
func (b *Backend) tend() {
	defer b.wg.Done()
	t := time.NewTicker(rolePeriod)
	defer t.Stop()
	for tick := 1; ; tick++ {
		select {
		case <-b.life.Done():
			return
		case <-t.C:
			b.tendReplicas(b.life, tick)
		}
	}
}

// tendReplicas lists the replicas when due and checks each.
func (b *Backend) tendReplicas(ctx context.Context, tick int) {
	if tick%relistTicks == 0 || b.relist.Swap(false) {
		if listed, err := b.listReplicas(ctx); err == nil {
			b.reconcile(listed)
		}
	}
	rs := b.replicas.Load()
	if rs == nil {
		return
	}
	var wg sync.WaitGroup
	for _, r := range *rs {
		wg.Go(func() { b.checkReplica(ctx, r) })
	}
	wg.Wait()
}

// listed is a replica as a sentinel lists it.
type listed struct {
	addr string
	down bool // flagged s_down, o_down or disconnected
}

// listReplicas asks the sentinels in turn, each within its deadline, for
// the replicas of the master (SENTINEL REPLICAS); the first answer wins.
func (b *Backend) listReplicas(ctx context.Context) ([]listed, error) {
	var errs []error
	for _, addr := range b.cfg.Sentinel.Addrs {
		l, err := b.askReplicas(ctx, addr)
		if err == nil {
			return l, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

func (b *Backend) askReplicas(ctx context.Context, addr string) ([]listed, error) {
	caller := ctx
	ctx, cancel := context.WithTimeout(ctx, askTimeout(&b.cfg))
	defer cancel()
	scfg := sentinelConfig(&b.cfg)
	nc, err := dial.Dial(caller, &scfg, addr) // bounded by askTimeout as DialTimeout
	if err != nil {
		return nil, err
	}
	c := redis.NewConn(nc, 0, 0)
	defer c.Close()
	defer context.AfterFunc(ctx, func() { c.Close() })()
	deadline, _ := ctx.Deadline()
	v, err := redis.Values(redis.DoWithTimeout(c, remaining(deadline), "SENTINEL", "REPLICAS", b.cfg.Sentinel.Master))
	if err != nil {
		return nil, failure.ConnError(addr, err)
	}
	var out []listed
	for _, item := range v {
		f, err := redis.StringMap(item, nil)
		if err != nil {
			return nil, failure.ConnError(addr, err)
		}
		flags := f["flags"]
		out = append(out, listed{
			addr: net.JoinHostPort(f["ip"], f["port"]),
			down: strings.Contains(flags, "s_down") || strings.Contains(flags, "o_down") || strings.Contains(flags, "disconnected"),
		})
	}
	return out, nil
}

// reconcile makes the replica set those of l that are not the master:
// nodes are kept for the replicas still listed, made for new ones (not
// healthy before their first check) and retired for the others. A
// replica the sentinel flags down is not healthy.
func (b *Backend) reconcile(l []listed) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	master := b.Master()
	old := map[string]*replica{}
	if rs := b.replicas.Load(); rs != nil {
		for _, r := range *rs {
			old[r.m.n.Address()] = r
		}
	}
	var next replicaSet
	for _, e := range l {
		if e.addr == master {
			continue
		}
		r, ok := old[e.addr]
		if ok {
			delete(old, e.addr)
		} else {
			n, err := b.t.NewNode(replicaConfig(b.cfg), e.addr)
			if err != nil {
				continue
			}
			r = &replica{m: b.newMember(n)}
		}
		if e.down {
			r.healthy.Store(false)
		}
		next = append(next, r)
	}
	b.replicas.Store(&next)
	for _, r := range old {
		b.retiring[r.m] = struct{}{}
	}
	b.mu.Unlock()
	for _, r := range old {
		r.m.Retire()
	}
}

// dropReplica takes the replica at addr out of the set: it has become the
// master. b.mu must be held; the caller retires what it returns once
// b.mu is released.
func (b *Backend) dropReplicaLocked(addr string) *member {
	rs := b.replicas.Load()
	if rs == nil {
		return nil
	}
	var next replicaSet
	var gone *member
	for _, r := range *rs {
		if r.m.n.Address() == addr {
			gone = r.m
			continue
		}
		next = append(next, r)
	}
	if gone != nil {
		b.replicas.Store(&next)
		b.retiring[gone] = struct{}{}
	}
	return gone
}

// checkReplica asks r for INFO replication, within a second, and marks it
// healthy when it is a replica of the current master with its link up
// (which also means it is not loading a data set from it).
func (b *Backend) checkReplica(ctx context.Context, r *replica) {
	if !r.m.Acquire() {
		return
	}
	defer r.m.Release()
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	start := time.Now()
	info, err := redis.String(r.m.n.Do(ctx, "INFO", "replication"))
	if err != nil {
		r.healthy.Store(false)
		return
	}
	transport.ObserveRTT(&r.rtt, time.Since(start))
	f := map[string]string{}
	for line := range strings.Lines(info) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			f[k] = v
		}
	}
	r.healthy.Store(f["role"] == "slave" && f["master_link_status"] == "up" &&
		net.JoinHostPort(f["master_host"], f["master_port"]) == b.Master())
}

// acquireRead returns the node a read goes to, acquired, and its replica
// (nil for the master's node).
func (b *Backend) acquireRead() (*member, *replica, error) {
	if r := b.pickReplica(); r != nil {
		return r.m, r, nil
	}
	m, err := b.acquire()
	return m, nil, err
}

// pickReplica returns a healthy replica, acquired, as ReadFrom says, or
// nil for the master.
func (b *Backend) pickReplica() *replica {
	if b.cfg.ReadFrom == backend.ReadPrimary {
		return nil
	}
	rs := b.replicas.Load()
	if rs == nil || len(*rs) == 0 {
		return nil
	}
	list := *rs
	switch b.cfg.ReadFrom {
	case backend.ReadReplicaPreferred:
		// In turn, from the next one on: a replica that is down is
		// skipped (Lettuce#3502 failed when the first one was).
		start := int(b.next.Add(1) % uint64(len(list)))
		for i := range list {
			if r := list[(start+i)%len(list)]; r.healthy.Load() && r.m.Acquire() {
				return r
			}
		}
	case backend.ReadNearest:
		var best *replica
		bestRTT := b.masterRTT.Load()
		for _, r := range list {
			if rtt := r.rtt.Load(); r.healthy.Load() && rtt > 0 && (bestRTT == 0 || rtt < bestRTT) {
				best, bestRTT = r, rtt
			}
		}
		if best != nil && best.m.Acquire() {
			return best
		}
	}
	return nil
}

// afterRead looks at the error of a read on m: on a replica, a failure
// that may last (a connection failure, LOADING, MASTERDOWN) makes it
// unhealthy until its next check; on the master, check applies.
func (b *Backend) afterRead(m *member, r *replica, err error) error {
	if r == nil {
		return b.check(m, err)
	}
	if err != nil && failure.Temporary(err) {
		r.healthy.Store(false)
	}
	return err
}
