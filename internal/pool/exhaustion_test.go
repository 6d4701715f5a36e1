package pool_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/strategy"
	"github.com/redisx-go/kit/strategy/strategytest"
)

// TestPoolExhaustion: a caller of a pool whose connections are all lent
// gives up at its deadline, saying so (R5).
func TestPoolExhaustion(t *testing.T) {
	strategytest.PoolExhaustion(t, strategy.Pool{Size: 2}.Open, 2)
}

// TestPoolExhaustionErrorSaysWhy: a caller that finds every connection
// lent gets, at its context's end, an error that wraps the context's
// error and names the pool size, the server and the wait, once prefixed.
func TestPoolExhaustionErrorSaysWhy(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	c := open(t, strategy.Pool{Size: 1}, srv.Addr(), strategy.Config{})
	blockCtx, unblock := context.WithCancel(context.Background())
	blocked := make(chan error, 1)
	go func() {
		_, err := c.Do(blockCtx, "BLPOP", "exhaust:nothing", 0)
		blocked <- err
	}()
	defer func() {
		unblock()
		<-blocked
	}()
	for deadline := time.Now().Add(5 * time.Second); c.Stats().InUse < 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the BLPOP holds no connection after 5 s")
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.Get(ctx, "exhaust:k")
	want := fmt.Sprintf("redisx: pool of 1 connections to %s exhausted: waited ", srv.Addr())
	if !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(fmt.Sprint(err), want) ||
		!strings.HasSuffix(fmt.Sprint(err), ": context deadline exceeded") {
		t.Errorf("Get on an exhausted pool = %v; want DeadlineExceeded, reading %q…", err, want)
	}
	if errors.Is(err, strategy.ErrConnection) || strategy.Unsent(err) {
		t.Errorf("Get on an exhausted pool = %v: a connection failure; want a context error only", err)
	}
	t.Logf("exhausted: %v", err)

	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := c.Get(ctx, "exhaust:k"); !errors.Is(err, context.Canceled) || !strings.Contains(fmt.Sprint(err), "exhausted") {
		t.Errorf("cancelled Get on an exhausted pool = %v; want Canceled, saying the pool was exhausted", err)
	}
}
