package strategy_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redisx-go/kit/redisx"
)

// TestClusterTransactionAcrossSlotsRefusedBeforeSending: a transaction
// whose keys span slots — watched keys, or an Exec's keys outside the
// watched keys' slot, or outside the slot of the first keys named — is
// refused with ErrCrossSlot (and ErrInvalidArgument), and none of its
// WATCH, MULTI, EXEC or SET reaches a master (INFO commandstats).
func TestClusterTransactionAcrossSlotsRefusedBeforeSending(t *testing.T) {
	cl := sharedCluster.Get(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for _, tc := range crelStrategies() {
		t.Run(tc.name, func(t *testing.T) {
			c := crelNew(t, cl, tc.s)
			defer c.Close()
			counts := func() [4]int64 {
				return [4]int64{commandCalls(ctx, t, cl, "watch"), commandCalls(ctx, t, cl, "multi"),
					commandCalls(ctx, t, cl, "exec"), commandCalls(ctx, t, cl, "set")}
			}
			refused := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, redisx.ErrCrossSlot) || !errors.Is(err, redisx.ErrInvalidArgument) {
					t.Errorf("%s = %v; want ErrCrossSlot and ErrInvalidArgument", what, err)
				}
			}
			before := counts()
			called := false
			err := c.Watch(ctx, func(*redisx.Tx) error { called = true; return nil }, "{a}k", "{b}k")
			refused("Watch of keys in two slots", err)
			if called {
				t.Errorf("fn called for a refused Watch")
			}
			err = c.Watch(ctx, func(tx *redisx.Tx) error {
				_, err := tx.Exec(ctx, []any{"SET", "{a}x", "1"}, []any{"SET", "{b}x", "1"})
				return err
			}, "{a}k")
			refused("Exec of a key outside the watched slot", err)
			err = c.Watch(ctx, func(tx *redisx.Tx) error {
				if _, err := tx.Do(ctx, "GET", "{a}x"); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, []any{"SET", "{b}x", "1"})
				return err
			})
			refused("Exec outside the slot of the first read", err)
			after := counts()
			if want := before[0] + 1; after[0] != want || after[1] != before[1] || after[2] != before[2] || after[3] != before[3] {
				t.Errorf("WATCH, MULTI, EXEC, SET calls went from %v to %v; want only the second transaction's WATCH", before, after)
			}
			// The same transaction within one slot runs.
			err = c.Watch(ctx, func(tx *redisx.Tx) error {
				_, err := tx.Exec(ctx, []any{"SET", "{a}x", "1"}, []any{"SET", "{a}y", "2"})
				return err
			}, "{a}k")
			if err != nil {
				t.Errorf("Watch within one slot: %v", err)
			}
		})
	}
}
