package workload

import (
	"context"
	"fmt"

	"github.com/redisx-go/kit/benchmarks/load"
	"github.com/redisx-go/kit/redisx"
)

// Pipeliner is a Client that sends many commands in one round trip: what
// the pipeline workloads call. The redisx targets run it with
// Client.DoMulti, rueidis with its DoMulti, go-redis with Pipelined; each
// builds its commands its own idiomatic way on every call, as a service
// would.
type Pipeliner interface {
	// Pipeline sends, as one batch, for each key a SET of v when set
	// says so and a GET otherwise, and returns the value of each GET
	// (nil for a SET or a missing key), in keys' order. Its error is the
	// first of any command's.
	Pipeline(ctx context.Context, keys []string, set []bool, v []byte) ([][]byte, error)
}

// PipelinerOf is c as a Pipeliner: its own method, or DoMulti for a
// redisx client.
func PipelinerOf(c Client) (Pipeliner, error) {
	switch c := c.(type) {
	case Pipeliner:
		return c, nil
	case *redisx.Client:
		return redisxPipeline{c}, nil
	}
	return nil, fmt.Errorf("%w: the pipeline workloads need a Pipeline method (Pipeliner) or a *redisx.Client", errNoOp)
}

// redisxPipeline runs Pipeline with redisx's DoMulti.
type redisxPipeline struct{ c *redisx.Client }

func (p redisxPipeline) Pipeline(ctx context.Context, keys []string, set []bool, v []byte) ([][]byte, error) {
	cmds := make([][]any, len(keys))
	for i, k := range keys {
		if set[i] {
			cmds[i] = []any{"SET", k, v}
		} else {
			cmds[i] = []any{"GET", k}
		}
	}
	out := make([][]byte, len(keys))
	for i, r := range p.c.DoMulti(ctx, cmds...) {
		if r.Err != nil {
			return nil, r.Err
		}
		if !set[i] && r.Value != nil {
			b, ok := r.Value.([]byte)
			if !ok {
				return nil, fmt.Errorf("benchmarks: GET replied %T", r.Value)
			}
			out[i] = b
		}
	}
	return out, nil
}

// pipelineWorkload is pipeline/N: one op is a batch of n commands, GETs
// and SETs alternating, of 64 B values under the hot keys of get.
func pipelineWorkload(n int) Workload {
	keys := keyNames("pipeline", hotKeys)
	v := value(smallValue)
	return Workload{
		Name:        fmt.Sprintf("pipeline/%d", n),
		Description: fmt.Sprintf("a batch of %d commands in one round trip (DoMulti; rueidis DoMulti, go-redis Pipelined), GET and SET of 64 B values alternating over 1024 keys; one op = one batch", n),
		Levels:      []int{1, 10, 100},
		Targets:     []string{"multiplexed", "pool-32", "rueidis", "go-redis"},
		Setup: func(ctx context.Context, c *redisx.Client) error {
			return seed(ctx, c, keys, v)
		},
		Op: func(c Client, _ int) load.Op {
			p, err := PipelinerOf(c)
			set := make([]bool, n)
			for i := range set {
				set[i] = i%2 == 1
			}
			return func(ctx context.Context, w, i int) error {
				if err != nil {
					return err
				}
				batch := make([]string, n)
				for j := range batch {
					batch[j] = keys[(w*7919+i*n+j)%hotKeys]
				}
				got, err := p.Pipeline(ctx, batch, set, v)
				if err != nil {
					return err
				}
				for j, b := range got {
					if !set[j] && len(b) != smallValue {
						return errWrongValue
					}
				}
				return nil
			}
		},
	}
}
