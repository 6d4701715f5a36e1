package sentinel_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/strategy"
)

// resetStats zeroes every data node's INFO commandstats.
func resetStats(t *testing.T, g *launcher.SentinelGroup) {
	t.Helper()
	for _, n := range g.Nodes() {
		c, err := redis.Dial("tcp", n.Addr(), redis.DialReadTimeout(time.Second))
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
func readGets(t *testing.T, g *launcher.SentinelGroup, c backend, n int) map[string]int64 {
	t.Helper()
	resetStats(t, g)
	for i := range n {
		k := fmt.Sprintf("rf:%d", i%100)
		if v, err := c.Get(t.Context(), k); err != nil || string(v) != k {
			t.Fatalf("Get(%q) = %q, %v", k, v, err)
		}
	}
	out := map[string]int64{}
	for _, node := range g.Nodes() {
		addr := node.Addr()
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
// others to the master; after a failover the reads go to the new
// master's replicas. (That a replica killed under reads costs a caller of
// redisx no read, the facade's retry included, is redisx's test.)
func TestReadFromReplicas(t *testing.T) {
	g := launcher.SentinelForTest(t, launcher.SentinelOptions{Replicas: 2, Sentinels: 1})
	ctx := t.Context()
	openFrom := func(t *testing.T, s strategy.Strategy, rf strategy.ReadFrom) backend {
		cfg := config(g)
		cfg.ReadFrom = rf
		return open(t, s, cfg)
	}
	writer := openFrom(t, strategy.Multiplexed{}, strategy.ReadPrimary)
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
			c := openFrom(t, s.s, strategy.ReadReplicaPreferred)
			master := masterAddr(t, g)
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
			if vs, err := c.MGet(ctx, []string{"rf:1", "rf:2"}); err != nil || string(vs[0]) != "rf:1" || string(vs[1]) != "rf:2" {
				t.Errorf("MGet = %q, %v", vs, err)
			}
			if gets(t, master) != 0 {
				t.Errorf("the master served a GET sent with Do")
			}
		})
	}

	t.Run("Nearest", func(t *testing.T) {
		c := openFrom(t, strategy.Multiplexed{}, strategy.ReadNearest)
		served := readGets(t, g, c, 300)
		var sum int64
		for _, n := range served {
			sum += n
		}
		if sum != 300 {
			t.Errorf("the nodes served %d GETs of 300: %v", sum, served)
		}
	})

	t.Run("AfterFailover", func(t *testing.T) {
		c := openFrom(t, strategy.Pool{Size: 4}, strategy.ReadReplicaPreferred)
		m, err := g.Failover(ctx)
		if err != nil {
			t.Fatal(err)
		}
		promoted := m.Addr()
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
}
