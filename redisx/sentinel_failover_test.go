package redisx_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"go.uber.org/goleak"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const (
	workers = 100                   // goroutines of Set and Get per strategy
	pace    = 10 * time.Millisecond // between two rounds of a worker: the servers share the 2 cores
	quiet   = time.Second           // of calls without a failure: recovered
	// guard bounds a recovery in this test: far above the bar (down-after
	// 1 s + failover-timeout 3 s + 2 s), which only the harness measures;
	// a client that does not follow the sentinels never recovers.
	guard = 20 * time.Second
)

// load is workers goroutines of Set then Get, each on a key of its own,
// through one client, recording failures and impossible values.
type load struct {
	name     string
	c        *redisx.Client
	stop     chan struct{}
	wg       sync.WaitGroup
	calls    atomic.Int64
	fails    atomic.Int64
	lastFail atomic.Int64 // UnixNano of the end of the latest failed call
	lastErr  atomic.Pointer[error]
	wrong    atomic.Int64 // reads of a value the worker never wrote
	other    atomic.Int64 // failures that do not wrap ErrConnection
	otherErr atomic.Pointer[error]
}

func startLoad(name string, c *redisx.Client) *load {
	l := &load{name: name, c: c, stop: make(chan struct{})}
	for i := range workers {
		l.wg.Add(1)
		go l.worker(i)
	}
	return l
}

