package strategy_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/internal/resp"
	"github.com/redisx-go/kit/internal/topology"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// One retry policy: the attempts of a call on a cluster whose nodes
// refuse it are the Retry policy's, every one counted — the cluster's
// routing does not retry on its own.

// refusal is how a refusingNode turns down a data command.
type refusal int32

const (
	refuseClusterDown refusal = iota // a CLUSTERDOWN reply: not executed
	refuseClose                      // the connection closed once the command is read
)

// refusingNode stands on the port of a killed cluster node: it completes
// the handshake (PING), refuses every data command (GET, SET, MGET) as
// its mode says and counts them, and answers anything else — the slot-map
// reloads' CLUSTER SHARDS — with an error.
type refusingNode struct {
	ln   net.Listener
	mode atomic.Int32
	data atomic.Int64
	wg   sync.WaitGroup

	mu    sync.Mutex
	conns []net.Conn
}

func startRefusingNode(t *testing.T, addr string) *refusingNode {
	t.Helper()
	var ln net.Listener
	var err error
	for range 100 { // the killed server's port may take a moment to free
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	n := &refusingNode{ln: ln}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			n.mu.Lock()
			n.conns = append(n.conns, nc)
			n.mu.Unlock()
			n.wg.Add(1)
			go func() {
				defer n.wg.Done()
				n.serve(nc)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		n.mu.Lock()
		for _, nc := range n.conns {
			nc.Close()
		}
		n.mu.Unlock()
		n.wg.Wait()
	})
	return n
}

func (n *refusingNode) serve(nc net.Conn) {
	defer nc.Close()
	r := resp.NewReader(nc, 4096)
	for {
		v, err := r.ReadAny()
		if err != nil {
			return
		}
		args, _ := v.([]any)
		name := ""
		if len(args) > 0 {
			b, _ := args[0].([]byte)
			name = strings.ToUpper(string(b))
		}
		var out string
		switch name {
		case "PING":
			out = "+PONG\r\n"
		case "GET", "SET", "MGET":
			n.data.Add(1)
			if refusal(n.mode.Load()) == refuseClose {
				return
			}
			out = "-CLUSTERDOWN The cluster is down\r\n"
		default:
			out = "-ERR this node answers nothing but PING\r\n"
		}
		if _, err := nc.Write([]byte(out)); err != nil {
			return
		}
	}
}

// TestClusterAttemptsAreTheRetryPolicys: against a cluster whose nodes
// refuse every call, a call is tried exactly as often as the client's
// Retry policy says — not that number times the cluster's own attempts
// (the two engines nested: 3 × 8 = 24 tries of one Get). A read is tried
// MaxAttempts times; a write refused with CLUSTERDOWN, never executed,
// too; a write whose connection closed after it was sent, once; a
// SlotGrouped MGet, MaxAttempts times on each node.
func TestClusterAttemptsAreTheRetryPolicys(t *testing.T) {
	const attempts = 3
	cl := crelCluster(t, launcher.ClusterOptions{})
	ctx := t.Context()
	masters, err := cl.Masters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// One key per master, for SlotGrouped's MGet.
	var keys []string
	for _, m := range masters {
		for i := 0; ; i++ {
			k := fmt.Sprintf("attempts:%d", i)
			if owner, err := cl.MasterOf(ctx, topology.Slot(k)); err == nil && owner.Addr() == m.Addr() {
				keys = append(keys, k)
				break
			}
		}
	}

	type call struct {
		name  string
		s     strategy.Strategy
		mode  refusal
		do    func(ctx context.Context, c *redisx.Client) error
		tries int // data commands the nodes see, in all
	}
	get := func(ctx context.Context, c *redisx.Client) error { _, err := c.Get(ctx, keys[0]); return err }
	set := func(ctx context.Context, c *redisx.Client) error { return c.Set(ctx, keys[0], []byte("v"), 0) }
	mget := func(ctx context.Context, c *redisx.Client) error { _, err := c.MGet(ctx, keys...); return err }
	var calls []call
	for _, s := range []struct {
		name string
		s    strategy.Strategy
	}{{"multiplexed", strategy.Multiplexed{}}, {"pool", strategy.Pool{Size: 4}}} {
		calls = append(calls,
			call{s.name + "/Get/CLUSTERDOWN", s.s, refuseClusterDown, get, attempts},
			call{s.name + "/Get/closed", s.s, refuseClose, get, attempts},
			call{s.name + "/Set/CLUSTERDOWN", s.s, refuseClusterDown, set, attempts},
			call{s.name + "/Set/closed", s.s, refuseClose, set, 1},
		)
	}
	calls = append(calls,
		call{"slot-grouped/MGet/CLUSTERDOWN", strategy.SlotGrouped{}, refuseClusterDown, mget, attempts * len(keys)},
		call{"slot-grouped/MGet/closed", strategy.SlotGrouped{}, refuseClose, mget, attempts * len(keys)},
	)
	// Every client learns the slot map while the cluster is up.
	clients := make([]*redisx.Client, len(calls))
	for i, tc := range calls {
		c, err := redisx.New(edgeCtx(t, 10*time.Second), redisx.Options{
			Addrs:    cl.Addrs(),
			Strategy: tc.s,
			Retry:    redisx.Retry{MaxAttempts: attempts, MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond},
		})
		if err != nil {
			t.Fatalf("New(%s): %v", tc.name, err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := c.MGet(edgeCtx(t, 5*time.Second), keys...); err != nil {
			t.Fatalf("%s: MGet while the cluster is up: %v", tc.name, err)
		}
		clients[i] = c
	}
	var nodes []*refusingNode
	for _, m := range masters {
		if err := m.Kill(); err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, startRefusingNode(t, m.Addr()))
	}
	// Every client notices its connections closed by the kill (a
	// multiplexed connection's idle watch looks every ReadTimeout/4, a
	// pool looks before it lends one), so that no attempt below is spent
	// on a dead socket.
	time.Sleep(2 * time.Second)
	for i, tc := range calls {
		t.Run(tc.name, func(t *testing.T) {
			for _, n := range nodes {
				n.mode.Store(int32(tc.mode))
				n.data.Store(0)
			}
			c := clients[i]
			before := c.Stats().Retries
			err := tc.do(edgeCtx(t, 10*time.Second), c)
			if err == nil {
				t.Fatalf("%s against refusing nodes succeeded", tc.name)
			}
			var tries int64
			for _, n := range nodes {
				tries += n.data.Load()
			}
			if tries != int64(tc.tries) {
				t.Errorf("%s: the nodes saw %d tries (%v); want %d", tc.name, tries, err, tc.tries)
			}
			perCall := int64(tc.tries)
			if tc.s == (strategy.SlotGrouped{}) {
				perCall /= int64(len(keys))
			}
			if got := c.Stats().Retries - before; got != perCall-1 {
				t.Errorf("%s: Stats.Retries grew by %d; want %d", tc.name, got, perCall-1)
			}
			if !errors.Is(err, redisx.ErrConnection) && !strings.Contains(err.Error(), "CLUSTERDOWN") {
				t.Errorf("%s: %v; want ErrConnection or CLUSTERDOWN", tc.name, err)
			}
		})
	}
}
