package mux

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/launcher"
)

// clientCount is the number of normal clients the server sees (CLIENT
// LIST), the test's own redis-cli excepted.
func clientCount(t *testing.T, srv *launcher.Server) int {
	t.Helper()
	out, err := srv.CLI(context.Background(), "CLIENT", "LIST", "TYPE", "normal")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(out, "cmd=") - 1
}

// TestMuxLanesOneCallerOneConnection: the adaptive lanes hold one
// connection while one goroutine calls, whatever the call: a caller woken
// by its reply finds its lane free again.
func TestMuxLanesOneCallerOneConnection(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	n := openMuxNode(t, srv.Addr(), Options{})
	ctx := context.Background()
	for i := range 3000 {
		k := fmt.Sprint("one:", i%50)
		var err error
		switch i % 5 {
		case 0:
			err = n.Set(ctx, k, []byte("v"), time.Minute)
		case 1:
			_, err = n.MGet(ctx, []string{k, "one:x"})
		case 2:
			_, err = n.Do(ctx, "INCR", "one:counter")
		case 3:
			_, err = n.Del(ctx, "one:gone")
		default:
			_, err = n.Get(ctx, k)
		}
		if err != nil && !strings.Contains(err.Error(), "not found") {
			t.Fatal(err)
		}
	}
	if s := n.Stats(); s.Lanes != 1 || s.Conns != 1 || s.Dials != 1 {
		t.Errorf("after 3000 calls from one goroutine: Lanes %d, Conns %d, Dials %d; want 1 each", s.Lanes, s.Conns, s.Dials)
	}
	if got := clientCount(t, srv); got != 1 {
		t.Errorf("the server sees %d connections; want 1", got)
	}
}

// TestMuxLanesGrowWithLoadAndCloseWhenIdle: callers that find every lane
// busy open more, never beyond Lanes (plus the connections of big
// values); lanes left idle are closed, all but one, without failing a
// call, and calls go on over the lanes that remain.
func TestMuxLanesGrowWithLoadAndCloseWhenIdle(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	n := muxReviewNode(t, srv.Addr(), nil, Options{Lanes: 3}, 100*time.Millisecond) // the watchdog ticks every 25 ms
	n.laneIdle = 300 * time.Millisecond
	ctx := context.Background()
	big := make([]byte, bigValue)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	stop := make(chan struct{})
	maxLanes, maxConns := 0, 0
	for g := range 16 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var err error
				if g == 0 && i%10 == 0 {
					err = n.Set(ctx, "lanes:big", big, time.Minute)
				} else {
					err = n.Set(ctx, fmt.Sprint("lanes:", g), []byte("v"), time.Minute)
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	for range 50 {
		time.Sleep(10 * time.Millisecond)
		s := n.Stats()
		maxLanes, maxConns = max(maxLanes, s.Lanes), max(maxConns, s.Conns)
	}
	close(stop)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d calls failed under load, the first: %v", len(errs), errs[0])
	}
	if maxLanes < 2 || maxLanes > 3 || maxConns > 3+bulkConns {
		t.Errorf("16 goroutines on Lanes: 3: at most %d lanes and %d connections open; want 2..3 lanes, at most %d connections", maxLanes, maxConns, 3+bulkConns)
	}
	// Idle: the lanes but lane 0 close (the bulk connections stay).
	deadline := time.Now().Add(5 * time.Second)
	for n.Stats().Lanes != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("Stats().Lanes = %d 5 s after the load ended; want 1 once idle for %v", n.Stats().Lanes, n.laneIdle)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if b := n.Stats().BrokenConns; b != 0 {
		t.Errorf("BrokenConns = %d: closing idle lanes counted as failures", b)
	}
	// Load again: the lanes open again, every call succeeds.
	var wg2 sync.WaitGroup
	for g := range 8 {
		wg2.Go(func() {
			for i := range 300 {
				k := fmt.Sprint("lanes:again:", g, ":", i)
				if err := n.Set(ctx, k, []byte(k), time.Minute); err != nil {
					t.Error(err)
					return
				}
				if v, err := n.Get(ctx, k); err != nil || string(v) != k {
					t.Errorf("Get(%s) = %q, %v", k, v, err)
					return
				}
			}
		})
	}
	wg2.Wait()
}

