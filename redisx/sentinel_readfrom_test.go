package redisx_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/redisxtest"
	"github.com/redisx-go/kit/strategy"
)

// resetStats zeroes every data node's INFO commandstats.
func resetStats(t *testing.T, g *redisxtest.Sentinel) {
	t.Helper()
	for _, addr := range g.Nodes() {
		c, err := redis.Dial("tcp", addr, redis.DialReadTimeout(time.Second))
		if err != nil {
			continue // killed
		}
		if _, err := c.Do("CONFIG", "RESETSTAT"); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
}

// readGets reads n keys with Get through c and returns the GETs each data
// node served (INFO commandstats, reset first).
func readGets(t *testing.T, g *redisxtest.Sentinel, c *redisx.Client, n int) map[string]int64 {
	t.Helper()
	resetStats(t, g)
	for i := range n {
		k := fmt.Sprintf("rf:%d", i%100)
		if v, err := c.Get(t.Context(), k); err != nil || string(v) != k {
			t.Fatalf("Get(%q) = %q, %v", k, v, err)
		}
	}
	out := map[string]int64{}
	for _, addr := range g.Nodes() {
		if c, err := redis.Dial("tcp", addr); err == nil {
			c.Close()
			out[addr] = gets(t, addr)
		}
	}
	return out
}

// TestReadFromReplicas checks ReadReplicaPreferred with 2 replicas: no
// GET reaches the master while both are healthy, and they share the
// reads within 60/40; read-only commands sent with Do go to them too,
// others to the master; a replica killed under reads costs no read; after
// a failover the reads go to the new master's replicas.
func TestReadFromReplicas(t *testing.T) {
	g := redisxtest.StartSentinel(t, redisxtest.Options{Replicas: 2, Sentinels: 1})
	ctx := t.Context()
	open := func(t *testing.T, s strategy.Strategy, rf redisx.ReadFrom) *redisx.Client {
		o := g.Options()
		o.Strategy = s
		o.ReadFrom = rf
		c, err := redisx.New(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	writer := open(t, strategy.Multiplexed{}, redisx.ReadPrimary)
	for i := range 100 {
		k := fmt.Sprintf("rf:%d", i)
		if err := writer.Set(ctx, k, []byte(k), 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := writer.Do(ctx, "WAIT", 2, 1000); err != nil { // on a connection of its own: a pause, at least
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)

	for _, s := range []struct {
		name string
		s    strategy.Strategy
	}{{"multiplexed", strategy.Multiplexed{}}, {"pool", strategy.Pool{Size: 4}}} {
		t.Run("ReplicaPreferred/"+s.name, func(t *testing.T) {
			c := open(t, s.s, redisx.ReadReplicaPreferred)
			master, err := g.Master()
			if err != nil {
				t.Fatal(err)
			}
			const n = 1000
			served := readGets(t, g, c, n)
			if served[master] != 0 {
				t.Errorf("the master served %d of %d GETs: %v", served[master], n, served)
			}
			for addr, got := range served {
				if addr != master && (got < n*4/10 || got > n*6/10) {
					t.Errorf("replica %s served %d of %d GETs, outside 60/40: %v", addr, got, n, served)
				}
			}
			// Do: a read-only command goes to a replica, a write to the
			// master.
			if v, err := redis.String(c.Do(ctx, "GET", "rf:1")); err != nil || v != "rf:1" {
				t.Errorf("Do GET = %q, %v", v, err)
			}
			if _, err := c.Do(ctx, "SET", "rf:written", "x"); err != nil {
				t.Errorf("Do SET through a client reading from replicas: %v", err)
			}
			if err := c.Set(ctx, "rf:written", []byte("y"), 0); err != nil {
				t.Errorf("Set through a client reading from replicas: %v", err)
			}
			if vs, err := c.MGet(ctx, "rf:1", "rf:2"); err != nil || string(vs[0]) != "rf:1" || string(vs[1]) != "rf:2" {
				t.Errorf("MGet = %q, %v", vs, err)
			}
			if gets(t, master) != 0 {
				t.Errorf("the master served a GET sent with Do")
			}
		})
	}

	t.Run("Nearest", func(t *testing.T) {
		c := open(t, strategy.Multiplexed{}, redisx.ReadNearest)
		served := readGets(t, g, c, 300)
		var sum int64
		for _, n := range served {
			sum += n
		}
		if sum != 300 {
			t.Errorf("the nodes served %d GETs of 300: %v", sum, served)
		}
	})

	t.Run("ReplicaKilled", func(t *testing.T) {
		c := open(t, strategy.Multiplexed{}, redisx.ReadReplicaPreferred)
		master, err := g.Master()
		if err != nil {
			t.Fatal(err)
		}
		// The victim is the replica that served the most reads: the one a
		// client stuck on its first replica would use (Lettuce#3502).
		var victim string
		served := readGets(t, g, c, 200)
		for addr, n := range served {
			if addr != master && (victim == "" || n > served[victim]) {
				victim = addr
			}
		}
		var reads, failed atomic.Int64
		var lastErr atomic.Pointer[error]
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				for j := 0; ; j++ {
					select {
					case <-stop:
						return
					default:
					}
					rctx, cancel := context.WithTimeout(ctx, time.Second)
					_, err := c.Get(rctx, fmt.Sprintf("rf:%d", (i*7+j)%100))
					cancel()
					reads.Add(1)
					if err != nil {
						failed.Add(1)
						lastErr.Store(&err)
					}
					time.Sleep(time.Millisecond)
				}
			})
		}
		time.Sleep(300 * time.Millisecond)
		if err := g.Kill(victim); err != nil {
			t.Fatal(err)
		}
		time.Sleep(700 * time.Millisecond)
		resetStats(t, g)
		time.Sleep(500 * time.Millisecond)
		close(stop)
		wg.Wait()
		if n := failed.Load(); n != 0 {
			t.Errorf("%d of %d reads failed with a replica killed, such as: %v", n, reads.Load(), *lastErr.Load())
		}
		if n := gets(t, master); n != 0 {
			t.Errorf("the master served %d GETs with one replica left", n)
		}
		t.Logf("%d reads, %d failed, a replica killed among them", reads.Load(), failed.Load())
		if err := g.RestartKilled(ctx); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("AfterFailover", func(t *testing.T) {
		c := open(t, strategy.Pool{Size: 4}, redisx.ReadReplicaPreferred)
		promoted, err := g.Failover(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// The replicas are listed again after the switch and checked
		// every second: within a few, no GET reaches the new master.
		deadline := time.Now().Add(8 * time.Second)
		for {
			served := readGets(t, g, c, 200)
			if served[promoted] == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the new master %s still serves GETs: %v", promoted, served)
			}
			time.Sleep(200 * time.Millisecond)
		}
	})

	t.Run("Refused", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			o    redisx.Options
		}{
			{"Near", func() redisx.Options {
				o := g.Options()
				o.Strategy, o.ReadFrom = localcache.Near{}, redisx.ReadReplicaPreferred
				return o
			}()},
			{"SlotGrouped", func() redisx.Options {
				o := g.Options()
				o.Strategy, o.ReadFrom = strategy.SlotGrouped{}, redisx.ReadNearest
				return o
			}()},
			{"no Sentinel", redisx.Options{Addrs: g.Nodes()[:1], ReadFrom: redisx.ReadReplicaPreferred}},
			{"out of range", func() redisx.Options {
				o := g.Options()
				o.ReadFrom = redisx.ReadNearest + 1
				return o
			}()},
		} {
			c, err := redisx.New(ctx, tc.o)
			if err == nil {
				c.Close()
			}
			if !errors.Is(err, redisx.ErrInvalidArgument) {
				t.Errorf("%s: New = %v; want ErrInvalidArgument", tc.name, err)
			}
		}
	})
}