func (l *load) worker(i int) {
	defer l.wg.Done()
	key := fmt.Sprintf("load:%s:%d", l.name, i)
	for n := int64(1); ; n++ {
		select {
		case <-l.stop:
			return
		case <-time.After(pace):
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		l.record(l.c.Set(ctx, key, []byte(strconv.FormatInt(n, 10)), 0))
		v, err := l.c.Get(ctx, key)
		if err == nil || errors.Is(err, redisx.ErrNotFound) {
			// A key nobody writes: a near-cache serves it locally once
			// its invalidation connection is subscribed.
			hot, herr := l.c.Get(ctx, "hot")
			if herr == nil && string(hot) != "hot" {
				l.wrong.Add(1)
			}
			if !errors.Is(herr, redisx.ErrNotFound) {
				l.record(herr)
			}
		}
		if i == 0 && err == nil {
			// The tracer's key, which a near-cache may then hold.
			_, terr := l.c.Get(ctx, "trace")
			if !errors.Is(terr, redisx.ErrNotFound) {
				l.record(terr)
			}
		}
		cancel()
		if errors.Is(err, redisx.ErrNotFound) {
			err = nil // the first writes may be lost with a crashed master
		} else if err == nil {
			if got, perr := strconv.ParseInt(string(v), 10, 64); perr != nil || got < 1 || got > n {
				l.wrong.Add(1)
			}
		}
		l.record(err)
	}
}

func (l *load) record(err error) {
	l.calls.Add(1)
	if err != nil {
		l.fails.Add(1)
		l.lastErr.Store(&err)
		l.lastFail.Store(time.Now().UnixNano())
		// A call may also run out of its second: on a loaded machine the
		// SET before it can take most of it, and the GET then finds its
		// deadline passed while it waits for a pool's connection. What
		// must never come is another kind of error (READONLY from the
		// demoted master, a wrong reply).
		if !errors.Is(err, redisx.ErrConnection) && !errors.Is(err, context.DeadlineExceeded) {
			l.other.Add(1)
			l.otherErr.Store(&err)
		}
	}
}

// recovered waits until l has run quiet without a failure and returns the
// time from since to the end of its last failed call.
func (l *load) recovered(t *testing.T, since time.Time) time.Duration {
	t.Helper()
	deadline := since.Add(guard)
	for time.Now().Before(deadline) {
		last := time.Unix(0, l.lastFail.Load())
		if time.Since(last) >= quiet && time.Since(since) >= quiet {
			return max(last.Sub(since), 0)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: calls still fail %v after the failover began: %v", l.name, guard, *l.lastErr.Load())
	return 0
}

func (l *load) end() {
	close(l.stop)
	l.wg.Wait()
}

// tracer writes an increasing counter to the key "trace" on a connection
// of its own to the master, each write followed by WAIT replicas 100, and
// remembers the last one every replica acknowledged: a write that any
// replica the sentinels may promote holds.
type tracer struct {
	acked atomic.Int64
	done  chan struct{}
}

func startTracer(t *testing.T, addr string, replicas int) *tracer {
	tr := &tracer{done: make(chan struct{})}
	c, err := redis.Dial("tcp", addr, redis.DialReadTimeout(time.Second), redis.DialWriteTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(tr.done)
		defer c.Close()
		for n := int64(1); ; n++ {
			if _, err := c.Do("SET", "trace", n); err != nil {
				return // the master is gone
			}
			got, err := redis.Int(c.Do("WAIT", replicas, 100))
			if err != nil {
				return
			}
			if got >= replicas {
				tr.acked.Store(n)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	return tr
}

// gets returns the calls of GET a data node served since its statistics
// were reset (INFO commandstats).
func gets(t *testing.T, addr string) int64 {
	t.Helper()
	c, err := redis.Dial("tcp", addr, redis.DialReadTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	info, err := redis.String(c.Do("INFO", "commandstats"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_get:calls="); ok {
			n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
			return n
		}
	}
	return 0
}

// clientsNamed counts the connections whose name starts with prefix on
// the data node at addr (CLIENT LIST).
func clientsNamed(t *testing.T, addr, prefix string) int {
	t.Helper()
	c, err := redis.Dial("tcp", addr, redis.DialReadTimeout(time.Second))
	if err != nil {
		return 0 // not running
	}
	defer c.Close()
	list, err := redis.String(c.Do("CLIENT", "LIST"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(list, " name="+prefix)
}

// TestFailoverUnderLoad runs Multiplexed, Pool and Near over Multiplexed,
// each under 100 goroutines of Set and Get, through three failovers of
// one sentinel group: a crash of the master, a manual failover back, and a
// crash with one of the three sentinels down. Each time every strategy
// serves again, no read after the recovery is older than the last write
// every replica acknowledged before the crash, and the demoted master
// serves no GET; after the three, Close leaves no goroutine and no
// connection.
func TestFailoverUnderLoad(t *testing.T) {
	g := launcher.SentinelForTest(t, launcher.SentinelOptions{Replicas: 2, Sentinels: 3})
	ignore := goleak.IgnoreCurrent()
	ctx := t.Context()
	strategies := []struct {
		name string
		s    strategy.Strategy
	}{
		{"multiplexed", strategy.Multiplexed{}},
		{"pool", strategy.Pool{Size: 16}},
		{"near", localcache.Near{}},
	}
	var loads []*load
	for i, s := range strategies {
		o := redisx.Options{Sentinel: &redisx.SentinelOptions{Master: g.Name(), Addrs: g.SentinelAddrs()}}
		o.Strategy = s.s
		o.ClientName = "failover-" + s.name
		c, err := redisx.New(ctx, o)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if i == 0 {
			if err := c.Set(ctx, "hot", []byte("hot"), 0); err != nil {
				t.Fatal(err)
			}
		}
		loads = append(loads, startLoad(s.name, c))
	}
	stopped := false
	stopLoads := func() {
		if !stopped {
			stopped = true
			for _, l := range loads {
				l.end()
				l.c.Close()
			}
		}
	}
	defer stopLoads()
	time.Sleep(300 * time.Millisecond)

	failover := func(t *testing.T, what string, fail func() (old *launcher.Server)) (old *launcher.Server) {
		master, err := g.Master(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tr := startTracer(t, master.Addr(), 2)
		time.Sleep(300 * time.Millisecond)
		start := time.Now()
		old = fail()
		if _, err := g.WaitMaster(ctx, old); err != nil {
			t.Fatal(err)
		}
		<-tr.done
		for _, l := range loads {
			t.Logf("%s: %-11s served again %v after it began", what, l.name, l.recovered(t, start).Round(time.Millisecond))
		}
		// The near-cache serves locally again: its invalidation
		// connection followed the master.
		near := loads[len(loads)-1]
		hits := near.c.Stats().LocalHits
		time.Sleep(200 * time.Millisecond)
		if near.c.Stats().LocalHits == hits {
			t.Errorf("near: no local hit after %s: its invalidation connection did not follow the master", what)
		}
		acked := tr.acked.Load()
		if acked == 0 {
			t.Fatal("no write of the tracer was acknowledged by both replicas")
		}
		if what != "manual failover" {
			// A manual failover does not stop the former master: what
			// was written to it after the promotion is lost.
			for _, l := range loads {
				b, err := l.c.Get(ctx, "trace")
				v, _ := strconv.ParseInt(string(b), 10, 64)
				if err != nil || v < acked {
					t.Errorf("%s: GET trace after %s = %d, %v; want at least %d, the last write both replicas acknowledged", l.name, what, v, err, acked)
				}
			}
		}
		return old
	}
	noReadsFrom := func(t *testing.T, s *launcher.Server) {
		time.Sleep(time.Second) // of load
		if n := gets(t, s.Addr()); n != 0 {
			t.Errorf("the demoted master %s served %d GETs", s.Addr(), n)
		}
	}

	t.Run("Crash", func(t *testing.T) {
		old := failover(t, "crash", func() *launcher.Server {
			old, err := g.KillMaster(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return old
		})
		if err := g.RestartReplica(ctx, old); err != nil {
			t.Fatal(err)
		}
		noReadsFrom(t, old)
	})
	t.Run("ManualFailoverBack", func(t *testing.T) {
		old := failover(t, "manual failover", func() *launcher.Server {
			old, err := g.Master(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := g.Failover(ctx); err != nil {
				t.Fatal(err)
			}
			return old
		})
		noReadsFrom(t, old)
	})
	t.Run("CrashWithASentinelDown", func(t *testing.T) {
		// The first sentinel is the one the clients subscribed to first.
		if err := g.Sentinels()[0].Kill(); err != nil {
			t.Fatal(err)
		}
		failover(t, "crash, 2 sentinels", func() *launcher.Server {
			old, err := g.KillMaster(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return old
		})
	})

	stopLoads()
	for _, l := range loads {
		t.Logf("%s: %d calls, %d failed", l.name, l.calls.Load(), l.fails.Load())
		if n := l.wrong.Load(); n != 0 {
			t.Errorf("%s: %d reads returned a value never written", l.name, n)
		}
		if n := l.other.Load(); n != 0 {
			t.Errorf("%s: %d calls failed with an error other than ErrConnection or their deadline, such as %v", l.name, n, *l.otherErr.Load())
		}
		if s := l.c.Stats(); s.Conns != 0 {
			t.Errorf("%s: Stats().Conns = %d after Close", l.name, s.Conns)
		}
	}
	for _, node := range g.Nodes() {
		addr := node.Addr()
		if n := clientsNamed(t, addr, "failover-"); n != 0 {
			t.Errorf("%s: %d connections of the clients left after Close", addr, n)
		}
	}
	goleak.VerifyNone(t, ignore, goleak.IgnoreAnyFunction("github.com/redisx-go/kit/internal/launcher.(*Server).launch.func1"))
}
