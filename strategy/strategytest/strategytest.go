// Package strategytest checks a strategy.Backend against the contract of
// package strategy, on real redis-server processes it starts on loopback.
// [RunBackend] runs every check for the backends an Opener opens — a
// strategy of this module, a decorator such as localcache.Near, or a
// strategy of your own — beside their own tests. The checks call the
// Backend directly, not through redisx.Client, so that what they find is
// the Backend's: its handling of a closed backend, of a context that ends,
// of a server that stalls or a connection cut under it. (The facade-level
// suite for users is redisxtest.RunConformance.) [RunContractOn] runs the
// checks that need no proxy on servers of the caller's own: a Redis
// Cluster, a master behind Sentinel.
//
// The fault scenarios (bar R5 of the design) run through an
// internal/faultproxy proxy between the backend and the server: a slow
// server, a half-open connection, a connection cut mid-pipeline, an
// exhausted pool, and Close with a call in flight. Every scenario closes
// its backend and fails if a goroutine of it is left behind.
//
// In a strategy's tests:
//
//	func TestBackend(t *testing.T) {
//		strategytest.RunBackend(t, mystrategy.Strategy{}.Open)
//	}
//
// A redis-server binary must be on PATH; without one the checks fail
// (set REDISX_SKIP_NO_REDIS=1 to skip them instead).
package strategytest

import (
	"context"
	"testing"
	"time"

	"github.com/redisx-go/kit/strategy"
	"go.uber.org/goleak"
)

// Opener opens a backend with cfg: a strategy's Open method value, as
// strategy.Multiplexed{}.Open.
type Opener func(ctx context.Context, cfg strategy.Config) (strategy.Backend, error)

// RunBackend runs every check of the package for the backends open
// opens, each as a subtest: RunContract's, then the fault scenarios but
// pool exhaustion (PoolExhaustion needs the pool's size).
func RunBackend(t *testing.T, open Opener) {
	RunContract(t, open)
	t.Run("Faults/SlowServer", func(t *testing.T) { SlowServer(t, open) })
	t.Run("Faults/HalfOpen", func(t *testing.T) { HalfOpen(t, open) })
	t.Run("Faults/HalfOpenAfterLongDeadline", func(t *testing.T) { HalfOpenAfterLongDeadline(t, open) })
	for _, dir := range []Direction{Downstream, Upstream} {
		t.Run("Faults/CutMidPipeline/"+dir.String(), func(t *testing.T) { CutMidPipeline(t, open, dir) })
	}
	t.Run("Faults/CloseWithBlockedCall/blpop", func(t *testing.T) { CloseWithBlockedCall(t, open, false) })
	t.Run("Faults/CloseWithBlockedCall/blackhole", func(t *testing.T) { CloseWithBlockedCall(t, open, true) })
}

// RunContract runs the checks of the contract itself, with no fault, for
// a Backend of any capabilities (the fault scenarios need Do for their
// blocking commands): the cache operations (a value read back is the
// caller's, a missing key is ErrNotFound, an empty value a non-nil empty
// slice, keys and values binary-safe, Del's count, MGet and MSet in the
// keys' order, the Backend's own or the fallbacks of
// strategy.Capabilities), every call on a closed backend failing with
// ErrClosed and Close idempotent, and a call whose context has ended
// returning at once with the context's error.
func RunContract(t *testing.T, open Opener) {
	for _, c := range ContractCases() {
		t.Run(c.Name, func(t *testing.T) {
			e := setup(t, open, strategy.Config{ReadTimeout: 3 * time.Second})
			c.Run(t, Fixture{Backend: e.c, Key: func(name string) string { return name }, Close: e.close})
		})
	}
}

// RunContractOn runs RunContract's checks on backends open opens with
// cfg, on servers cfg names — a cluster's seeds, Sentinel's — rather
// than on a server of the suite's own behind its fault proxy, for
// deployments a proxy cannot stand in front of. Keys are prefixed with
// the subtest's name; Close checks that the backend left no goroutine
// behind.
func RunContractOn(t *testing.T, open Opener, cfg strategy.Config) {
	for _, c := range ContractCases() {
		t.Run(c.Name, func(t *testing.T) {
			before := goleak.IgnoreCurrent()
			ctx, cancel := bounded(10 * time.Second)
			defer cancel()
			b, err := open(ctx, cfg)
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			c.Run(t, Fixture{
				Backend: b,
				Key:     func(name string) string { return "contract:" + t.Name() + ":" + name },
				Close: func() {
					if err := b.Close(); err != nil {
						t.Errorf("Close: %v", err)
					}
					if err := goleak.Find(before); err != nil {
						t.Errorf("goroutines left after Close: %v", err)
					}
				},
			})
		})
	}
}

// Fixture is what a contract case runs on: an open Backend, the keys it
// may use, and how to close it.
type Fixture struct {
	Backend strategy.Backend
	// Key returns the key of the case's own to use for name (a prefix of
	// the suite's, say, on a server that others use).
	Key func(name string) string
	// Close closes Backend and checks that it leaves nothing behind.
	Close func()
}

// Case is one check of the contract, run on a Fixture.
type Case struct {
	Name string
	Run  func(t *testing.T, f Fixture)
}

// ContractCases are the cases RunContract runs, for a suite that opens
// its backends its own way: redisxtest.RunConformance runs them on a
// redisx.Client, over the servers of its Options.
func ContractCases() []Case {
	return []Case{
		{"Basics", checkBasics},
		{"Closed", checkClosed},
		{"ContextEnded", checkContextEnded},
	}
}
