package mux

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/launcher"
)

// TestMuxConnectionsStayWithinLanesAndBigValueConns: under 1000
// goroutines of GETs and SETs of 64 B and 32 KiB values, the zero value
// never has more connections open than its lanes plus bulkConns for big
// values, by its Stats and by the server's CLIENT LIST, sampled
// throughout; Stats tells the lanes, the big-value connections and the
// pipeline depth apart; and every GET gets its own key's value.
func TestMuxConnectionsStayWithinLanesAndBigValueConns(t *testing.T) {
	srv := launcher.Private(t, launcher.Options{})
	cfg := backend.Config{Addrs: []string{srv.Addr()}, DialTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}
	n, err := Open(context.Background(), cfg, srv.Addr(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	bound := n.lanes + bulkConns
	if n.lanes != DefaultLanes() {
		t.Fatalf("the zero value has %d lanes; want DefaultLanes, %d", n.lanes, DefaultLanes())
	}

	const keys = 64
	sizes := []int{64, 32 << 10}
	key := func(size, i int) string { return fmt.Sprint("bound:", size, ":", i) }
	bg := context.Background()
	for _, size := range sizes {
		for i := range keys {
			k := key(size, i)
			if err := n.Set(bg, k, reviewBigValue(k, size), time.Minute); err != nil {
				t.Fatal(err)
			}
		}
	}

	var stop atomic.Bool
	var ops atomic.Int64
	var wg sync.WaitGroup
	for g := range 1000 {
		wg.Go(func() {
			for i := g; !stop.Load(); i++ {
				size := sizes[i%2]
				k := key(size, (i*7+g)%keys)
				// A context that can end, as most callers' can: the
				// paths where callers write and read themselves.
				ctx, cancel := context.WithCancel(bg)
				if i/2%2 == 0 {
					if err := n.Set(ctx, k, reviewBigValue(k, size), time.Minute); err != nil {
						t.Errorf("Set(%s): %v", k, err)
					}
				} else if got, err := n.Get(ctx, k); err != nil || !bytes.Equal(got, reviewBigValue(k, size)) {
					t.Errorf("Get(%s) = %d bytes (%.20q), %v; want its own %d", k, len(got), got, err, size)
				}
				cancel()
				if t.Failed() {
					return
				}
				ops.Add(1)
			}
		})
	}

	// Stats every 10 ms, CLIENT LIST (a redis-cli each) as often as it
	// comes, for 3 s of load.
	var most backend.Stats // the most of each figure seen
	mostListed, samples, lists := 0, 0, 0
	end := time.Now().Add(3 * time.Second)
	listed := make(chan int, 1)
	lister, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer lister.Close()
	go func() {
		defer close(listed)
		r := bufio.NewReader(lister)
		for time.Now().Before(end) && !t.Failed() {
			c, err := listClients(lister, r)
			if err != nil {
				t.Error(err)
				return
			}
			listed <- c
		}
	}()
	tick := time.NewTicker(10 * time.Millisecond)
	for sampling := true; sampling; {
		select {
		case c, ok := <-listed:
			if !ok {
				sampling = false
				break
			}
			lists++
			mostListed = max(mostListed, c)
			if c > bound {
				t.Errorf("the server lists %d connections of the client; want %d lanes + %d for big values at most", c, n.lanes, bulkConns)
			}
		case <-tick.C:
			s := n.Stats()
			samples++
			if s.Conns > bound || s.Lanes > n.lanes || s.BigValueConns > bulkConns || s.Conns != s.Lanes+s.BigValueConns {
				t.Errorf("Stats: Conns %d, Lanes %d, BigValueConns %d; want Lanes (at most %d) + BigValueConns (at most %d) = Conns", s.Conns, s.Lanes, s.BigValueConns, n.lanes, bulkConns)
			}
			if s.PipelineDepth > s.Pending {
				t.Errorf("Stats: PipelineDepth %d > Pending %d", s.PipelineDepth, s.Pending)
			}
			most.Conns = max(most.Conns, s.Conns)
			most.Lanes = max(most.Lanes, s.Lanes)
			most.BigValueConns = max(most.BigValueConns, s.BigValueConns)
			most.PipelineDepth = max(most.PipelineDepth, s.PipelineDepth)
		}
	}
	tick.Stop()
	stop.Store(true)
	wg.Wait()
	t.Logf("%d operations; %d Stats samples, at most: Conns %d, Lanes %d, BigValueConns %d, PipelineDepth %d; %d CLIENT LISTs, at most %d connections",
		ops.Load(), samples, most.Conns, most.Lanes, most.BigValueConns, most.PipelineDepth, lists, mostListed)
	// The load reached what the bound is about: more than one lane, the
	// big-value connections, pipelines.
	if most.Lanes < 2 || most.BigValueConns < 1 || most.PipelineDepth < 2 || lists < 3 {
		t.Errorf("the load did not show: at most %d lanes, %d big-value connections, depth %d, in %d CLIENT LISTs; want 2, 1, 2 and 3 at least", most.Lanes, most.BigValueConns, most.PipelineDepth, lists)
	}
}

// listClients returns the normal clients the server lists (CLIENT LIST)
// on nc, read through r, nc's own excepted.
func listClients(nc net.Conn, r *bufio.Reader) (int, error) {
	if _, err := io.WriteString(nc, "CLIENT LIST TYPE normal\r\n"); err != nil {
		return 0, err
	}
	head, err := r.ReadString('\n')
	if err != nil {
		return 0, err
	}
	size, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "$")))
	if err != nil || !strings.HasPrefix(head, "$") {
		return 0, fmt.Errorf("CLIENT LIST: reply %q", head)
	}
	body := make([]byte, size+2)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, err
	}
	return bytes.Count(body, []byte("cmd=")) - 1, nil
}
