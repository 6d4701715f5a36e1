package strategy_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// refusedSize is the size of a request whose write cannot end before the
// server's reset: more than the client's send buffer may grow to (4 MiB
// with Linux's default net.ipv4.tcp_wmem) and the server's receive
// window, which stays small since the server stops reading it.
const refusedSize = 32 << 20

// TestRefusalBeforeResetReachesCaller: a server that refuses a request as
// it reads it — a bulk over proto-max-bulk-len — replies with its error
// and closes the connection, with a reset, since the rest of the request
// is unread. A request too big for the sockets' buffers meets that reset
// while it is still being written. On every path that writes a request,
// the call returns the server's refusal, which came before the reset, as
// a server error (a redis.Error), not the reset; the commands of a
// pipeline answered before it get their replies.
func TestRefusalBeforeResetReachesCaller(t *testing.T) {
	srv := launcher.Private(t, launcher.Options{Args: []string{"--proto-max-bulk-len", "1mb"}})
	big := bytes.Repeat([]byte("r"), refusedSize)
	hugeKey := string(big)
	calls := []struct {
		name string
		call func(ctx context.Context, t *testing.T, c *redisx.Client) error // the refused command's error
	}{
		{"Set", func(ctx context.Context, t *testing.T, c *redisx.Client) error {
			return c.Set(ctx, "refused:set", big, 0)
		}},
		{"Do", func(ctx context.Context, t *testing.T, c *redisx.Client) error {
			_, err := c.Do(ctx, "SET", "refused:do", big)
			return err
		}},
		{"MSet with a TTL", func(ctx context.Context, t *testing.T, c *redisx.Client) error {
			return c.MSet(ctx, map[string][]byte{"refused:mset": big}, time.Minute)
		}},
		{"DoMulti", func(ctx context.Context, t *testing.T, c *redisx.Client) error {
			res := c.DoMulti(ctx, []any{"SET", "refused:first", "1"}, []any{"SET", "refused:multi", big})
			if res[0].Err != nil {
				t.Errorf("DoMulti: the SET before the refused one = %v; want its reply, OK", res[0].Err)
			}
			return res[1].Err
		}},
		{"DoMulti, the refused command first", func(ctx context.Context, t *testing.T, c *redisx.Client) error {
			res := c.DoMulti(ctx, []any{"SET", "refused:multi", big}, []any{"SET", "refused:last", "1"})
			if !errors.Is(res[1].Err, redisx.ErrConnection) {
				t.Errorf("DoMulti: the SET after the refused one = %v, %v; want a connection error: the server closed the connection before it", res[1].Value, res[1].Err)
			}
			return res[0].Err
		}},
		{"Tx.Do", func(ctx context.Context, t *testing.T, c *redisx.Client) error {
			return c.Watch(ctx, func(tx *redisx.Tx) error {
				_, err := tx.Do(ctx, "SET", "refused:txdo", big)
				return err
			}, "refused:txdo")
		}},
		{"Tx.Exec", func(ctx context.Context, t *testing.T, c *redisx.Client) error {
			return c.Watch(ctx, func(tx *redisx.Tx) error {
				_, err := tx.Exec(ctx, []any{"SET", "refused:tx", big})
				return err
			}, "refused:tx")
		}},
		{"GetWithTTL", func(ctx context.Context, t *testing.T, c *redisx.Client) error {
			tg, ok := c.Backend().(strategy.TTLGetter)
			if !ok {
				t.Skipf("%T has no GetWithTTL", c.Backend())
			}
			_, _, err := tg.GetWithTTL(ctx, hugeKey)
			return err
		}},
	}
	for _, tc := range []struct {
		name string
		s    strategy.Strategy
	}{
		{"pool", strategy.Pool{Size: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := edgeNew(t, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: tc.s, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second})
			for _, call := range calls {
				t.Run(call.name, func(t *testing.T) {
					start := time.Now()
					err := call.call(edgeCtx(t, 20*time.Second), t, c)
					took := time.Since(start)
					var re redis.Error
					if !errors.As(err, &re) || !strings.Contains(err.Error(), "invalid bulk length") || errors.Is(err, redisx.ErrConnection) || strings.Count(err.Error(), "redisx:") != 1 {
						t.Errorf("%s of %d bytes, over proto-max-bulk-len, refused then reset = %v (%T) after %v; want the server's refusal (invalid bulk length) as a redis.Error, with one \"redisx:\" prefix",
							call.name, len(big), err, err, took.Round(time.Millisecond))
					}
					if err := c.Set(edgeCtx(t, 5*time.Second), "refused:after", []byte("v"), time.Minute); err != nil {
						t.Errorf("Set after the refusal: %v", err)
					}
				})
			}
		})
	}
}

