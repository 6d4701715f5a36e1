package cluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/command"
	"github.com/redisx-go/kit/internal/failure"
	"github.com/redisx-go/kit/internal/topology"
	"github.com/redisx-go/kit/internal/transport"
	"github.com/redisx-go/kit/internal/wire"
)

// Routing of generic commands (Do) on a cluster. Where a command goes is
// read from the server's own description of it (internal/command, made
// from Redis 7's COMMAND key specs and tips), not guessed from its second
// argument — which is not the key of EVALSHA sha 1 key, XREAD … STREAMS k
// or OBJECT ENCODING k:
//
//   - A command with keys goes to the master of their slot. Keys in
//     different slots are refused before anything is sent.
//   - A keyless command follows its request policy: to every master
//     (DBSIZE, KEYS, FLUSHALL, SCRIPT LOAD, FUNCTION LOAD, PING), the
//     replies combined as its response policy says; to any one master
//     (TIME, ECHO, CLUSTER INFO, EVAL with no key); or, when each master's
//     reply stands alone (SCAN's cursor, INFO, MEMORY STATS), refused with
//     ErrUnsupported: DoOn runs it on a node the caller names.
//   - A command the table does not know (a module's, or a newer server's)
//     costs one extra round trip: COMMAND GETKEYS, on any master, tells
//     its keys; one the server says has none goes to any master.

// Do implements Doer; see above for where each command goes. Do follows
// redirects and TRYAGAIN but does not retry after a connection failure:
// the command may have run.
func (c *Router) Do(ctx context.Context, args ...any) (any, error) {
	if _, err := command.CheckCommand(args); err != nil {
		return nil, err
	}
	if c.closed.Load() {
		return nil, backend.ErrClosed
	}
	spec := command.Lookup(args)
	if spec == nil {
		return c.doUnknown(ctx, args)
	}
	if slot, ok := publishSlot(spec, args); ok {
		return c.doSlot(ctx, slot, nil, args)
	}
	var buf [8]int
	pos, ok := spec.AppendKeys(buf[:0], args)
	if !ok || len(pos) == 0 {
		// Keyless, or a malformed key count the server will refuse
		// wherever it is sent.
		return c.doKeyless(ctx, spec, args)
	}
	keys := make([]string, len(pos))
	for i, p := range pos {
		keys[i] = command.Arg(args, p)
	}
	slot, err := oneSlot(commandName(args, spec), keys, pos, spec.Request == command.MultiShard)
	if err != nil {
		return nil, err
	}
	return c.doSlot(ctx, slot, keys, args)
}

// publishSlot returns the slot a PUBLISH goes to: its channel's. The
// command has no key and any node would do — the cluster carries every
// message to every node — but the messages of one channel published by
// one client then travel one path, and keep their order.
func publishSlot(spec *command.Spec, args []any) (int, bool) {
	if spec.Name != "publish" || len(args) != 3 {
		return 0, false
	}
	return topology.Slot(command.Arg(args, 1)), true
}

// doSlot runs args, a command on keys, on the master of slot (a read-only
// command on keys: where ReadFrom says).
func (c *Router) doSlot(ctx context.Context, slot int, keys []string, args []any) (any, error) {
	var v any
	route := c.route
	if keys != nil && command.ReplicaRead(args) {
		route = c.routeRead // a replica may serve it (ReadFrom)
	}
	err := route(ctx, slot,
		func(n transport.Node) (err error) { v, err = n.Do(ctx, args...); return err },
		func(n transport.Node) error {
			rp := wire.Reply{Kind: wire.ReplyAny}
			err := askExec(ctx, n, keys, &rp, func(b []byte) []byte {
				b, _ = wire.AppendArgs(b, args) // checked by Do
				return b
			})
			v = rp.Any
			return err
		})
	return v, err
}

// doAny runs a keyless command on one master, picked at random (weighted
// by the slots it serves).
func (c *Router) doAny(ctx context.Context, args []any) (any, error) {
	return c.doSlot(ctx, rand.IntN(topology.Slots), nil, args)
}

