package redisx_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
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
func readGets(t *testing.T, g *launcher.SentinelGroup, c *redisx.Client, n int) map[string]int64 {
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

// TestReadFromAReplicaKilledCostsNoRead: with ReadReplicaPreferred and 2
// replicas, 20 goroutines reading through the client lose no read when
// the replica that served the most is killed under them. (What the
// replica reads do otherwise is internal/sentinel's test.)
func TestReadFromAReplicaKilledCostsNoRead(t *testing.T) {
	g := launcher.SentinelForTest(t, launcher.SentinelOptions{Replicas: 2, Sentinels: 1})
	ctx := t.Context()
	open := func(rf redisx.ReadFrom) *redisx.Client {
		c, err := redisx.New(ctx, redisx.Options{
			Sentinel: &redisx.SentinelOptions{Master: g.Name(), Addrs: g.SentinelAddrs()},
			Strategy: strategy.Multiplexed{}, ReadFrom: rf,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	writer := open(redisx.ReadPrimary)
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
	c := open(redisx.ReadReplicaPreferred)
	m, err := g.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	master := m.Addr()
	// The victim is the replica that served the most reads: the one a
	// client stuck on its first replica would use (Lettuce#3502).
	var victim string
	served := readGets(t, g, c, 200)
	for addr, n := range served {
		if addr != master && (victim == "" || n > served[victim]) {
			victim = addr
		}
	}
	var killed *launcher.Server
	for _, n := range g.Nodes() {
		if n.Addr() == victim {
			killed = n
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
	if err := killed.Kill(); err != nil {
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
	if err := g.RestartReplica(ctx, killed); err != nil {
		t.Fatal(err)
	}
}
