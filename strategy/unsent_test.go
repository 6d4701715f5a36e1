package strategy_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestUnsent: a dial that failed is Unsent, and stays so through the
// wrapping a caller adds; a connection failure without the mark, an
// error joining an unsent one with another, and errors of other kinds are
// not.
func TestUnsent(t *testing.T) {
	ctx := context.Background()
	_, dialErr := strategy.Dial(ctx, strategy.Config{DialTimeout: time.Second}, closedAddr(t))
	if dialErr == nil {
		t.Fatal("Dial of a closed port succeeded")
	}
	if !errors.Is(dialErr, strategy.ErrConnection) || strings.Count(dialErr.Error(), "redisx:") != 1 {
		t.Errorf("Dial error = %q; want ErrConnection with one \"redisx:\" prefix", dialErr)
	}
	var opErr *net.OpError
	if !errors.As(dialErr, &opErr) {
		t.Errorf("Dial error %q does not unwrap to the *net.OpError", dialErr)
	}
	sent := fmt.Errorf("%w: 127.0.0.1:1: EOF", strategy.ErrConnection)
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"dial failure", dialErr, true},
		{"wrapped once", fmt.Errorf("get on node x: %w", dialErr), true},
		{"beside the sentinel", fmt.Errorf("%w: node x: %w", strategy.ErrConnection, dialErr), true},
		{"joined with another unsent", errors.Join(dialErr, fmt.Errorf("node y: %w", dialErr)), true},
		// One node's part of a multi-node call: the other nodes' parts
		// may have been applied, and are not in the error.
		{"in a NodeError", &strategy.NodeError{Node: "x", Err: dialErr}, false},
		{"joined NodeErrors", errors.Join(&strategy.NodeError{Node: "x", Err: dialErr}, &strategy.NodeError{Node: "y", Err: dialErr}), false},
		{"joined with a sent one", errors.Join(dialErr, sent), false},
		{"a connection failure", sent, false},
		{"the bare sentinel", strategy.ErrConnection, false},
		{"a deadline", context.DeadlineExceeded, false},
		{"nil", nil, false},
	} {
		if got := strategy.Unsent(tc.err); got != tc.want {
			t.Errorf("Unsent(%s: %v) = %t; want %t", tc.name, tc.err, got, tc.want)
		}
	}
}

// TestTransportsMarkUnsent: on each transport, a call made while the
// server is down and its connection is known broken fails with an Unsent
// ErrConnection; a call whose connection broke after its request was
// written does not (see redisx's retry tests for the latter through a
// proxy).
func TestTransportsMarkUnsent(t *testing.T) {
	if launcher.External() {
		t.Skip("kills the server")
	}
	for _, tc := range edgeTransports() {
		t.Run(tc.name, func(t *testing.T) {
			srv := launcher.Private(t, launcher.Options{})
			c := edgeNew(t, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: tc.s, DialTimeout: time.Second})
			if err := c.Set(edgeCtx(t, 5*time.Second), "unsent:k", []byte("v"), time.Minute); err != nil {
				t.Fatal(err)
			}
			if err := srv.Kill(); err != nil {
				t.Fatal(err)
			}
			// The first call may meet the dead connection after its write
			// (a pooled one is not watched): it is not Unsent, and it
			// discards the connection.
			for deadline := time.Now().Add(5 * time.Second); c.Stats().BrokenConns == 0; time.Sleep(5 * time.Millisecond) {
				if tc.name == "pool" {
					// Unless the pool found the connection dead before
					// lending it (its idle check) and the Get dialled.
					dialErrs := c.Stats().DialErrors
					_, err := c.Get(edgeCtx(t, time.Second), "unsent:k")
					if strategy.Unsent(err) && c.Stats().DialErrors == dialErrs {
						t.Errorf("Get on the dead pooled connection = %v: Unsent, but its request was written", err)
					}
				}
				if time.Now().After(deadline) {
					t.Fatal("the dead connection is not noticed after 5 s")
				}
			}
			err := c.Set(edgeCtx(t, 2*time.Second), "unsent:k", []byte("v"), time.Minute)
			if !errors.Is(err, redisx.ErrConnection) || !strategy.Unsent(err) {
				t.Errorf("Set with the server down and its connection known broken = %v; want an Unsent ErrConnection", err)
			}
			if _, err := c.Do(edgeCtx(t, 2*time.Second), "PING"); !strategy.Unsent(err) {
				t.Errorf("Do(PING) with the server down = %v; want an Unsent error", err)
			}
		})
	}
}
