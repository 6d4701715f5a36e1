package redisxtest

// The conformance suite's pipelines: DoMulti.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/redisx"
)

// multiBatch is the size of doMultiMixed's pipeline.
const multiBatch = 10000

// doMultiMixed sends 10,000 mixed commands — SETs, GETs of what the batch
// just set (over stale values cached before), INCRBYs, LPUSHes on string
// keys (WRONGTYPE), GETs of missing keys — in one DoMulti, and checks
// every reply in order: the errors in the middle are their commands'
// alone.
func (s *suite) doMultiMixed(t *testing.T) {
	c, ctx := s.client(t), ctxT(t)
	p := s.key(t, "")
	key := func(i int) string { return fmt.Sprintf("%sk%d", p, i) }
	// Stale values, read once so that a near-cache holds them: the batch's
	// GETs must see its own SETs, not these.
	for i := 0; i < 50; i += 5 {
		if err := c.Set(ctx, key(i), []byte("stale"), time.Minute); err != nil {
			t.Fatalf("Set: %v", err)
		}
		if _, err := c.Get(ctx, key(i)); err != nil {
			t.Fatalf("Get: %v", err)
		}
	}
	cmds := make([][]any, multiBatch)
	for i := range cmds {
		switch i % 5 {
		case 0:
			cmds[i] = []any{"SET", key(i), "v:" + strconv.Itoa(i)}
		case 1:
			cmds[i] = []any{"GET", key(i - 1)}
		case 2:
			cmds[i] = []any{"INCRBY", key(i), i}
		case 3:
			cmds[i] = []any{"LPUSH", key(i - 3), "x"} // a string key: WRONGTYPE
		case 4:
			cmds[i] = []any{"GET", key(i)} // never set
		}
	}
	res := c.DoMulti(ctx, cmds...)
	if len(res) != len(cmds) {
		t.Fatalf("DoMulti returned %d results for %d commands", len(res), len(cmds))
	}
	bad := 0
	fail := func(i int, format string, args ...any) {
		if bad++; bad <= 5 {
			t.Errorf("command %d %q: "+format, append([]any{i, cmds[i]}, args...)...)
		}
	}
	for i, r := range res {
		switch i % 5 {
		case 0:
			if r.Err != nil || r.Value != "OK" {
				fail(i, "= %v, %v; want OK", r.Value, r.Err)
			}
		case 1:
			if v, err := redis.String(r.Value, r.Err); err != nil || v != "v:"+strconv.Itoa(i-1) {
				fail(i, "= %q, %v; want %q", v, err, "v:"+strconv.Itoa(i-1))
			}
		case 2:
			if n, err := redis.Int64(r.Value, r.Err); err != nil || n != int64(i) {
				fail(i, "= %d, %v; want %d", n, err, i)
			}
		case 3:
			var re redis.Error
			if !errors.As(r.Err, &re) || r.Value != nil {
				fail(i, "= %v, %v; want a WRONGTYPE error reply", r.Value, r.Err)
			}
		case 4:
			if r.Err != nil || r.Value != nil {
				fail(i, "= %v, %v; want nil", r.Value, r.Err)
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d results wrong", bad, len(res))
	}
	// The connection is still in step after the errors.
	if v, err := c.Get(ctx, key(5)); err != nil || string(v) != "v:5" {
		t.Fatalf("Get after DoMulti = %q, %v; want %q", v, err, "v:5")
	}
	if res := c.DoMulti(ctx); len(res) != 0 {
		t.Fatalf("DoMulti() = %v; want no results", res)
	}
}

// doMultiRefusesBatch checks that a batch with a command refused before
// sending (MULTI, which a pipeline cannot hold) sends nothing: every
// result holds an error wrapping ErrUnsupported, and the batch's SET did
// not run.
func (s *suite) doMultiRefusesBatch(t *testing.T) {
	c, ctx := s.client(t), ctxT(t)
	k := s.key(t, "k")
	res := c.DoMulti(ctx, []any{"SET", k, "1"}, []any{"MULTI"}, []any{"SET", k, "2"}, []any{"EXEC"})
	for i, r := range res {
		if !errors.Is(r.Err, redisx.ErrUnsupported) {
			t.Errorf("result %d = %v, %v; want an error wrapping ErrUnsupported", i, r.Value, r.Err)
		}
	}
	if _, err := c.Get(ctx, k); !errors.Is(err, redisx.ErrNotFound) {
		t.Errorf("Get(%q) after a refused batch: %v; want ErrNotFound (nothing sent)", k, err)
	}
	res = c.DoMulti(ctx, []any{"SET", k, "1"}, []any{"SET", k, struct{}{}})
	for i, r := range res {
		if !errors.Is(r.Err, redisx.ErrInvalidArgument) {
			t.Errorf("bad argument: result %d = %v, %v; want ErrInvalidArgument", i, r.Value, r.Err)
		}
	}
}

// doMultiStorm is R1 over DoMulti: 1000 goroutines send batches of SETs and
// GETs of random keys, about 10% of them cancelled at random points. Every
// value returned must be its key's.
func (s *suite) doMultiStorm(t *testing.T) {
	c := s.client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prefix := s.key(t, "")
	keys := make([]string, stormKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	var wrong, ok, cancelled atomic.Int64
	var first atomic.Value
	report := func(format string, args ...any) {
		wrong.Add(1)
		first.CompareAndSwap(nil, fmt.Sprintf(format, args...))
	}
	var wg sync.WaitGroup
	for g := 0; g < StormGoroutines; g++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 19))
			for range 10 {
				callCtx, cancel := ctx, context.CancelFunc(func() {})
				if rng.IntN(10) == 0 {
					callCtx, cancel = context.WithTimeout(ctx, time.Duration(rng.IntN(300))*time.Microsecond)
				}
				n := 1 + rng.IntN(8)
				cmds := make([][]any, n)
				for j := range cmds {
					k := keys[rng.IntN(len(keys))]
					if rng.IntN(3) == 0 {
						cmds[j] = []any{"SET", k, stormValue(k)}
					} else {
						cmds[j] = []any{"GET", k}
					}
				}
				for j, r := range c.DoMulti(callCtx, cmds...) {
					k := cmds[j][1].(string)
					switch {
					case errors.Is(r.Err, context.Canceled), errors.Is(r.Err, context.DeadlineExceeded):
						cancelled.Add(1)
					case r.Err != nil:
						report("DoMulti %q: unexpected error %v", cmds[j], r.Err)
					case cmds[j][0] == "SET":
						if r.Value != "OK" {
							report("SET %q = %v", k, r.Value)
						}
						ok.Add(1)
					default:
						if v, isBytes := r.Value.([]byte); r.Value != nil && (!isBytes || string(v) != stormValue(k)) {
							report("GET %q = %q", k, r.Value)
						}
						ok.Add(1)
					}
				}
				cancel()
			}
		}(uint64(g))
	}
	wg.Wait()
	if n := wrong.Load(); n > 0 {
		t.Fatalf("%d replies wrong; first: %v", n, first.Load())
	}
	if ok.Load() == 0 || cancelled.Load() == 0 {
		t.Fatalf("storm exercised nothing: %d ok, %d cancelled", ok.Load(), cancelled.Load())
	}
	t.Logf("%d ok, %d cancelled, 0 misdelivered", ok.Load(), cancelled.Load())
	ctx2, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel2()
	for _, k := range keys[:20] {
		res := c.DoMulti(ctx2, []any{"SET", k, stormValue(k)}, []any{"GET", k})
		if v, err := redis.String(res[1].Value, res[1].Err); err != nil || v != stormValue(k) {
			t.Fatalf("DoMulti SET, GET %q after the storm = %q, %v", k, v, err)
		}
	}
}