// doKeyless sends a command without keys as its request policy says.
func (c *Router) doKeyless(ctx context.Context, spec *command.Spec, args []any) (any, error) {
	switch spec.Request {
	case command.AllShards, command.AllNodes:
		if spec.Response == command.SpecialResponse {
			return nil, perNode(commandName(args, spec))
		}
		// AllNodes includes replicas, but this client connects to masters
		// only, and reads and scripts run on masters: masters suffice.
		return c.doAll(ctx, spec, args)
	case command.SpecialRequest:
		return nil, perNode(commandName(args, spec))
	default:
		return c.doAny(ctx, args)
	}
}

// perNode is Do's refusal of a command whose replies, one per master,
// cannot be combined into one.
func perNode(name string) error {
	return fmt.Errorf("%w: %s on a cluster: each master answers for itself (its own cursor or report) and the replies do not combine into one; "+
		"run it on every address of Masters with DoOn (strategy.NodeDoer)", backend.ErrUnsupported, name)
}

// doUnknown routes a command the table does not know by the keys the
// server reports for it.
func (c *Router) doUnknown(ctx context.Context, args []any) (any, error) {
	v, err := c.doAny(ctx, append([]any{"COMMAND", "GETKEYS"}, args...))
	var re redis.Error
	if errors.As(err, &re) {
		// "has no key arguments", or the server does not know the command
		// either or finds its arguments invalid: then it will say so.
		return c.doAny(ctx, args)
	}
	if err != nil {
		return nil, err
	}
	list, _ := v.([]any)
	keys := make([]string, 0, len(list))
	for _, k := range list {
		if b, ok := k.([]byte); ok {
			keys = append(keys, string(b))
		}
	}
	if len(keys) == 0 {
		return c.doAny(ctx, args)
	}
	slot, err := oneSlot(strings.ToUpper(command.ArgName(args, 0)), keys, nil, false)
	if err != nil {
		return nil, err
	}
	return c.doSlot(ctx, slot, keys, args)
}

// oneSlot returns the slot of keys, or an error wrapping ErrCrossSlot
// and ErrInvalidArgument when they span several: the server would refuse the
// command with CROSSSLOT. pos, when known, are the keys' argument indexes,
// for the message (keys themselves are never put in errors).
func oneSlot(name string, keys []string, pos []int, multiShard bool) (int, error) {
	slot := topology.Slot(keys[0])
	for i := 1; i < len(keys); i++ {
		s := topology.Slot(keys[i])
		if s == slot {
			continue
		}
		where := fmt.Sprintf("slots %d and %d", slot, s)
		if pos != nil {
			where = fmt.Sprintf("slot %d (argument %d) and slot %d (argument %d)", slot, pos[0], s, pos[i])
		}
		hint := ""
		if multiShard {
			hint = ", or use the client's MGet, MSet or Del, which split keys by slot"
		}
		return 0, failure.CrossSlot("%s: its keys span %s; on a cluster the keys of one command must share a slot "+
			"(the server would reply CROSSSLOT): give them a common {hash tag}%s", name, where, hint)
	}
	return slot, nil
}

// commandName names the command of args for messages: "EVALSHA",
// "OBJECT ENCODING".
func commandName(args []any, spec *command.Spec) string {
	name := strings.ToUpper(command.ArgName(args, 0))
	if strings.Contains(spec.Name, "|") {
		name += " " + strings.ToUpper(command.Arg(args, 1))
	}
	return name
}

// doAll runs a keyless command on every master at once and combines the
// replies as the command's response policy says.
func (c *Router) doAll(ctx context.Context, spec *command.Spec, args []any) (any, error) {
	masters := c.acquireMasters()
	defer func() {
		for _, m := range masters {
			m.Release()
		}
	}()
	if len(masters) == 0 {
		return nil, errSlotUnserved
	}
	replies := make([]any, len(masters))
	errs := make([]error, len(masters))
	fanOut(len(masters), func(i int) {
		replies[i], errs[i] = masters[i].n.Do(ctx, args...)
	})
	var failed []error
	var ok []any
	for i, err := range errs {
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			// The node's error has the redisx: prefix already.
			failed = append(failed, fmt.Errorf("%w (on %s)", err, masters[i].n.Address()))
			c.refreshAfter(err)
			continue
		}
		ok = append(ok, replies[i])
	}
	name := commandName(args, spec)
	switch {
	case spec.Response == command.OneSucceeded && len(ok) > 0:
		return ok[0], nil
	case len(failed) > 0:
		return nil, errors.Join(failed...)
	}
	return combine(name, spec.Response, ok)
}