// TestMuxLanesClosingRacesCallers: lanes closed as if idle while callers
// are on them and pick them (closeIdle called every couple of
// millisecond under load) never fail a call nor deliver a reply to the
// wrong caller: a lane taken out of use is closed only once its calls are
// answered, and a caller that picked it picks again.
func TestMuxLanesClosingRacesCallers(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	n := openMuxNode(t, srv.Addr(), Options{Lanes: 4})
	ctx := context.Background()
	stop := make(chan struct{})
	closer := make(chan struct{})
	go func() {
		defer close(closer)
		for {
			select {
			case <-stop:
				return
			case <-time.After(500 * time.Microsecond):
			}
			for i := 1; i < n.lanes; i++ {
				if c := n.slots[i].cur.Load(); c != nil {
					n.closeIdle(i, c)
				}
			}
		}
	}()
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			for i := range 1500 {
				k := fmt.Sprint("race:", g, ":", i%7)
				want := fmt.Sprint(g, ":", i)
				if err := n.Set(ctx, k, []byte(want), time.Minute); err != nil {
					t.Error(err)
					return
				}
				if v, err := n.Get(ctx, k); err != nil || string(v) != want {
					t.Errorf("Get(%s) = %q, %v; want %q", k, v, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	<-closer
	if s := n.Stats(); s.Dials < 6 || s.BrokenConns != 0 {
		t.Errorf("Dials %d, BrokenConns %d: want lanes closed and opened again (6 dials or more), none failed", s.Dials, s.BrokenConns)
	}
}

// slotPushes returns the calls queued so far on each of n's connections
// from slot i to slot j, exclusive (0 for one not open).
func slotPushes(n *Node, i, j int) []uint64 {
	out := make([]uint64, j-i)
	for k := range out {
		if c := n.slots[i+k].cur.Load(); c != nil {
			c.mu.Lock()
			out[k] = c.pushes
			c.mu.Unlock()
		}
	}
	return out
}

// loadLanes runs goroutines callers of Get(key) on n, checking each reply
// against want, and returns the calls each lane queued during window,
// after a warm-up.
func loadLanes(t *testing.T, n *Node, goroutines int, key, want string, window time.Duration) []uint64 {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range goroutines {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if v, err := n.Get(ctx, key); err != nil || string(v) != want {
					t.Errorf("Get(%s) = %d bytes, %v; want %d", key, len(v), err, len(want))
					return
				}
			}
		})
	}
	time.Sleep(200 * time.Millisecond) // the lanes open
	before := slotPushes(n, 0, n.lanes)
	time.Sleep(window)
	after := slotPushes(n, 0, n.lanes)
	close(stop)
	wg.Wait()
	for i := range after {
		after[i] -= min(before[i], after[i]) // a lane replaced meanwhile counts from 0
	}
	return after
}

// TestMuxLanesUnderLoadKeepToOnePipeline: under load, the calls in flight
// dip each time a batch of replies is read, before their callers send
// again; callers then join the busy lane's pipeline rather than take an
// idle lane for one command each (a write and a read of its own, for the
// client and the server). Small replies: the lanes beside the busiest
// carry under 1% of the calls, in the best of three windows (a stall of
// the test's goroutines on a shared machine can make a window calm).
func TestMuxLanesUnderLoadKeepToOnePipeline(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	n := openMuxNode(t, srv.Addr(), Options{Lanes: 4})
	if err := n.Set(context.Background(), "pipeline:k", []byte("v"), time.Minute); err != nil {
		t.Fatal(err)
	}
	var seen [][]uint64
	for range 3 {
		pushes := loadLanes(t, n, 64, "pipeline:k", "v", 300*time.Millisecond)
		var total, busiest uint64
		for _, p := range pushes {
			total += p
			busiest = max(busiest, p)
		}
		if total > 0 && (total-busiest)*100 <= total {
			return
		}
		seen = append(seen, pushes)
	}
	t.Errorf("64 goroutines, small replies: calls per lane %v in three windows; want under 1%% of them beside the busiest lane", seen)
}

