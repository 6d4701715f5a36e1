package workload

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/redisx-go/kit/benchmarks/load"
	"github.com/redisx-go/kit/internal/topology"
	"github.com/redisx-go/kit/redisx"
)

// Sizes of the workloads, after the source documents (docs/DESIGN.md
// section 4).
const (
	hotKeys      = 1024 // get: the hot key set
	smallValue   = 64   // bytes: get, setget, mget, near
	setgetKeys   = 16   // setget: keys of each worker
	mgetKeys     = 50   // mget: keys of one MGET, each in a slot of its own
	zipfKeys     = 10000
	zipfExponent = 1.1
	valueKeys    = 256 // values: keys per size
)

// valueSizes are the sizes of the values workload (source document 003).
var valueSizes = []struct {
	name  string
	bytes int
}{{"64B", 64}, {"1KiB", 1 << 10}, {"4KiB", 4 << 10}, {"32KiB", 32 << 10}}

// errWrongValue is returned by an operation that read a value of the
// wrong size: a reply that belongs to another key.
var errWrongValue = errors.New("benchmarks: value of the wrong size")

// DefaultWorkloads are the workloads of the default plan, each mirroring
// a source document:
//
//   - get: GET of a hot set of 1024 keys, 64 B values (document 002's
//     read side, and the anchors' GET table).
//   - setget: each worker SETs then GETs keys of its own (16 per worker,
//     64 B); one operation is the pair (document 002).
//   - mget: one MGET of 50 keys lying in 50 different slots of a 3-master
//     cluster (document 001); the plain transports run it as one command
//     per slot, SlotGrouped as one pipeline per node, rueidis with its
//     MGet helper, go-redis as a pipeline of GETs.
//   - values/set-SIZE and values/get-SIZE: SET and GET of 64 B, 1 KiB,
//     4 KiB and 32 KiB values at 1, 10 and 100 goroutines (document 003).
//   - near/w1 and near/w10: Zipf reads (s = 1.1 over 10,000 keys, 64 B)
//     with 1% and 10% writes (document 004), on the near-cache in each
//     tracking mode; the hit ratio and the invalidations received per
//     write are reported from the near-cache's Stats.
//   - pipeline/10 and pipeline/100: batches of 10 and 100 GETs and SETs
//     (64 B, alternating) in one round trip, at 1, 10 and 100 goroutines:
//     redisx's DoMulti against rueidis's DoMulti and go-redis's Pipelined.
//
// The default targets of mget, values, near and pipeline are limited (see each
// workload's Targets) to keep the full matrix within 20 minutes.
func DefaultWorkloads() []Workload {
	ws := []Workload{getWorkload(), setGetWorkload(), mgetWorkload()}
	for _, op := range []string{"set", "get"} {
		for _, sz := range valueSizes {
			ws = append(ws, valuesWorkload(op, sz.name, sz.bytes))
		}
	}
	return append(ws, nearWorkload(1), nearWorkload(10), pipelineWorkload(10), pipelineWorkload(100))
}

// keyName is the name of key i of a workload's key set.
func keyName(set string, i int) string { return fmt.Sprintf("%s%s:%d", KeyPrefix, set, i) }

func keyNames(set string, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = keyName(set, i)
	}
	return keys
}

// value returns n bytes of a recognizable pattern.
func value(n int) []byte {
	return bytes.Repeat([]byte("redisx-bench-value:"), n/19+1)[:n]
}

// seed stores v under every key, a batch at a time.
func seed(ctx context.Context, c *redisx.Client, keys []string, v []byte) error {
	const batch = 500
	for len(keys) > 0 {
		n := min(batch, len(keys))
		kv := make(map[string][]byte, n)
		for _, k := range keys[:n] {
			kv[k] = v
		}
		if err := c.MSet(ctx, kv, 0); err != nil {
			return err
		}
		keys = keys[n:]
	}
	return nil
}

// checkLen fails a read that returned a value of the wrong size.
func checkLen(v []byte, err error, n int) error {
	if err == nil && len(v) != n {
		return errWrongValue
	}
	return err
}

func getWorkload() Workload {
	keys := keyNames("get", hotKeys)
	return Workload{
		Name:        "get",
		Description: "GET of one of 1024 hot keys, 64 B values; one op = one GET",
		Setup: func(ctx context.Context, c *redisx.Client) error {
			return seed(ctx, c, keys, value(smallValue))
		},
		Op: func(c Client, _ int) load.Op {
			return func(ctx context.Context, w, i int) error {
				v, err := c.Get(ctx, keys[(w*7919+i)%hotKeys])
				return checkLen(v, err, smallValue)
			}
		},
	}
}

