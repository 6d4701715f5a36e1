package cluster

import (
	"context"
	"errors"
	"time"

	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/failure"
	"github.com/redisx-go/kit/internal/topology"
	"github.com/redisx-go/kit/internal/transport"
)

// Reads from replicas (Config.ReadFrom other than ReadPrimary). Every
// node's connections are READONLY (dial.Dial), so that a replica serves
// the reads of its master's slots. The topology keeps, by master, the
// replicas CLUSTER SHARDS lists as online (a failed or loading one is not
// listed); a read goes to one of them (ReplicaPreferred: in turn;
// Nearest: master or replica, the lowest moving average of measured round
// trips), and a replica a read fails on — a connection failure, a
// redirect (it no longer serves the slot), LOADING, MASTERDOWN — is
// skipped for skipFor, the read then going to the master. Writes, and
// reads under ReadPrimary, never reach a replica.

// skipFor is how long a replica is left out of reads after a failed one.
const skipFor = time.Second

// replicaMembers returns the members of the online replicas of the shard
// serving slot in m, created (unconnected) on first use; none when reads
// go to masters only. c.mu must be held.
func (c *Router) replicaMembers(m *topology.Map, slot int) ([]*member, error) {
	if c.cfg.ReadFrom == backend.ReadPrimary {
		return nil, nil
	}
	sh, _ := m.Shard(slot)
	var rs []*member
	for _, addr := range sh.Replicas {
		r, err := c.memberLocked(addr)
		if err != nil {
			return nil, err
		}
		rs = append(rs, r)
	}
	return rs, nil
}

// replicasOf returns the replicas t keeps for master m.
func (t *table) replicasOf(m *member) []*member {
	for i, mm := range t.masters {
		if mm == m && i < len(t.replicas) {
			return t.replicas[i]
		}
	}
	return nil
}

// reader returns the replica a read of slot goes to, acquired (the caller
// releases it), or nil for the master.
func (c *Router) reader(slot int) *member {
	top := c.state.Load()
	i := top.owner[slot]
	if i == 0 || int(i) > len(top.replicas) {
		return nil
	}
	rs := top.replicas[i-1]
	if len(rs) == 0 {
		return nil
	}
	now := time.Now().UnixNano()
	var best *member
	switch c.cfg.ReadFrom {
	case backend.ReadNearest:
		best = top.masters[i-1]
		for _, r := range rs {
			if r.skipUntil.Load() > now {
				continue
			}
			if r.rtt.Load() == 0 { // not measured yet: measure it
				best = r
				break
			}
			if r.rtt.Load() < best.rtt.Load() {
				best = r
			}
		}
		if best == top.masters[i-1] {
			return nil
		}
	default: // ReadReplicaPreferred: each in turn
		start := int(c.turn.Add(1))
		for k := range rs {
			if r := rs[(start+k)%len(rs)]; r.skipUntil.Load() <= now {
				best = r
				break
			}
		}
	}
	if best == nil || !best.Acquire() {
		return nil
	}
	return best
}

// routeRead runs op, a read of slot, as ReadFrom says: on a replica when
// one is chosen, on the master (route) otherwise or when the replica
// fails it. Reads are idempotent: the master's answer replaces a failed
// replica's within the caller's context.
func (c *Router) routeRead(ctx context.Context, slot int, op, ask func(transport.Node) error) error {
	if c.cfg.ReadFrom == backend.ReadPrimary {
		return c.route(ctx, slot, op, ask)
	}
	if c.closed.Load() {
		return backend.ErrClosed
	}
	if r := c.reader(slot); r != nil {
		start := time.Now()
		err := op(r.n)
		r.Release()
		if err == nil || errors.Is(err, backend.ErrNotFound) || ctx.Err() != nil || !replicaFailure(err) {
			transport.ObserveRTT(&r.rtt, time.Since(start))
			return err
		}
		r.skipUntil.Store(time.Now().Add(skipFor).UnixNano())
		if _, ok := redirectOf(err); !ok {
			c.refreshAfter(err)
		}
	}
	start := time.Now()
	err := c.route(ctx, slot, op, ask)
	if c.cfg.ReadFrom == backend.ReadNearest && (err == nil || errors.Is(err, backend.ErrNotFound)) {
		if m := c.state.Load().master(slot); m != nil {
			transport.ObserveRTT(&m.rtt, time.Since(start))
		}
	}
	return err
}

// replicaFailure reports whether err, a read's on a replica, says that
// the replica cannot serve it now: a connection failure, a redirect, or
// a reply that means "not now" (LOADING, MASTERDOWN, TRYAGAIN…). A
// command's own error (WRONGTYPE) is the answer the master would give.
func replicaFailure(err error) bool {
	if _, ok := redirectOf(err); ok {
		return true
	}
	return failure.Temporary(err)
}
