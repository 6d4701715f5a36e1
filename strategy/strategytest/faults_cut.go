package strategytest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/faultproxy"
	"github.com/redisx-go/kit/strategy"
)

// Direction is the traffic CutMidPipeline cuts: Downstream, the replies
// from the server to the client, or Upstream, the requests from the
// client to the server.
type Direction int

// The values of Direction.
const (
	Downstream Direction = iota // replies: the cut falls mid-reply
	Upstream                    // requests: the cut falls mid-request
)

// String returns "downstream" or "upstream".
func (d Direction) String() string { return d.proxy().String() }

// proxy is d as the fault proxy takes it.
func (d Direction) proxy() faultproxy.Direction {
	if d == Upstream {
		return faultproxy.Upstream
	}
	return faultproxy.Downstream
}

// CutMidPipeline runs 100 goroutines doing Set and Get of their own keys,
// without deadlines, while the proxy cuts every connection after a few
// kilobytes in dir — mid-reply (Downstream) or mid-request (Upstream) —
// for a moment, then heals. Every call must return within 2 s (a call on a
// cut connection must fail, not wait for the 5 s read timeout) with
// success, ErrNotFound or ErrConnection; no Get may return a value of
// another key; some calls must have failed; and after Heal every
// goroutine must succeed again within 2 s.
func CutMidPipeline(t *testing.T, open Opener, dir Direction) {
	const (
		workers  = 100
		keysPerG = 4
		cutAfter = 4099 // bytes: odd, so that it falls inside a reply or request
		bound    = 2 * time.Second
	)
	e := setup(t, open, strategy.Config{ReadTimeout: 5 * time.Second})

	var (
		okCalls, connErrs atomic.Int64
		bad               atomic.Int64
		firstBad          atomic.Value
		healedAt          atomic.Int64 // UnixNano of Heal; 0 before
		recoveredWorkers  atomic.Int64
		recovered         = make([]atomic.Bool, workers)
	)
	note := func(format string, args ...any) {
		bad.Add(1)
		firstBad.CompareAndSwap(nil, fmt.Sprintf(format, args...))
	}
	stopWorkers := StartWorkers(t, workers, func(g int, r any) {
		note("goroutine %d panicked: %v", g, r)
	}, func(g int, stop <-chan struct{}) {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			key := fmt.Sprintf("cut:%d:%d", g, i%keysPerG)
			start := time.Now()
			var (
				v   []byte
				err error
				op  = "Get"
			)
			if i%2 == 0 {
				op = "Set"
				err = e.c.Set(context.Background(), key, []byte(cutValue(key, i)), time.Minute)
			} else {
				v, err = e.c.Get(context.Background(), key)
			}
			took := time.Since(start)
			if took > bound {
				note("%s(%q) took %v (err %v); want ≤ %v", op, key, took, err, bound)
			}
			switch {
			case err == nil:
				if op == "Get" && !cutValueOf(key, v) {
					note("Get(%q) = %q: a value of another key", key, v)
				}
				okCalls.Add(1)
				if h := healedAt.Load(); h != 0 && start.UnixNano() > h && !recovered[g].Swap(true) {
					recoveredWorkers.Add(1)
				}
			case op == "Get" && errors.Is(err, strategy.ErrNotFound):
			case errors.Is(err, strategy.ErrConnection):
				connErrs.Add(1)
				time.Sleep(5 * time.Millisecond) // back off, as a service would
			default:
				note("%s(%q): unexpected error %v", op, key, err)
			}
		}
	})
	defer stopWorkers()

	waitFor(t, "a successful call before the cut", 3*time.Second, func() bool { return okCalls.Load() > 0 })
	e.p.CutAfter(dir.proxy(), cutAfter)
	waitFor(t, "the proxy to cut a connection and a caller to see it", 3*time.Second, func() bool {
		return e.p.Stats().Cut > 0 && connErrs.Load() > 0
	})
	time.Sleep(200 * time.Millisecond) // new connections are cut too, meanwhile
	e.p.Heal()
	healedAt.Store(time.Now().UnixNano())
	waitFor(t, "every goroutine to succeed after Heal", bound, func() bool { return recoveredWorkers.Load() == workers })
	stopWorkers()

	t.Logf("%v cut after %d bytes: %d connections cut; calls ok=%d connerr=%d", dir, cutAfter, e.p.Stats().Cut, okCalls.Load(), connErrs.Load())
	if n := bad.Load(); n > 0 {
		t.Errorf("%d calls went wrong; first: %v", n, firstBad.Load())
	}
	e.close()
}

// cutValue is the only kind of value CutMidPipeline stores under key: a
// reply delivered to the wrong caller names another key.
func cutValue(key string, seq int) string {
	return fmt.Sprintf("value-of:%s:%d:%s", key, seq, strings.Repeat("p", 64))
}

func cutValueOf(key string, v []byte) bool {
	return strings.HasPrefix(string(v), "value-of:"+key+":") && strings.HasSuffix(string(v), ":"+strings.Repeat("p", 64))
}

// waitFor polls cond until it holds, failing the test after d.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
