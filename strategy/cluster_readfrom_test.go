package strategy_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// readCalls sums INFO commandstats' calls of each of cmds on servers.
func readCalls(ctx context.Context, t *testing.T, servers []*launcher.Server, cmds ...string) int64 {
	t.Helper()
	var total int64
	for _, s := range servers {
		out, err := s.CLI(ctx, "INFO", "commandstats")
		if err != nil {
			t.Fatalf("INFO commandstats on %s: %v", s.Addr(), err)
		}
		for line := range strings.Lines(out) {
			for _, cmd := range cmds {
				rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":calls=")
				if !ok {
					continue
				}
				n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
				total += n
			}
		}
	}
	return total
}

// TestClusterReadsFromReplicas: with ReadReplicaPreferred every read —
// Get, MGet, Do of a read-only command — goes to a replica and none to a
// master, while writes go to the masters; with a replica killed, reads
// go on without an error (to its master, or the other replicas); with
// ReadNearest reads are answered; on a standalone server without
// Sentinel a ReadFrom other than ReadPrimary is refused.
func TestClusterReadsFromReplicas(t *testing.T) {
	cl := crelCluster(t, launcher.ClusterOptions{Replicas: 1})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	masters, err := cl.Masters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var replicas []*launcher.Server
	for _, m := range masters {
		rs, err := cl.ReplicasOf(ctx, m)
		if err != nil || len(rs) == 0 {
			t.Fatalf("ReplicasOf(%s) = %v, %v", m.Addr(), rs, err)
		}
		replicas = append(replicas, rs...)
	}
	keys := make([]string, 60)
	for i := range keys {
		keys[i] = fmt.Sprintf("readfrom:%d", i)
	}
	for _, tc := range []struct {
		name string
		s    strategy.Strategy
	}{{"multiplexed", strategy.Multiplexed{}}, {"pool", strategy.Pool{Size: 4}}} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := redisx.New(ctx, redisx.Options{Addrs: cl.Addrs(), Strategy: tc.s, ReadFrom: redisx.ReadReplicaPreferred})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for _, k := range keys {
				if err := c.Set(ctx, k, []byte(tc.name+k), 0); err != nil {
					t.Fatal(err)
				}
			}
			// Replication is asynchronous: wait until a replica has the last write.
			deadline := time.Now().Add(5 * time.Second)
			for {
				v, err := c.Get(ctx, keys[len(keys)-1])
				if err == nil && string(v) == tc.name+keys[len(keys)-1] {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the replicas do not have the last write after 5 s: %q, %v", v, err)
				}
				time.Sleep(10 * time.Millisecond)
			}
			readCmds := []string{"get", "mget"}
			mBefore, rBefore := readCalls(ctx, t, masters, readCmds...), readCalls(ctx, t, replicas, readCmds...)
			for i, k := range keys {
				if v, err := c.Get(ctx, k); err != nil || string(v) != tc.name+k {
					t.Fatalf("Get(%s) = %q, %v", k, v, err)
				}
				if v, err := c.Do(ctx, "GET", k); err != nil || string(v.([]byte)) != tc.name+k {
					t.Fatalf("Do GET %s = %v, %v", k, v, err)
				}
				if i%10 == 0 {
					if vs, err := c.MGet(ctx, keys[i:i+10]...); err != nil || len(vs) != 10 || string(vs[0]) != tc.name+k {
						t.Fatalf("MGet = %q, %v", vs, err)
					}
				}
			}
			if n := readCalls(ctx, t, masters, readCmds...) - mBefore; n != 0 {
				t.Errorf("%d reads reached a master; want 0 while every replica is healthy", n)
			}
			if n := readCalls(ctx, t, replicas, readCmds...) - rBefore; n < int64(2*len(keys)) {
				t.Errorf("the replicas served %d reads; want at least %d", n, 2*len(keys))
			}
		})
	}

	// A replica killed: reads go on.
	c, err := redisx.New(ctx, redisx.Options{Addrs: cl.Addrs(), Strategy: strategy.Multiplexed{}, ReadFrom: redisx.ReadReplicaPreferred})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := replicas[0].Kill(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i++ {
		k := keys[i%len(keys)]
		if _, err := c.Get(ctx, k); err != nil {
			t.Fatalf("Get(%s) %d after a replica was killed: %v", k, i, err)
		}
	}
	if err := replicas[0].Restart(ctx); err != nil {
		t.Fatal(err)
	}

	n, err := redisx.New(ctx, redisx.Options{Addrs: cl.Addrs(), ReadFrom: redisx.ReadNearest})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	for i := 0; i < 200; i++ {
		if _, err := n.Get(ctx, keys[i%len(keys)]); err != nil && !errors.Is(err, redisx.ErrNotFound) {
			t.Fatalf("ReadNearest Get: %v", err)
		}
	}

	srv := launcher.Standalone(t, launcher.Options{})
	if _, err := redisx.New(ctx, redisx.Options{Addrs: []string{srv.Addr()}, ReadFrom: redisx.ReadReplicaPreferred}); !errors.Is(err, redisx.ErrInvalidArgument) {
		t.Errorf("ReadFrom on a standalone server without Sentinel: %v; want ErrInvalidArgument", err)
	}
}
