package strategy_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// TestWatchDestroysConnectionInDoubt: a transaction's call whose context
// ends mid-way (a BLPOP still blocking) leaves its connection in doubt:
// it is closed, not given back, and the next transaction runs on a clean
// one.
func TestWatchDestroysConnectionInDoubt(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	for _, tc := range []struct {
		name string
		s    strategy.Strategy
	}{
		{"multiplexed", strategy.Multiplexed{Blocking: 1}},
		{"pool", strategy.Pool{Size: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			c, err := redisx.New(ctx, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: tc.s})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			k := "tx-doubt:" + tc.name
			broken := c.Stats().BrokenConns
			err = c.Watch(ctx, func(tx *redisx.Tx) error {
				short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
				defer cancel()
				_, err := tx.Do(short, "BLPOP", k+":list", 5)
				return err
			}, k)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Watch with a call cut short = %v; want DeadlineExceeded", err)
			}
			if got := c.Stats().BrokenConns - broken; got != 1 {
				t.Errorf("BrokenConns grew by %d; want 1: the connection in doubt is closed", got)
			}
			start := time.Now()
			err = c.Watch(ctx, func(tx *redisx.Tx) error {
				_, err := tx.Exec(ctx, []any{"SET", k, "v"})
				return err
			}, k)
			if err != nil {
				t.Fatalf("the next transaction: %v", err)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("the next transaction took %v: it waited for the BLPOP's connection", d)
			}
		})
	}
}