// TestSlotGroupedRefusalFailsOnlyTheRefusedAndLaterGroups: a SlotGrouped
// MSet over pooled nodes whose pipeline to one node carries a value over
// proto-max-bulk-len, one group per key (MaxBatch 1). The server runs the
// groups before it, refuses it and closes the connection: the keys it set
// are not reported failed, the refused key is, with the refusal, and the
// keys after it, never run, are reported with a connection error.
func TestSlotGroupedRefusalFailsOnlyTheRefusedAndLaterGroups(t *testing.T) {
	cl := crelCluster(t, launcher.ClusterOptions{Args: []string{"--proto-max-bulk-len", "1mb"}})
	c := crelNew(t, cl, strategy.SlotGrouped{Transport: strategy.Pool{Size: 2}, MaxBatch: 1})
	defer c.Close()
	ctx := edgeCtx(t, 30*time.Second)
	const big = "{refused}big"
	kv := map[string][]byte{big: bytes.Repeat([]byte("r"), refusedSize)}
	for i := range 3 { // planned before the big value and after it: a group's keys go in order
		kv[fmt.Sprintf("{refused}a%d", i)] = []byte("v")
		kv[fmt.Sprintf("{refused}z%d", i)] = []byte("v")
	}
	err := c.MSet(ctx, kv, time.Minute)
	var ne *strategy.NodeError
	if !errors.As(err, &ne) || !strings.Contains(err.Error(), "invalid bulk length") {
		t.Fatalf("MSet with one value over proto-max-bulk-len = %v; want a NodeError with the server's refusal (invalid bulk length)", err)
	}
	failed := map[string]bool{}
	for _, k := range ne.Keys {
		failed[k] = true
	}
	if !failed[big] {
		t.Errorf("failed keys %v; want %q among them", ne.Keys, big)
	}
	for k := range kv {
		if k == big {
			continue
		}
		v, err := c.Get(edgeCtx(t, 5*time.Second), k)
		if err != nil && !errors.Is(err, redisx.ErrNotFound) {
			t.Fatalf("Get(%q): %v", k, err)
		}
		if set := v != nil; set == failed[k] {
			t.Errorf("key %q: set on the server %v, reported failed %v; want exactly the keys not set reported (failed keys %v)", k, set, failed[k], ne.Keys)
		}
	}
}

// TestRefusalAfterAnotherErrorInARunOfSets: an MSet with a TTL, a run of
// SETs, one of whose values is over proto-max-bulk-len, on a server that
// refuses every write it runs (maxmemory 1: OOM). The SETs before the big
// one get their OOM error, the big one the refusal, after which the
// server closes the connection: the call returns the refusal, the last
// reply before the close, not an earlier SET's OOM. (The map's order puts
// the big value first now and then; it then has no SET before it.)
func TestRefusalAfterAnotherErrorInARunOfSets(t *testing.T) {
	srv := launcher.Private(t, launcher.Options{Args: []string{"--proto-max-bulk-len", "1mb", "--maxmemory", "1"}})
	kv := map[string][]byte{"refused:run:big": bytes.Repeat([]byte("r"), refusedSize)}
	for i := range 20 {
		kv[fmt.Sprintf("refused:run:%d", i)] = []byte("v")
	}
	for _, tc := range []struct {
		name string
		s    strategy.Strategy
	}{
		{"pool", strategy.Pool{Size: 2}},
		{"multiplexed", strategy.Multiplexed{Conns: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := edgeNew(t, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: tc.s, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second})
			err := c.MSet(edgeCtx(t, 20*time.Second), kv, time.Minute)
			var re redis.Error
			if !errors.As(err, &re) || !strings.Contains(err.Error(), "invalid bulk length") || errors.Is(err, redisx.ErrConnection) {
				t.Errorf("MSet with a TTL, OOM for each small value, one value over proto-max-bulk-len = %v (%T); want the server's refusal (invalid bulk length) as a redis.Error", err, err)
			}
		})
	}
}
