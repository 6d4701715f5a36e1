package workload

import (
	"context"
	"strings"
	"time"

	"github.com/redisx-go/kit/benchmarks/load"
	"github.com/redisx-go/kit/redisx"
)

// KeyPrefix starts every key the harness writes. benchmarks.Run refuses
// a database holding keys outside it (unless Servers.Force) and deletes
// the keys under it when it ends. A workload of your own must use it
// too.
const KeyPrefix = "redisx-bench:"

// Client is an opened target: what a workload's operations call.
// *redisx.Client implements it; the peers are adapted to it. A Client
// that also has a Stats() redisx.Stats method reports its near-cache
// hit ratio. Implementations must be safe for concurrent use.
type Client interface {
	Get(ctx context.Context, key string) ([]byte, error)
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error
	// Get and MGet report a missing key as redisx.ErrNotFound and nil.
	// MGet returns one value per key, in order, nil where a key is
	// missing. On a cluster the keys may lie in different slots. The
	// custom workload's del and mset ops also need Deleter and MSetter.
	MGet(ctx context.Context, keys ...string) ([][]byte, error)
	Close() error
}

var _ Client = (*redisx.Client)(nil)

// Workload is what the targets are measured doing.
type Workload struct {
	// Name is "family" or "family/variant" ("get", "values/set-32KiB").
	Name string
	// Description says what one operation is, for the reports.
	Description string
	// Cluster makes the workload run on the cluster; otherwise it runs
	// on the standalone server. It is skipped when that is missing.
	Cluster bool
	// Levels, when set, replaces the plan's levels for this workload.
	Levels []int
	// Targets, when set, names the targets it runs (those of the plan
	// that apply); nil: every target that applies.
	// benchmarks.Plan.AddTarget adds new targets to these lists.
	Targets []string
	// Setup stores the data the operations read, through the harness's
	// own client; it runs once before the workload's cells. Nil: none.
	// Keys must start with KeyPrefix.
	Setup func(ctx context.Context, c *redisx.Client) error
	// Op returns the operation on c for a run of workers goroutines.
	// It is called for every target and level, so per-worker state
	// (a random source, a key list) can be allocated here for workers.
	Op func(c Client, workers int) load.Op
	// Prime, when set, brings an isolated target (see Target.Isolated),
	// opened afresh for each sample, to the state of a client that has
	// run the workload for long, before its warm-up: the near workloads
	// read every key once, so that a near-cache holds what a long-lived
	// one would. Nil: the warm-up alone.
	Prime func(ctx context.Context, c Client) error
	// Custom, when set, is the user's workload this one was made from
	// (Custom.Workload): the report lists its parts.
	Custom *Custom
	// Writes is the share of the ops that write (0.01: 1%): a near-cache
	// target's invalidations received are reported per write
	// (verdict.Cell.InvalidationsPerWrite). Zero: not reported.
	Writes float64
}

// Family is the part of the name before the first "/".
func (w Workload) Family() string {
	f, _, _ := strings.Cut(w.Name, "/")
	return f
}
