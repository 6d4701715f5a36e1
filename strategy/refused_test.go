package strategy_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/internal/topology"
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
		{"Get", func(ctx context.Context, t *testing.T, c *redisx.Client) error {
			_, err := c.Get(ctx, hugeKey)
			return err
		}},
		{"Del", func(ctx context.Context, t *testing.T, c *redisx.Client) error {
			_, err := c.Del(ctx, hugeKey)
			return err
		}},
		{"MGet", func(ctx context.Context, t *testing.T, c *redisx.Client) error {
			_, err := c.MGet(ctx, "refused:mget", hugeKey)
			return err
		}},
		{"MSet", func(ctx context.Context, t *testing.T, c *redisx.Client) error {
			return c.MSet(ctx, map[string][]byte{"refused:mset": big}, 0)
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
		{"multiplexed", strategy.Multiplexed{}},
		{"multiplexed, one connection", strategy.Multiplexed{Conns: 1}},
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
// MSet whose pipeline to each master carries a value over
// proto-max-bulk-len, one group per key (MaxBatch 1), over pooled nodes
// and over multiplexed ones (whose pipelines are sent to every node but
// one, then awaited: Send and Await, and Exec for the last). Each server
// runs the groups before the big value, refuses it and closes the
// connection: the keys it set are not reported failed, the refused key
// is, with the refusal, and the keys after it, never run, are reported
// with a connection error.
func TestSlotGroupedRefusalFailsOnlyTheRefusedAndLaterGroups(t *testing.T) {
	cl := crelCluster(t, launcher.ClusterOptions{Args: []string{"--proto-max-bulk-len", "1mb"}})
	tags := refusedTags(t, cl)
	for _, tc := range []struct {
		name      string
		transport strategy.Strategy
	}{
		{"pool", strategy.Pool{Size: 2}},
		{"multiplexed", strategy.Multiplexed{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := crelNew(t, cl, strategy.SlotGrouped{Transport: tc.transport, MaxBatch: 1})
			defer c.Close()
			ctx := edgeCtx(t, 60*time.Second)
			kv := map[string][]byte{}
			var bigs []string
			for _, tag := range tags {
				big := tag + tc.name + ":big"
				bigs = append(bigs, big)
				kv[big] = bytes.Repeat([]byte("r"), refusedSize)
				for i := range 3 { // planned before the big value and after it: a group's keys go in order
					kv[fmt.Sprintf("%s%s:a%d", tag, tc.name, i)] = []byte("v")
					kv[fmt.Sprintf("%s%s:z%d", tag, tc.name, i)] = []byte("v")
				}
			}
			err := c.MSet(ctx, kv, time.Minute)
			failed := map[string]bool{}
			for _, e := range unjoin(err) {
				var ne *strategy.NodeError
				if !errors.As(e, &ne) || !strings.Contains(e.Error(), "invalid bulk length") {
					t.Errorf("MSet with one value over proto-max-bulk-len per master: %v; want a NodeError per master with the server's refusal (invalid bulk length)", e)
					continue
				}
				for _, k := range ne.Keys {
					failed[k] = true
				}
			}
			for _, big := range bigs {
				if !failed[big] {
					t.Errorf("MSet = %v; want %q among the failed keys", err, big)
				}
			}
			for k := range kv {
				if slices.Contains(bigs, k) {
					continue
				}
				v, gerr := c.Get(edgeCtx(t, 5*time.Second), k)
				if gerr != nil && !errors.Is(gerr, redisx.ErrNotFound) {
					t.Fatalf("Get(%q): %v", k, gerr)
				}
				if set := v != nil; set == failed[k] {
					t.Errorf("key %q: set on the server %v, reported failed %v; want exactly the keys not set reported (MSet = %v)", k, set, failed[k], err)
				}
			}
		})
	}
}

// refusedTags returns a hash tag served by each master of cl.
func refusedTags(t *testing.T, cl *launcher.Cluster) []string {
	t.Helper()
	ctx := edgeCtx(t, 10*time.Second)
	masters, err := cl.Masters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[*launcher.Server]bool{}
	var tags []string
	for i := 0; len(tags) < len(masters) && i < 1000; i++ {
		tag := fmt.Sprintf("{refused%d}", i)
		m, err := cl.MasterOf(ctx, topology.Slot(tag))
		if err != nil {
			t.Fatal(err)
		}
		if !seen[m] {
			seen[m] = true
			tags = append(tags, tag)
		}
	}
	if len(tags) < 2 {
		t.Fatalf("hash tags for %d masters: %v; want one per master, at least two", len(masters), tags)
	}
	return tags
}

// unjoin returns the errors err joins (errors.Join), or err alone.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

// TestRefusalAfterAnotherErrorInARunOfSets: an MSet with a TTL, a run of
// SETs, one of whose values is over proto-max-bulk-len, on a server that
// refuses every write it runs (maxmemory 1: OOM). A SET before the big
// one gets its OOM error, the big one the refusal, after which the server
// closes the connection: the call returns the refusal, not an earlier
// SET's OOM — whether the close cuts the run (the big value first: no SET
// before it is read) or the run is whole before it (the big value last).
// The map's order decides which: each of 20 rounds is one or the other,
// so that both are met (all 20 alike: 1 in 2^19).
func TestRefusalAfterAnotherErrorInARunOfSets(t *testing.T) {
	srv := launcher.Private(t, launcher.Options{Args: []string{"--proto-max-bulk-len", "1mb", "--maxmemory", "1"}})
	kv := map[string][]byte{"refused:run:big": bytes.Repeat([]byte("r"), refusedSize), "refused:run:0": []byte("v")}
	for _, tc := range []struct {
		name string
		s    strategy.Strategy
	}{
		{"pool", strategy.Pool{Size: 2}},
		{"multiplexed", strategy.Multiplexed{Conns: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := edgeNew(t, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: tc.s, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second})
			for round := range 20 {
				err := c.MSet(edgeCtx(t, 20*time.Second), kv, time.Minute)
				var re redis.Error
				if !errors.As(err, &re) || !strings.Contains(err.Error(), "invalid bulk length") || errors.Is(err, redisx.ErrConnection) {
					t.Fatalf("round %d: MSet with a TTL, OOM for the small value, the other over proto-max-bulk-len = %v (%T); want the server's refusal (invalid bulk length) as a redis.Error", round, err, err)
				}
			}
		})
	}
}
