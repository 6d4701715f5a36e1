package workload

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/redisx-go/kit/benchmarks/load"
	"github.com/redisx-go/kit/redisx"
)

// The custom workload at run time: which key an op picks, the size of
// each key's value, the ops themselves and the data stored before the
// run.

// Deleter is a Client that deletes keys: the del op of a custom workload
// needs it (a Client without it fails that workload's cells, saying so).
// *redisx.Client and the peers implement it.
type Deleter interface {
	Del(ctx context.Context, keys ...string) (int64, error)
}

// MSetter is a Client that stores several keys in one call: the mset op
// of a custom workload needs it. On a cluster the keys may lie in
// different slots. *redisx.Client and the peers implement it.
type MSetter interface {
	MSet(ctx context.Context, kv map[string][]byte, ttl time.Duration) error
}

var (
	_ Deleter = (*redisx.Client)(nil)
	_ MSetter = (*redisx.Client)(nil)
)

// errNoOp is the error of an op the target's Client cannot run.
var errNoOp = errors.New("benchmarks: the target's Client has no such method")

// Workload returns c as the workload named "custom", on the cluster when
// c.Cluster. Its Setup stores every key (c.Keys values of their sizes,
// with c.TTL) in batches; every op picks its keys by c.KeyDist from a
// random source of its worker's own, seeded by the worker's index, so
// that every target sees the same sequence of ops.
func (c Custom) Workload() Workload {
	spec := c
	return Workload{
		Name:        CustomName,
		Description: c.describe(),
		Cluster:     c.Cluster,
		Custom:      &spec,
		Setup:       c.seed,
		Op:          c.op,
		Writes:      c.Mix.writes(),
	}
}

// writes is the share of m's ops that write: set, del and mset.
func (m Mix) writes() float64 {
	var w, all float64
	for _, o := range m {
		all += o.Weight
		if o.Op == OpSet || o.Op == OpDel || o.Op == OpMSet {
			w += o.Weight
		}
	}
	if all == 0 {
		return 0
	}
	return w / all
}

// customKey is the name of key i of the custom workload.
func customKey(i int) string {
	return KeyPrefix + "custom:" + strconv.Itoa(i)
}

// sizeOf is the size of key i's value: drawn once per key from c.Value by
// a hash of i, so that a SET writes and a GET checks the same size.
func (c Custom) sizeOf(i int) int {
	return c.Value.sizeAt(unitHash(uint64(i)))
}

// sizeAt maps u in [0, 1) to a size of v.
func (v ValueSpec) sizeAt(u float64) int {
	if len(v.Sizes) == 0 {
		return v.Min + min(int(u*float64(v.Max-v.Min+1)), v.Max-v.Min)
	}
	var total float64
	for _, sw := range v.Sizes {
		total += sw.Weight
	}
	x := u * total
	for _, sw := range v.Sizes {
		if x < sw.Weight {
			return sw.Bytes
		}
		x -= sw.Weight
	}
	return v.Sizes[len(v.Sizes)-1].Bytes
}

// unitHash maps x to [0, 1) by SplitMix64's finalizer: neighbouring keys
// get unrelated sizes.
func unitHash(x uint64) float64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11) / (1 << 53)
}

// seedBatch bounds one MSET of the seeding: keys, and bytes.
const (
	seedBatchKeys  = 500
	seedBatchBytes = 4 << 20
	seedWorkers    = 4
)

// seed stores every key of c with its size and TTL, seedWorkers batches
// at a time.
func (c Custom) seed(ctx context.Context, rc *redisx.Client) error {
	v := value(c.Value.largest())
	batches := make(chan [2]int)
	var wg sync.WaitGroup
	errs := make([]error, seedWorkers)
	for w := range seedWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				if errs[w] != nil {
					continue // drain
				}
				kv := make(map[string][]byte, b[1]-b[0])
				for i := b[0]; i < b[1]; i++ {
					kv[customKey(i)] = v[:c.sizeOf(i)]
				}
				errs[w] = rc.MSet(ctx, kv, c.TTL)
			}
		}()
	}
	for start := 0; start < c.Keys && ctx.Err() == nil; {
		end, bytes := start, 0
		for end < c.Keys && end-start < seedBatchKeys && (end == start || bytes < seedBatchBytes) {
			bytes += c.sizeOf(end)
			end++
		}
		batches <- [2]int{start, end}
		start = end
	}
	close(batches)
	wg.Wait()
	return errors.Join(append(errs, ctx.Err())...)
}

