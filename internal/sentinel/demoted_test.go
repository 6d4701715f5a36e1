package sentinel_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/strategy"
)

// TestMasterDemotedByHand demotes the master without the sentinels — an
// operator's REPLICAOF, which, unlike a sentinel's, ends no client
// connection — and checks that a write it refuses (READONLY) fails as a
// connection failure that was not executed, that within the second of
// the ROLE check no GET reaches it any more, that a new connection to a
// replica is refused, and that the clients serve again once it is a
// master again.
func TestMasterDemotedByHand(t *testing.T) {
	g := launcher.SentinelForTest(t, launcher.SentinelOptions{Replicas: 1, Sentinels: 1})
	ctx := t.Context()
	master := masterAddr(t, g)
	var replica string
	for _, n := range g.Nodes() {
		if n.Addr() != master {
			replica = n.Addr()
		}
	}
	admin, err := redis.Dial("tcp", master)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()

	t.Run("DialReachesAReplica", func(t *testing.T) {
		cfg := config(g)
		cfg.DialTimeout = time.Second
		nc, err := strategy.Dial(ctx, cfg, replica)
		if err == nil {
			nc.Close()
			t.Fatalf("Dial to the replica %s succeeded with Sentinel set", replica)
		}
		if !errors.Is(err, strategy.ErrConnection) || !strategy.Unsent(err) {
			t.Errorf("Dial to a replica: %v; want an Unsent ErrConnection", err)
		}
	})

	// writer writes once the master is demoted; the readers only read,
	// so that the ROLE check alone finds the demotion.
	openSet := func(s strategy.Strategy) backend {
		c := open(t, s, config(g))
		if err := c.Set(ctx, "k", []byte("v"), 0); err != nil {
			t.Fatal(err)
		}
		return c
	}
	writer := openSet(strategy.Multiplexed{})
	readers := []backend{openSet(strategy.Multiplexed{}), openSet(strategy.Pool{Size: 4})}

	// Demote it to replicate from a port nobody listens on: it keeps its
	// data and refuses writes. (Demoted to replicate from the replica, it
	// made a replication loop that lost k in 2 of 2 runs of the suite.)
	port, err := launcher.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Do("REPLICAOF", "127.0.0.1", port); err != nil {
		t.Fatal(err)
	}
	restored := false
	restore := func() {
		if !restored {
			restored = true
			if _, err := admin.Do("REPLICAOF", "NO", "ONE"); err != nil {
				t.Error(err)
			}
		}
	}
	defer restore()
	// The connection opened before is still up: the write reaches the
	// replica, which refuses it. (Should the ROLE check have replaced the
	// connection in the millisecond since, the dial refuses the replica.)
	err = writer.Set(ctx, "k", []byte("w"), 0)
	if !errors.Is(err, strategy.ErrConnection) || !strategy.Unsent(err) || !strings.Contains(err.Error(), "not a master") {
		t.Errorf("Set on a demoted master: %v; want an Unsent ErrConnection for a server that is not a master", err)
	}
	time.Sleep(1500 * time.Millisecond) // more than the period of the ROLE check
	if _, err := admin.Do("CONFIG", "RESETSTAT"); err != nil {
		t.Fatal(err)
	}
	clients := append(readers, writer)
	for i, c := range clients {
		for range 20 {
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			_, err := c.Get(rctx, "k")
			cancel()
			if !errors.Is(err, strategy.ErrConnection) {
				t.Errorf("client %d: Get with the master demoted = %v; want ErrConnection", i, err)
				break
			}
		}
	}
	if n := gets(t, master); n != 0 {
		t.Errorf("the demoted master served %d GETs", n)
	}

	restore()
	for i, c := range clients {
		deadline := time.Now().Add(5 * time.Second)
		for {
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			v, err := c.Get(rctx, "k")
			cancel()
			if err == nil {
				if string(v) != "v" {
					t.Errorf("client %d: Get = %q, want the value before the demotion", i, v)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("client %d: Get after the master came back = %v", i, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}
