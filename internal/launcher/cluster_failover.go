package launcher

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ReplicasOf returns the running replicas of master, according to the
// CLUSTER NODES reply of the first live node that answers. Replicas that
// are failing are left out.
func (c *Cluster) ReplicasOf(ctx context.Context, master *Server) ([]*Server, error) {
	view, err := c.anyView(ctx)
	if err != nil {
		return nil, err
	}
	var id string
	for i := range view {
		if view[i].addr == master.Addr() {
			id = view[i].id
		}
	}
	if id == "" {
		return nil, fmt.Errorf("launcher: %s is not a node of the cluster", master.Addr())
	}
	var out []*Server
	for i := range view {
		n := &view[i]
		if n.masterID != id || n.down() {
			continue
		}
		if s := c.lookup(n.addr); s != nil && s.running() {
			out = append(out, s)
		}
	}
	return out, nil
}

// Failover promotes replica to master with a manual failover (CLUSTER
// FAILOVER, without FORCE: the master and the replica agree, so no write
// is lost), as an operator does for maintenance. Its master keeps running
// and becomes its replica. Failover waits until replica reports itself a
// master, every running node agrees on the slot map (see [Cluster.WaitOK])
// and sees the former master as a replica. It fails on an external cluster, and if replica is
// not a replica; it is bounded by ctx and by 60 s.
func (c *Cluster) Failover(ctx context.Context, replica *Server) error {
	if c.external {
		return errors.New("launcher: cannot fail over an external cluster")
	}
	if replica == nil || c.lookup(replica.Addr()) != replica {
		return errors.New("launcher: failover: not a node of this cluster")
	}
	ctx, cancel := context.WithTimeout(ctx, clusterTimeout)
	defer cancel()
	view, err := c.view(ctx, replica)
	if err != nil {
		return fmt.Errorf("launcher: failover: %w", err)
	}
	me := myself(view)
	if me == nil || !me.has("slave") {
		return fmt.Errorf("launcher: failover: %s is not a replica", replica.Addr())
	}
	formerID := me.masterID
	if _, err := command(ctx, replica, "CLUSTER", "FAILOVER"); err != nil {
		return fmt.Errorf("launcher: failover: %w", err)
	}
	err = poll(ctx, "replica not promoted", func(ctx context.Context) error {
		view, err := c.view(ctx, replica)
		if err != nil {
			return err
		}
		if me := myself(view); me == nil || !me.has("master") || len(me.slots) == 0 {
			return fmt.Errorf("%s is not a master serving slots yet", replica.Addr())
		}
		if err := c.checkOK(ctx); err != nil {
			return err
		}
		// Every node sees the former master as a replica too, so that
		// Masters no longer lists it.
		live, err := c.live(ctx)
		if err != nil {
			return err
		}
		for _, s := range live {
			view, err := c.view(ctx, s)
			if err != nil {
				return err
			}
			for i := range view {
				if n := &view[i]; n.id == formerID && !n.has("slave") {
					return fmt.Errorf("%s still sees the former master %s as %s", s.Addr(), n.addr, strings.Join(n.flags, ","))
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w%s", err, c.logs())
	}
	return nil
}
