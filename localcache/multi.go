package localcache

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/redisx-go/kit/internal/failure"
	"github.com/redisx-go/kit/internal/wire"
	"github.com/redisx-go/kit/strategy"
)

// Pipelines and transactions through the near-cache.

// DoMulti implements strategy.MultiDoer. A GET whose key is cached is
// answered locally — a copy of the value, or nil for a remembered miss —
// unless an earlier command of the batch may write that key (or any key:
// a flush); the other commands go through the inner strategy as one
// DoMulti (strategy.DoEach without one), in their order. Then the keys the
// batch's writes name are invalidated, as Do does for one command: every
// key when one of them cannot be told (the cache is voided before the
// batch is sent, and flushed after). GETs answered by the server are not
// stored locally, as Do's are not.
func (n *near) DoMulti(ctx context.Context, cmds ...[]any) []strategy.Result {
	if _, _, res, ok := wire.CheckMulti(cmds); !ok {
		return res
	}
	if err := ctx.Err(); err != nil {
		return failure.FailAll(len(cmds), err)
	}
	res := make([]strategy.Result, len(cmds))
	fwd := make([][]any, 0, len(cmds))
	var pos []int
	var keys []string
	var writes map[string]struct{} // the keys written so far in the batch
	flush := false
	for i, args := range cmds {
		if key, ok := getKey(args); ok && !flush {
			if _, w := writes[key]; !w {
				if e, hit := n.s.get(key); hit {
					if !e.neg {
						res[i].Value = bytes.Clone(e.val)
					}
					continue
				}
			}
		}
		ks, f := written(args)
		switch {
		case f:
			flush = true
		case len(ks) > 0:
			if writes == nil {
				writes = map[string]struct{}{}
			}
			for _, k := range ks {
				writes[k] = struct{}{}
			}
			keys = append(keys, ks...)
		}
		fwd = append(fwd, args)
		pos = append(pos, i)
	}
	if len(fwd) == 0 {
		return res
	}
	if flush {
		n.s.void() // no hit of what the batch is about to replace
	}
	got := n.caps.DoMulti(ctx, fwd...)
	switch {
	case flush:
		n.s.flush() // nor of a read that overtook it
	case len(keys) > 0:
		n.s.invalidate(keys...)
	}
	for j, p := range pos {
		res[p] = got[j]
	}
	return res
}

// getKey returns the key of a GET command.
func getKey(args []any) (string, bool) {
	if len(args) != 2 {
		return "", false
	}
	name, ok := args[0].(string)
	if !ok || !strings.EqualFold(name, "GET") {
		return "", false
	}
	switch k := args[1].(type) {
	case string:
		return k, true
	case []byte:
		return string(k), true
	}
	return "", false
}

// Dedicated implements strategy.Dedicator: the inner strategy's
// connection, whose round trips invalidate the keys their writes name
// once they return, as Do does — the commands queued between MULTI and
// EXEC included, whether EXEC runs them or not.
func (n *near) Dedicated(ctx context.Context, keys []string) (strategy.Dedicated, error) {
	if !n.caps.HasDedicated() {
		return nil, fmt.Errorf("%w: dedicated connections on %T", strategy.ErrUnsupported, n.inner)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dd, err := n.caps.Dedicated(ctx, keys)
	if err != nil {
		return nil, err
	}
	return &nearDedicated{d: dd, n: n}, nil
}

type nearDedicated struct {
	d strategy.Dedicated
	n *near
}

func (d *nearDedicated) Slot() int          { return d.d.Slot() }
func (d *nearDedicated) Release(reuse bool) { d.d.Release(reuse) }

func (d *nearDedicated) DoMulti(ctx context.Context, cmds ...[]any) ([]strategy.Result, error) {
	var keys []string
	flush := false
	for _, args := range cmds {
		ks, f := written(args)
		flush = flush || f
		keys = append(keys, ks...)
	}
	if flush {
		d.n.s.void()
	}
	res, err := d.d.DoMulti(ctx, cmds...)
	switch {
	case flush:
		d.n.s.flush()
	case len(keys) > 0:
		d.n.s.invalidate(keys...)
	}
	return res, err
}