// customWorker is one goroutine's state: its random source, key picker
// and buffers.
type customWorker struct {
	c    *Custom
	r    *rand.Rand
	pick func() int
	seen map[int]bool // keys of the batch being drawn
	keys []string
	idx  []int
}

func (c Custom) newWorker(w, workers int) *customWorker {
	r := rand.New(rand.NewPCG(uint64(w), 0xc0570b))
	cw := &customWorker{c: &c, r: r, pick: c.KeyDist.picker(r, c.Keys, w, workers), seen: map[int]bool{}}
	return cw
}

// batch draws c.Batch distinct keys: by the distribution while it gives
// new ones (a skewed one repeats its hot keys), then the keys after the
// last drawn.
func (cw *customWorker) batch() {
	n := cw.c.Batch
	cw.keys, cw.idx = cw.keys[:0], cw.idx[:0]
	clear(cw.seen)
	k := 0
	for tries := 0; len(cw.idx) < n && tries < 8*n; tries++ {
		if k = cw.pick(); !cw.seen[k] {
			cw.seen[k] = true
			cw.idx = append(cw.idx, k)
		}
	}
	for len(cw.idx) < n {
		if k = (k + 1) % cw.c.Keys; !cw.seen[k] {
			cw.seen[k] = true
			cw.idx = append(cw.idx, k)
		}
	}
	for _, i := range cw.idx {
		cw.keys = append(cw.keys, customKey(i))
	}
}

// op returns the custom workload's operation on cl for workers
// goroutines: each call runs one op of the mix, drawn by weight.
func (c Custom) op(cl Client, workers int) load.Op {
	ws := make([]*customWorker, workers)
	for w := range ws {
		ws[w] = c.newWorker(w, workers)
	}
	cum := make([]float64, len(c.Mix))
	total := 0.0
	for i, o := range c.Mix {
		total += o.Weight
		cum[i] = total
	}
	val := value(c.Value.largest())
	del, _ := cl.(Deleter)
	mset, _ := cl.(MSetter)
	check := func(k int, v []byte, err error) error {
		if errors.Is(err, redisx.ErrNotFound) {
			return nil // deleted or expired: a miss, as in a service
		}
		return checkLen(v, err, c.sizeOf(k))
	}
	return func(ctx context.Context, w, _ int) error {
		cw := ws[w]
		x := cw.r.Float64() * total
		i := 0
		for i < len(cum)-1 && x >= cum[i] {
			i++
		}
		switch c.Mix[i].Op {
		case OpGet:
			k := cw.pick()
			v, err := cl.Get(ctx, customKey(k))
			return check(k, v, err)
		case OpSet:
			k := cw.pick()
			return cl.Set(ctx, customKey(k), val[:c.sizeOf(k)], c.TTL)
		case OpDel:
			if del == nil {
				return fmt.Errorf("%w: del needs a Del method (Deleter)", errNoOp)
			}
			_, err := del.Del(ctx, customKey(cw.pick()))
			return err
		case OpMGet:
			cw.batch()
			vs, err := cl.MGet(ctx, cw.keys...)
			if err != nil {
				return err
			}
			if len(vs) != len(cw.keys) {
				return errWrongValue
			}
			for j, v := range vs {
				if v != nil && len(v) != c.sizeOf(cw.idx[j]) {
					return errWrongValue
				}
			}
			return nil
		case OpMSet:
			if mset == nil {
				return fmt.Errorf("%w: mset needs an MSet method (MSetter)", errNoOp)
			}
			cw.batch()
			kv := make(map[string][]byte, len(cw.keys))
			for j, k := range cw.keys {
				kv[k] = val[:c.sizeOf(cw.idx[j])]
			}
			return mset.MSet(ctx, kv, c.TTL)
		}
		return fmt.Errorf("benchmarks: unknown op %q", c.Mix[i].Op)
	}
}

