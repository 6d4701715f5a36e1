package redisxtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisx-go/kit/redisx"
)

// StormGoroutines and StormOps size the cancellation storm (R1).
const (
	StormGoroutines = 1000
	StormOps        = 40
	stormKeys       = 500
)

// stormValue is the only value ever stored under key: a reply delivered to
// the wrong caller shows up as a value that names another key. Lengths
// vary with the key so that a desynchronised stream cannot pass either.
func stormValue(key string) string {
	return "value-of:" + key + ":" + strings.Repeat("x", len(key)%17)
}

// cancellationStorm is R1: 1000 goroutines on random keys, about 10% of
// the calls cancelled at random points. Zero replies may reach the wrong
// caller, and the client must still answer correctly afterwards.
func (s *suite) cancellationStorm(t *testing.T) {
	c := s.client(t)
	// The storm's own calls carry their deadlines; the suite-wide 10 s
	// context would turn a slow machine into a false failure.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prefix := s.key(t, "")
	keys := make([]string, stormKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	var wrong, ok, cancelled, other atomic.Int64
	var firstWrong atomic.Value
	report := func(format string, args ...any) {
		wrong.Add(1)
		firstWrong.CompareAndSwap(nil, fmt.Sprintf(format, args...))
	}
	check := func(k string, v []byte, err error) {
		switch {
		case err == nil:
			if string(v) != stormValue(k) {
				report("Get(%q) = %q", k, v)
				return
			}
			ok.Add(1)
		case errors.Is(err, redisx.ErrNotFound):
			ok.Add(1)
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			cancelled.Add(1)
		default:
			other.Add(1)
			firstWrong.CompareAndSwap(nil, "unexpected error: "+err.Error())
		}
	}
	var wg sync.WaitGroup
	for g := 0; g < StormGoroutines; g++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 7))
			for i := 0; i < StormOps; i++ {
				callCtx, cancel := ctx, context.CancelFunc(func() {})
				if rng.IntN(10) == 0 {
					// Cancel at a random point: before sending, while
					// queued, or while the reply is on its way.
					callCtx, cancel = context.WithTimeout(ctx, time.Duration(rng.IntN(300))*time.Microsecond)
				}
				k := keys[rng.IntN(len(keys))]
				switch op := rng.IntN(10); {
				case op < 3:
					err := c.Set(callCtx, k, []byte(stormValue(k)), time.Minute)
					check(k, []byte(stormValue(k)), err)
				case op < 8:
					v, err := c.Get(callCtx, k)
					check(k, v, err)
				default:
					k2 := keys[rng.IntN(len(keys))]
					vs, err := c.MGet(callCtx, k, k2)
					if err != nil {
						check(k, nil, err)
						break
					}
					for j, kk := range []string{k, k2} {
						if vs[j] != nil && string(vs[j]) != stormValue(kk) {
							report("MGet(%q)[%d] = %q", kk, j, vs[j])
						}
					}
					ok.Add(1)
				}
				cancel()
			}
		}(uint64(g))
	}
	wg.Wait()
	if n := wrong.Load(); n > 0 {
		t.Fatalf("%d replies reached the wrong caller; first: %v", n, firstWrong.Load())
	}
	if n := other.Load(); n > 0 {
		t.Fatalf("%d calls failed with errors other than cancellation; first: %v", n, firstWrong.Load())
	}
	if ok.Load() == 0 || cancelled.Load() == 0 {
		t.Fatalf("storm exercised nothing: %d ok, %d cancelled", ok.Load(), cancelled.Load())
	}
	t.Logf("%d ok, %d cancelled, 0 misdelivered", ok.Load(), cancelled.Load())
	// The client still answers correctly after the storm.
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, k := range keys[:50] {
		if err := c.Set(ctx, k, []byte(stormValue(k)), time.Minute); err != nil {
			t.Fatalf("Set after storm: %v", err)
		}
		if v, err := c.Get(ctx, k); err != nil || string(v) != stormValue(k) {
			t.Fatalf("Get(%q) after storm = %q, %v", k, v, err)
		}
	}
}
