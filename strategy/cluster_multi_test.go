package strategy_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
	"go.uber.org/goleak"
)

// DoMulti on a cluster: commands grouped by master, MOVED followed for the
// redirected commands alone, cross-slot commands refused before sending.

func TestClusterDoMultiFollowsMovedForRedirectedCommandsOnly(t *testing.T) {
	cl := crelCluster(t, launcher.ClusterOptions{})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	masters, err := cl.Masters(ctx)
	if err != nil || len(masters) < 2 {
		t.Fatalf("Masters = %v, %v", masters, err)
	}
	for _, tc := range crelStrategies() {
		t.Run(tc.name, func(t *testing.T) {
			before := goleak.IgnoreCurrent()
			c := crelNew(t, cl, tc.s)
			defer c.Close()
			// 60 keys over many slots, 20 of them in the slot that moves.
			moving := "{multi-move:" + tc.name + "}"
			slot := redisx.Slot(moving)
			var keys []string
			for i := range 40 {
				keys = append(keys, fmt.Sprintf("multi-move:%s:%d", tc.name, i))
			}
			for i := range 20 {
				keys = append(keys, fmt.Sprintf("%s:%d", moving, i))
			}
			set := make([][]any, len(keys))
			get := make([][]any, len(keys))
			for i, k := range keys {
				set[i] = []any{"SET", k, "v-" + k}
				get[i] = []any{"GET", k}
			}
			for i, r := range c.DoMulti(ctx, set...) {
				if r.Err != nil {
					t.Fatalf("SET %q: %v", keys[i], r.Err)
				}
			}
			from, err := cl.MasterOf(ctx, slot)
			if err != nil {
				t.Fatal(err)
			}
			to := masters[0]
			if to.Addr() == from.Addr() {
				to = masters[1]
			}
			if err := cl.MoveSlot(ctx, slot, to); err != nil {
				t.Fatalf("MoveSlot: %v", err)
			}
			redirects := c.Stats().Redirects
			gets := commandCalls(ctx, t, cl, "get")
			for i, r := range c.DoMulti(ctx, get...) {
				if v, err := redis.String(r.Value, r.Err); err != nil || v != "v-"+keys[i] {
					t.Errorf("GET %q after the move = %q, %v; want %q", keys[i], v, err, "v-"+keys[i])
				}
			}
			if got := c.Stats().Redirects - redirects; got != 20 {
				t.Errorf("%d redirects followed; want 20: one per command of the moved slot, none for the others", got)
			}
			if got := commandCalls(ctx, t, cl, "get") - gets; got != int64(len(keys)) {
				t.Errorf("the masters ran GET %d times; want %d: each command once, the redirected ones again alone", got, len(keys))
			}
			c.Close()
			crelCheckLeaks(t, before)
		})
	}
}

func TestClusterDoMultiRefusesCrossSlotCommand(t *testing.T) {
	cl := sharedCluster.Get(t)
	for _, tc := range crelStrategies() {
		t.Run(tc.name, func(t *testing.T) {
			c := crelNew(t, cl, tc.s)
			defer c.Close()
			ctx := t.Context()
			k := "multi-cross:" + tc.name
			res := c.DoMulti(ctx, []any{"SET", k, "1"}, []any{"MGET", "multi-cross:a", "multi-cross:b"})
			for i, r := range res {
				if !errors.Is(r.Err, strategy.ErrCrossSlot) || !errors.Is(r.Err, redisx.ErrInvalidArgument) {
					t.Errorf("result %d = %v, %v; want ErrCrossSlot and ErrInvalidArgument", i, r.Value, r.Err)
				}
			}
			if _, err := c.Get(ctx, k); !errors.Is(err, redisx.ErrNotFound) {
				t.Errorf("Get(%q) = %v; want ErrNotFound: the batch was sent", k, err)
			}
		})
	}
}

// commandCalls sums, over the cluster's masters, the calls INFO
// commandstats counts for cmd (lower case): the commands the servers ran,
// not those they refused (MOVED, CROSSSLOT).
func commandCalls(ctx context.Context, t *testing.T, cl *launcher.Cluster, cmd string) int64 {
	t.Helper()
	masters, err := cl.Masters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, m := range masters {
		out, err := m.CLI(ctx, "INFO", "commandstats")
		if err != nil {
			t.Fatalf("INFO commandstats on %s: %v", m.Addr(), err)
		}
		for line := range strings.Lines(out) {
			rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":")
			if !ok {
				continue
			}
			for f := range strings.SplitSeq(rest, ",") {
				if n, ok := strings.CutPrefix(f, "calls="); ok {
					v, _ := strconv.ParseInt(n, 10, 64)
					total += v
				}
			}
		}
	}
	return total
}

// TestClusterDoMultiWithAnEndedContextFailsEveryCommand: a batch whose
// context ended before it was sent gets the context's error in every
// result — none left with neither a value nor an error (the storm of the
// conformance suite found SETs answered nil so).
func TestClusterDoMultiWithAnEndedContextFailsEveryCommand(t *testing.T) {
	cl := sharedCluster.Get(t)
	for _, s := range []strategy.Strategy{strategy.Multiplexed{}, strategy.Pool{Size: 2}} {
		b, err := s.Open(t.Context(), strategy.Config{Addrs: cl.Addrs(), DialTimeout: 5 * time.Second, ReadTimeout: 3 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		res := b.(strategy.MultiDoer).DoMulti(ctx, []any{"SET", "ended:a", "1"}, []any{"GET", "ended:b"}, []any{"SET", "ended:{a}c", "2"})
		for i, r := range res {
			if !errors.Is(r.Err, context.Canceled) || !strategy.Unsent(r.Err) {
				t.Errorf("%T: result %d = %v, %v; want the context's error, unsent", s, i, r.Value, r.Err)
			}
		}
		b.Close()
	}
}