// TestMuxLanesPipelineAtModerateLoad: at a moderate load (2.5 callers per
// lane), calls join one pipeline, as at a high one, rather than spread
// over the lanes a command per write: the busiest lane carries three
// quarters of them or more, in the best of three windows.
func TestMuxLanesPipelineAtModerateLoad(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	n := openMuxNode(t, srv.Addr(), Options{Lanes: 4})
	if err := n.Set(context.Background(), "moderate:k", []byte("v"), time.Minute); err != nil {
		t.Fatal(err)
	}
	var seen [][]uint64
	for range 3 {
		pushes := loadLanes(t, n, 10, "moderate:k", "v", 300*time.Millisecond)
		var total, busiest uint64
		for _, p := range pushes {
			total += p
			busiest = max(busiest, p)
		}
		if total > 0 && busiest*4 >= total*3 {
			return
		}
		seen = append(seen, pushes)
	}
	t.Errorf("10 goroutines on 4 lanes: calls per lane %v in three windows; want three quarters or more on the busiest lane", seen)
}

// TestMuxLoadDecidesWhenWritersGather: the load (callers per lane) above
// which the writer gathers batches; a node of fixed connections always
// gathers.
func TestMuxLoadDecidesWhenWritersGather(t *testing.T) {
	n := &Node{lanes: 2, adaptive: true, gatherAbove: poolLoad}
	for _, tc := range []struct {
		callers int64
		gathers bool
	}{
		{0, false}, {1, false}, {6, false}, // up to poolLoad (3) per lane
		{7, true}, {8, true}, {16, true}, {1000, true},
	} {
		n.routing.callers.Store(tc.callers)
		if got := n.gathers(); got != tc.gathers {
			t.Errorf("%d callers on 2 lanes: gathers() = %v; want %v", tc.callers, got, tc.gathers)
		}
	}
	fixed := &Node{lanes: 2}
	if !fixed.gathers() {
		t.Errorf("fixed connections: gathers() = false; want true")
	}
}

// TestMuxLanesSpillWhenTheServerWouldMakeCallsWait: replies so big that
// the server writes one per connection per turn of its event loop
// (depthCap 1) spread over every lane, each carrying a share.
func TestMuxLanesSpillWhenTheServerWouldMakeCallsWait(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	n := openMuxNode(t, srv.Addr(), Options{Lanes: 4})
	big := strings.Repeat("b", 40<<10)
	if err := n.Set(context.Background(), "spill:k", []byte(big), time.Minute); err != nil {
		t.Fatal(err)
	}
	pushes := loadLanes(t, n, 12, "spill:k", big, 300*time.Millisecond)
	var total uint64
	for _, p := range pushes {
		total += p
	}
	for _, p := range pushes {
		if total == 0 || p*20 < total {
			t.Errorf("12 goroutines, 40 KiB replies: calls per lane %v; want each of the 4 lanes to carry 5%% or more", pushes)
			break
		}
	}
}