func setGetWorkload() Workload {
	return Workload{
		Name:        "setget",
		Description: "each worker SETs a 64 B value under one of its own 16 keys, then GETs it back; one op = the pair",
		Op: func(c Client, workers int) load.Op {
			keys := make([][]string, workers)
			for w := range keys {
				keys[w] = keyNames(fmt.Sprintf("setget:%d", w), setgetKeys)
			}
			v := value(smallValue)
			return func(ctx context.Context, w, i int) error {
				k := keys[w][i%setgetKeys]
				if err := c.Set(ctx, k, v, 0); err != nil {
					return err
				}
				got, err := c.Get(ctx, k)
				return checkLen(got, err, smallValue)
			}
		},
	}
}

// crossSlotKeys returns n keys, each in a slot of its own.
func crossSlotKeys(n int) []string {
	seen := make(map[int]bool, n)
	keys := make([]string, 0, n)
	for i := 0; len(keys) < n; i++ {
		k := keyName("mget", i)
		if s := topology.Slot(k); !seen[s] {
			seen[s] = true
			keys = append(keys, k)
		}
	}
	return keys
}

func mgetWorkload() Workload {
	keys := crossSlotKeys(mgetKeys)
	return Workload{
		Name:        "mget",
		Description: "one MGET of 50 keys in 50 different slots of the cluster, 64 B values; one op = one MGET",
		Cluster:     true,
		Targets:     []string{"multiplexed", "pool-32", "slotgrouped", "rueidis", "go-redis"},
		Setup: func(ctx context.Context, c *redisx.Client) error {
			return seed(ctx, c, keys, value(smallValue))
		},
		Op: func(c Client, _ int) load.Op {
			return func(ctx context.Context, _, _ int) error {
				vs, err := c.MGet(ctx, keys...)
				if err != nil {
					return err
				}
				if len(vs) != len(keys) {
					return errWrongValue
				}
				for _, v := range vs {
					if len(v) != smallValue {
						return errWrongValue
					}
				}
				return nil
			}
		},
	}
}

func valuesWorkload(op, sizeName string, size int) Workload {
	keys := keyNames("values:"+sizeName, valueKeys)
	v := value(size)
	w := Workload{
		Name:    "values/" + op + "-" + sizeName,
		Levels:  []int{1, 10, 100},
		Targets: []string{"multiplexed", "pool-32", "rueidis"},
	}
	if op == "set" {
		w.Description = fmt.Sprintf("SET of a %s value under one of 256 keys; one op = one SET", sizeName)
		w.Op = func(c Client, _ int) load.Op {
			return func(ctx context.Context, w, i int) error {
				return c.Set(ctx, keys[(w*7919+i)%valueKeys], v, 0)
			}
		}
		return w
	}
	w.Description = fmt.Sprintf("GET of a %s value, one of 256 keys; one op = one GET", sizeName)
	w.Setup = func(ctx context.Context, c *redisx.Client) error { return seed(ctx, c, keys, v) }
	w.Op = func(c Client, _ int) load.Op {
		return func(ctx context.Context, w, i int) error {
			got, err := c.Get(ctx, keys[(w*7919+i)%valueKeys])
			return checkLen(got, err, size)
		}
	}
	return w
}

// readAll reads every key once, 100 to an MGET.
func readAll(ctx context.Context, c Client, keys []string) error {
	for len(keys) > 0 {
		n := min(len(keys), 100)
		if _, err := c.MGet(ctx, keys[:n]...); err != nil {
			return err
		}
		keys = keys[n:]
	}
	return nil
}

func nearWorkload(writePct int) Workload {
	keys := keyNames("near", zipfKeys)
	v := value(smallValue)
	return Workload{
		Name: fmt.Sprintf("near/w%d", writePct),
		Description: fmt.Sprintf("a key drawn from a Zipf distribution (s = 1.1 over 10,000 keys, 64 B); "+
			"%d%% of ops SET it, the others GET it; one op = one command", writePct),
		Targets: []string{"near-multiplexed", "near-broadcast", "near-none", "multiplexed"},
		Writes:  float64(writePct) / 100,
		Setup: func(ctx context.Context, c *redisx.Client) error {
			return seed(ctx, c, keys, v)
		},
		Prime: func(ctx context.Context, c Client) error {
			return readAll(ctx, c, keys)
		},
		Op: func(c Client, workers int) load.Op {
			type source struct {
				r *rand.Rand
				z *rand.Zipf
			}
			src := make([]source, workers)
			for w := range src {
				r := rand.New(rand.NewPCG(uint64(w), uint64(writePct)))
				src[w] = source{r, rand.NewZipf(r, zipfExponent, 1, zipfKeys-1)}
			}
			return func(ctx context.Context, w, _ int) error {
				s := src[w]
				k := keys[s.z.Uint64()]
				if s.r.IntN(100) < writePct {
					return c.Set(ctx, k, v, 0)
				}
				got, err := c.Get(ctx, k)
				return checkLen(got, err, smallValue)
			}
		},
	}
}
