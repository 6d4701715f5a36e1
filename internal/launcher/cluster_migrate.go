package launcher

import (
	"context"
	"errors"
	"fmt"

	"github.com/gomodule/redigo/redis"
)

// MoveSlot migrates slot, with its keys, to the master to while the cluster
// is serving, as redis-cli --cluster reshard does: CLUSTER SETSLOT IMPORTING
// on to, MIGRATING on the current master, MIGRATE of every key (listed with
// CLUSTER GETKEYSINSLOT, in batches of 100), then SETSLOT NODE on to, on the
// former master and on every other live master. It then waits until every
// running node maps the slot to to. Moving a slot to its current master does
// nothing. MoveSlot fails on an external cluster, and if to is not a master;
// a failure half-way leaves the slot migrating. It is bounded by ctx and by
// 60 s.
func (c *Cluster) MoveSlot(ctx context.Context, slot int, to *Server) error {
	if c.external {
		return errors.New("launcher: cannot move slots of an external cluster")
	}
	if slot < 0 || slot >= clusterSlots {
		return fmt.Errorf("launcher: invalid slot %d", slot)
	}
	if to == nil || c.lookup(to.Addr()) != to {
		return errors.New("launcher: move slot: target is not a node of this cluster")
	}
	ctx, cancel := context.WithTimeout(ctx, clusterTimeout)
	defer cancel()

	toView, err := c.view(ctx, to)
	if err != nil {
		return fmt.Errorf("launcher: move slot %d: %w", slot, err)
	}
	self := myself(toView)
	if self == nil || !self.has("master") {
		return fmt.Errorf("launcher: move slot %d: %s is not a master", slot, to.Addr())
	}
	src := owner(toView, slot)
	if src == nil {
		return fmt.Errorf("launcher: move slot %d: slot is not assigned", slot)
	}
	if src.id == self.id {
		return nil
	}
	from := c.lookup(src.addr)
	if from == nil || !from.running() {
		return fmt.Errorf("launcher: move slot %d: its master %s is not running", slot, src.addr)
	}
	fromView, err := c.view(ctx, from)
	if err != nil {
		return fmt.Errorf("launcher: move slot %d: %w", slot, err)
	}
	if me := myself(fromView); me == nil || me.id != src.id || !me.serves(slot) {
		return fmt.Errorf("launcher: move slot %d: %s and %s disagree on its master; call WaitOK first",
			slot, to.Addr(), from.Addr())
	}

	steps := []struct {
		s    *Server
		args []any
	}{
		{to, []any{"SETSLOT", slot, "IMPORTING", src.id}},
		{from, []any{"SETSLOT", slot, "MIGRATING", self.id}},
	}
	for _, st := range steps {
		if _, err := command(ctx, st.s, "CLUSTER", st.args...); err != nil {
			return fmt.Errorf("launcher: move slot %d: %w", slot, err)
		}
	}
	if err := migrateKeys(ctx, from, to, slot); err != nil {
		return fmt.Errorf("launcher: move slot %d: %w", slot, err)
	}
	targets := []*Server{to, from}
	for i := range toView {
		n := &toView[i]
		if !n.has("master") || n.down() || n.id == self.id || n.id == src.id {
			continue
		}
		if s := c.lookup(n.addr); s != nil && s.running() {
			targets = append(targets, s)
		}
	}
	for _, s := range targets {
		if _, err := command(ctx, s, "CLUSTER", "SETSLOT", slot, "NODE", self.id); err != nil {
			return fmt.Errorf("launcher: move slot %d: %w", slot, err)
		}
	}
	return poll(ctx, fmt.Sprintf("slot %d not moved everywhere", slot), func(ctx context.Context) error {
		live, err := c.live(ctx)
		if err != nil {
			return err
		}
		for _, s := range live {
			view, err := c.view(ctx, s)
			if err != nil {
				return err
			}
			if n := owner(view, slot); n == nil || n.addr != to.Addr() {
				return fmt.Errorf("%s does not map slot %d to %s yet", s.Addr(), slot, to.Addr())
			}
		}
		return nil
	})
}

// migrateKeys moves every key of slot from from to to with MIGRATE.
func migrateKeys(ctx context.Context, from, to *Server, slot int) error {
	conn, err := dial(ctx, from)
	if err != nil {
		return err
	}
	defer conn.Close()
	for {
		keys, err := redis.Values(do(ctx, conn, "CLUSTER", "GETKEYSINSLOT", slot, migrateBatch))
		if err != nil {
			return fmt.Errorf("%s: CLUSTER GETKEYSINSLOT: %w", from.Addr(), err)
		}
		if len(keys) == 0 {
			return nil
		}
		args := []any{to.host, to.port, "", 0, migrateTimeout}
		if to.password != "" {
			args = append(args, "AUTH", to.password)
		}
		args = append(append(args, "KEYS"), keys...)
		if _, err := do(ctx, conn, "MIGRATE", args...); err != nil {
			return fmt.Errorf("%s: MIGRATE to %s: %w", from.Addr(), to.Addr(), err)
		}
	}
}