// TestMuxBigSetsTakeTheirConnectionsAsAPoolWould: SETs of big values use
// one of their connections while one goroutine sends them, whatever the
// keys, and all of them, evenly, under load; every value is stored whole.
func TestMuxBigSetsTakeTheirConnectionsAsAPoolWould(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	n := openMuxNode(t, srv.Addr(), Options{Lanes: 2})
	ctx := context.Background()
	big := func(k string) []byte { return []byte(strings.Repeat(k, bigValue/len(k)+1)) }
	for i := range 40 {
		k := fmt.Sprint("bulk:one:", i)
		if err := n.Set(ctx, k, big(k), time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if s := n.Stats(); s.Conns != 2 {
		t.Errorf("40 big SETs from one goroutine: %d connections; want 2 (lane 0 and one for big values)", s.Conns)
	}
	var wg sync.WaitGroup
	for g := range 12 {
		wg.Go(func() {
			for i := range 60 {
				k := fmt.Sprint("bulk:many:", g, ":", i%5)
				if err := n.Set(ctx, k, big(k), time.Minute); err != nil {
					t.Error(err)
					return
				}
				if v, err := n.Get(ctx, k); err != nil || string(v) != string(big(k)) {
					t.Errorf("Get(%s) = %d bytes, %v; want its own %d", k, len(v), err, len(big(k)))
					return
				}
			}
		})
	}
	wg.Wait()
	calls := slotPushes(n, n.lanes, len(n.slots))
	for _, p := range calls {
		if p < 720/bulkConns/4 {
			t.Errorf("12 goroutines' 720 big SETs over the %d connections for big values: %v each; want every one to carry a share", bulkConns, calls)
			break
		}
	}
}

// TestMuxBulkDialFailureBacksOff: a connection for big values that cannot
// be dialled is not dialled again by every big SET that finds the open
// ones busy: for growBackoff they share the open ones instead.
func TestMuxBulkDialFailureBacksOff(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	n := openMuxNode(t, srv.Addr(), Options{Lanes: 1})
	ctx := context.Background()
	if err := n.Set(ctx, "backoff:big", make([]byte, bigValue), time.Minute); err != nil {
		t.Fatal(err)
	}
	first := n.slots[n.lanes].cur.Load()
	if first == nil {
		t.Fatal("a big SET dialled no connection for big values")
	}
	first.pending.Add(1) // busy, as if a call were in flight
	defer first.pending.Add(-1)
	if i, _ := n.pickBulk(); i != n.lanes+1 {
		t.Fatalf("pickBulk with the open connection busy = %d; want %d, the next one, to be dialled", i, n.lanes+1)
	}
	// The next dial fails: nobody listens at the address any more.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	live := n.addr
	n.addr = l.Addr().String()
	l.Close()
	_, err = n.conn(ctx, n.lanes+1)
	n.addr = live
	if err == nil {
		t.Fatal("a dial to a closed port succeeded")
	}
	if i, _ := n.pickBulk(); i != n.lanes {
		t.Errorf("pickBulk just after a failed dial = %d; want %d, the busy open connection", i, n.lanes)
	}
	n.routing.bulkAfter.Store(time.Now().UnixNano())
	if i, _ := n.pickBulk(); i != n.lanes+1 {
		t.Errorf("pickBulk after the backoff = %d; want %d, dialled again", i, n.lanes+1)
	}
}

// TestDepthCapKeepsSmallCallsOnFewLanes: the depth cap, from a lane's
// bytes per call, lets 64-byte SETs pipeline about 600 deep (so 1000
// callers share two lanes, not four), keeps 64-byte GETs near 460, and
// sends every 40 KiB reply to a lane of its own.
func TestDepthCapKeepsSmallCallsOnFewLanes(t *testing.T) {
	const calls = 1000
	for _, tc := range []struct {
		name        string
		tx, rx      int64 // bytes per call
		least, most int64
	}{
		{"SET of 64 B", 101, 5, 550, 700},
		{"GET of 64 B", 30, 71, 400, 600},
		{"GET of 40 KiB", 30, 40<<10 + 9, 1, 1},
	} {
		c := &muxConn{}
		c.sizes.tx.Store(tc.tx * calls)
		c.sizes.rx.Store(tc.rx * calls)
		c.sizes.answered.Store(calls)
		if got := c.depthCap(); got < tc.least || got > tc.most {
			t.Errorf("%s: depthCap() = %d; want %d to %d", tc.name, got, tc.least, tc.most)
		}
	}
	if got := (&muxConn{}).depthCap(); got < calls {
		t.Errorf("no call answered yet: depthCap() = %d; want no cap below %d", got, calls)
	}
}