// combine merges the replies of every master into one, as Redis's
// response policies say: AggSum, AggMin, AggMax, AggLogicalAnd and
// AggLogicalOr fold integers (arrays of integers element by element, as
// SCRIPT EXISTS needs); DefaultResponse concatenates arrays (KEYS) or,
// for a single value, takes one non-nil reply at random (RANDOMKEY);
// AllSucceeded and OneSucceeded return the first reply.
func combine(name string, policy command.ResponsePolicy, replies []any) (any, error) {
	switch policy {
	case command.AggSum, command.AggMin, command.AggMax, command.AggLogicalAnd, command.AggLogicalOr:
		acc := replies[0]
		for _, r := range replies[1:] {
			var err error
			if acc, err = fold(policy, acc, r); err != nil {
				return nil, fmt.Errorf("redisx: %s: replies of the masters do not combine: %w", name, err)
			}
		}
		return acc, nil
	case command.DefaultResponse:
		var all []any
		for _, r := range replies {
			a, isArray := r.([]any)
			if !isArray {
				return oneOf(replies), nil
			}
			all = append(all, a...)
		}
		if all == nil {
			all = []any{}
		}
		return all, nil
	default:
		return replies[0], nil
	}
}

// oneOf returns one of the non-nil replies, picked at random, or nil.
func oneOf(replies []any) any {
	var some []any
	for _, r := range replies {
		if r != nil {
			some = append(some, r)
		}
	}
	if len(some) == 0 {
		return nil
	}
	return some[rand.IntN(len(some))]
}

// fold combines two integer replies, or two arrays of them element by
// element, by policy.
func fold(policy command.ResponsePolicy, a, b any) (any, error) {
	switch x := a.(type) {
	case int64:
		y, ok := b.(int64)
		if !ok {
			return nil, fmt.Errorf("%T and %T", a, b)
		}
		switch policy {
		case command.AggSum:
			return x + y, nil
		case command.AggMin:
			return min(x, y), nil
		case command.AggMax:
			return max(x, y), nil
		case command.AggLogicalAnd:
			return boolInt(x != 0 && y != 0), nil
		default: // AggLogicalOr
			return boolInt(x != 0 || y != 0), nil
		}
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return nil, fmt.Errorf("arrays of %d and %v elements", len(x), lenOf(b))
		}
		out := make([]any, len(x))
		for i := range x {
			var err error
			if out[i], err = fold(policy, x[i], y[i]); err != nil {
				return nil, fmt.Errorf("element %d: %w", i, err)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("%T is not an integer", a)
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// lenOf describes b's length for a message: an array's, or its type.
func lenOf(b any) any {
	if y, ok := b.([]any); ok {
		return len(y)
	}
	return fmt.Sprintf("%T", b)
}

// Masters implements NodeDoer: the masters of the current slot map, in
// the order of their first slot.
func (c *Router) Masters() []string {
	if c.closed.Load() {
		return nil
	}
	masters := c.state.Load().masters
	addrs := make([]string, len(masters))
	for i, m := range masters {
		addrs[i] = m.n.Address()
	}
	return addrs
}

// DoOn implements NodeDoer.
func (c *Router) DoOn(ctx context.Context, addr string, args ...any) (any, error) {
	if _, err := command.CheckCommand(args); err != nil {
		return nil, err
	}
	if c.closed.Load() {
		return nil, backend.ErrClosed
	}
	for {
		var m *member
		for _, x := range c.state.Load().masters {
			if x.n.Address() == addr {
				m = x
				break
			}
		}
		if m == nil {
			return nil, fmt.Errorf("%w: DoOn: %s is not a master of the cluster's slot map (see Masters)", backend.ErrInvalidArgument, addr)
		}
		if !m.Acquire() {
			continue // retired since we loaded the map: look in the new one
		}
		defer m.Release()
		v, err := m.n.Do(ctx, args...)
		if err != nil {
			c.refreshAfter(err) // the address may be a master no more
		}
		return v, err
	}
}
