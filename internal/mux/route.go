package mux

import (
	"context"
	"time"

	"github.com/redisx-go/kit/internal/command"
	"github.com/redisx-go/kit/internal/conn"
)

// Routing and the order of a key's commands.
//
// A key's commands take its shared connection (FNV-1a of the key, so that
// they stay in order), or, for a SET of a big value, one of bulkConns
// connections of their own, after the shared ones, dialled on first use:
// the server reads a connection's requests 16 KiB at a time, once per turn
// of its event loop, so big values queued on one connection wait for each
// other and delay the small commands behind them; spread over a few
// connections they are read side by side.
//
// A caller's command returns once its reply is read, before its next one
// is sent, so a caller's commands stay in order — unless one returns
// sooner, its context ended: the server may apply it yet, after commands
// sent later on another connection. The rule: while a connection a key
// can take (its shared one, its bulk one) has calls whose callers left
// unanswered, every command on that key goes to that connection, behind
// them. A command on several keys (Del, MGet, MSet, Do by its key
// positions, a pipeline) obeys it for each of its keys: it goes to the one
// connection with such calls among all those its keys can take; when two
// or more have some, it waits, within its context, until at most one has.
// Nobody else waits, and only the keys of those connections change their
// route, until those replies are read. (Not covered: a connection that
// failed, or was replaced for its age, while such a call was on its way.)

// route returns the connection for a command on keys (none: a keyless
// command), a SET of a big value when big: see above.
func (n *Node) route(ctx context.Context, keys []string, big bool) (int, error) {
	for {
		if i, ok := n.pick(keys, big); ok {
			return i, nil
		}
		if err := n.waitAbandoned(ctx, keys, big); err != nil {
			return 0, err
		}
	}
}

// route1 is route for one key.
func (n *Node) route1(ctx context.Context, key string, big bool) (int, error) {
	if !big && n.bulkAbandoned.Load() == 0 {
		return n.sharedRoute(key), nil // the hot path: see pick
	}
	return n.route(ctx, []string{key}, big)
}

// pick returns the connection for a command on keys under the rule above,
// and false when two or more of the connections its keys can take have
// abandoned calls.
func (n *Node) pick(keys []string, big bool) (int, bool) {
	pref := 0
	if len(keys) > 0 {
		if big {
			pref = n.bulkRoute(keys[0])
		} else {
			pref = n.sharedRoute(keys[0])
		}
	}
	bulk := n.bulkAbandoned.Load() > 0
	if !bulk && !big && (len(keys) <= 1 || n.opts.Conns == 1) {
		// No bulk connection has abandoned calls, and the keys can take one
		// shared connection only: pref, whatever it holds.
		return pref, true
	}
	found := -1
	for _, k := range keys {
		for j, i := range [2]int{n.sharedRoute(k), n.bulkRoute(k)} {
			if j == 1 && !bulk {
				break
			}
			if i == found || !n.slots[i].abandonedOn() {
				continue
			}
			if found >= 0 {
				return 0, false
			}
			found = i
		}
	}
	if found >= 0 {
		return found, true
	}
	return pref, true
}

// waitAbandoned waits, within ctx, for pick to find a connection for keys:
// for replies to calls whose callers left to be read, or their
// connections to fail. Rare enough to poll.
func (n *Node) waitAbandoned(ctx context.Context, keys []string, big bool) error {
	wait := 200 * time.Microsecond
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return conn.CtxErr(n.addr, false, ctx.Err())
		case <-n.stop:
			return conn.ErrClosed
		case <-t.C:
		}
		if _, ok := n.pick(keys, big); ok {
			return nil
		}
		wait = min(2*wait, 10*time.Millisecond)
		t.Reset(wait)
	}
}

// oneRoute reports whether every command but a SET of a big value goes to
// connection 0 now, whatever its keys: the common case, which spares
// route the keys.
func (n *Node) oneRoute() bool {
	return n.opts.Conns == 1 && n.bulkAbandoned.Load() == 0
}

// routeDo is route for a generic command, by the keys its key
// specifications name (internal/command); a command whose keys cannot be
// told goes to connection 0.
func (n *Node) routeDo(ctx context.Context, args []any) (int, error) {
	if n.oneRoute() {
		return 0, nil
	}
	keys, _, _ := command.Keys(args)
	return n.route(ctx, keys, false)
}

// sharedRoute is key's shared connection.
func (n *Node) sharedRoute(key string) int {
	if n.opts.Conns == 1 {
		return 0
	}
	return int(fnv(key) % uint32(n.opts.Conns))
}

// bulkRoute is key's connection for SETs of big values.
func (n *Node) bulkRoute(key string) int {
	return n.opts.Conns + int(fnv(key)%bulkConns)
}

// abandonedOn reports whether the slot's connection has calls whose
// callers left unanswered.
func (s *muxSlot) abandonedOn() bool {
	c := s.cur.Load()
	return c != nil && c.abandoned.Load() > 0
}

// bulkConns is the number of connections per node for big values; bigValue
// the size from which a value is big.
const (
	bulkConns = 4
	bigValue  = 16 << 10
)

func fnv(key string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		h ^= uint32(key[i])
		h *= 16777619
	}
	return h
}