// picker returns the key picker of worker w of workers over n keys, drawing
// from r.
func (d KeyDist) picker(r *rand.Rand, n, w, workers int) func() int {
	switch d.Kind {
	case DistZipf:
		if d.S > 1 {
			z := rand.NewZipf(r, d.S, 1, uint64(n-1))
			return func() int { return int(z.Uint64()) }
		}
		z := newBoundedZipf(r, d.S, n)
		return func() int { return z.next() - 1 }
	case DistGaussian:
		mean, sd := float64(n-1)/2, float64(n)/6
		return func() int {
			for {
				if k := int(math.Floor(mean + sd*r.NormFloat64() + 0.5)); k >= 0 && k < n {
					return k
				}
			}
		}
	case DistSequential:
		next := int(int64(w) * int64(n) / int64(max(workers, 1)))
		return func() int {
			k := next
			next = (next + 1) % n
			return k
		}
	}
	return func() int { return r.IntN(n) }
}

// boundedZipf draws k in [1, n] with probability proportional to k^-s
// for any s > 0, by rejection-inversion (W. Hörmann and G. Derflinger,
// "Rejection-inversion to generate variates from monotone discrete
// distributions", 1996), after Apache Commons RNG's
// RejectionInversionZipfSampler. math/rand/v2's Zipf is the same method
// but takes s > 1 only, and the common exponents of cache traces (YCSB's
// 0.99, memtier's 1) are not.
type boundedZipf struct {
	r          *rand.Rand
	n, s       float64
	hX1, hN, q float64
}

func newBoundedZipf(r *rand.Rand, s float64, n int) *boundedZipf {
	z := &boundedZipf{r: r, n: float64(n), s: s}
	z.hX1 = z.hIntegral(1.5) - 1
	z.hN = z.hIntegral(z.n + 0.5)
	z.q = 2 - z.hIntegralInverse(z.hIntegral(2.5)-z.h(2))
	return z
}

func (z *boundedZipf) next() int {
	for {
		u := z.hN + z.r.Float64()*(z.hX1-z.hN)
		x := z.hIntegralInverse(u)
		k := min(max(math.Floor(x+0.5), 1), z.n)
		// Accept k when x lies in its column of the histogram, or under
		// its bar: the area between the hat and the distribution is
		// rejected.
		if k-x <= z.q || u >= z.hIntegral(k+0.5)-z.h(k) {
			return int(k)
		}
	}
}

// h is the density k^-s; hIntegral its antiderivative (x^(1-s)-1)/(1-s),
// and log x at s = 1, written with expm1 and log1p to stay exact near
// s = 1.
func (z *boundedZipf) h(x float64) float64 { return math.Exp(-z.s * math.Log(x)) }

func (z *boundedZipf) hIntegral(x float64) float64 {
	lx := math.Log(x)
	return expm1Over((1-z.s)*lx) * lx
}

func (z *boundedZipf) hIntegralInverse(x float64) float64 {
	t := max(x*(1-z.s), -1) // below -1 only by rounding
	return math.Exp(log1pOver(t) * x)
}

// log1pOver is log(1+x)/x, 1 at 0.
func log1pOver(x float64) float64 {
	if math.Abs(x) > 1e-8 {
		return math.Log1p(x) / x
	}
	return 1 - x*(0.5-x*(1.0/3-0.25*x))
}

// expm1Over is (e^x-1)/x, 1 at 0.
func expm1Over(x float64) float64 {
	if math.Abs(x) > 1e-8 {
		return math.Expm1(x) / x
	}
	return 1 + x*0.5*(1+x/3*(1+0.25*x))
}
