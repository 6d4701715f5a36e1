package workload_test

import (
	"context"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redisx-go/kit/benchmarks/workload"
	"github.com/redisx-go/kit/redisx"
)

// recorder is a Client that records each call and the keys it named;
// values it stores are read back, so a GET checks the size a SET wrote.
type recorder struct {
	mu     sync.Mutex
	calls  map[string]int
	keys   []int // every key named, in order
	batch  []int // keys per mget/mset call
	values map[int][]byte
}

func newRecorder() *recorder {
	return &recorder{calls: map[string]int{}, values: map[int][]byte{}}
}

func keyIndex(k string) int {
	const prefix = workload.KeyPrefix + "custom:"
	if !strings.HasPrefix(k, prefix) {
		panic("key outside the custom workload's names: " + k)
	}
	n, err := strconv.Atoi(strings.TrimPrefix(k, prefix))
	if err != nil {
		panic(err)
	}
	return n
}

func (r *recorder) note(op string, keys ...string) {
	r.calls[op]++
	for _, k := range keys {
		r.keys = append(r.keys, keyIndex(k))
	}
}

func (r *recorder) Get(_ context.Context, key string) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.note("get", key)
	v, ok := r.values[keyIndex(key)]
	if !ok {
		return nil, redisx.ErrNotFound
	}
	return v, nil
}

func (r *recorder) Set(_ context.Context, key string, v []byte, _ time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.note("set", key)
	r.values[keyIndex(key)] = v
	return nil
}

func (r *recorder) MGet(_ context.Context, keys ...string) ([][]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.note("mget", keys...)
	r.batch = append(r.batch, len(keys))
	vs := make([][]byte, len(keys))
	for i, k := range keys {
		vs[i] = r.values[keyIndex(k)]
	}
	return vs, nil
}

func (r *recorder) Del(_ context.Context, keys ...string) (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.note("del", keys...)
	for _, k := range keys {
		delete(r.values, keyIndex(k))
	}
	return int64(len(keys)), nil
}

func (r *recorder) MSet(_ context.Context, kv map[string][]byte, _ time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls["mset"]++
	r.batch = append(r.batch, len(kv))
	for k, v := range kv {
		r.keys = append(r.keys, keyIndex(k))
		r.values[keyIndex(k)] = v
	}
	return nil
}

func (r *recorder) Close() error { return nil }

// runCustom runs n ops of c on one worker of workers against a recorder.
func runCustom(t *testing.T, c workload.Custom, worker, workers, n int) *recorder {
	t.Helper()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	op := c.Workload().Op(rec, workers)
	for i := range n {
		if err := op(context.Background(), worker, i); err != nil {
			t.Fatalf("op %d: %v", i, err)
		}
	}
	return rec
}

func custom(t *testing.T, mix, dist, value string, keys int) workload.Custom {
	t.Helper()
	c := workload.DefaultCustom()
	var err error
	if c.Mix, err = workload.ParseMix(mix); err != nil {
		t.Fatal(err)
	}
	if c.KeyDist, err = workload.ParseKeyDist(dist); err != nil {
		t.Fatal(err)
	}
	if c.Value, err = workload.ParseValue(value); err != nil {
		t.Fatal(err)
	}
	c.Keys = keys
	return c
}

func within(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

func TestCustomOpsFollowTheMix(t *testing.T) {
	const n = 100_000
	c := custom(t, "get:60,set:25,del:5,mget:6,mset:4", "uniform", "64", 1000)
	c.Batch = 7
	rec := runCustom(t, c, 0, 1, n)
	for op, want := range map[string]float64{"get": 0.60, "set": 0.25, "del": 0.05, "mget": 0.06, "mset": 0.04} {
		if got := float64(rec.calls[op]) / n; !within(got, want, 0.01) {
			t.Errorf("%s: %.3f of the ops; want %.2f ± 0.01", op, got, want)
		}
	}
	for _, b := range rec.batch {
		if b != 7 {
			t.Fatalf("an mget/mset of %d keys; want -batch 7", b)
		}
	}
}

// keyShares runs n GETs of c and returns the share of the draws each key
// got.
func keyShares(t *testing.T, c workload.Custom, n int) []float64 {
	rec := runCustom(t, c, 0, 1, n)
	share := make([]float64, c.Keys)
	for _, k := range rec.keys {
		share[k] += 1.0 / float64(n)
	}
	return share
}

func TestCustomZipfDrawsMatchTheExactDistribution(t *testing.T) {
	const keys, n = 1000, 200_000
	// Below 1 the harness's own sampler, above it math/rand/v2's Zipf.
	for _, s := range []float64{0.5, 0.99, 1, 1.1, 2} {
		c := custom(t, "get:1", "zipf:"+strconv.FormatFloat(s, 'f', -1, 64), "8", keys)
		share := keyShares(t, c, n)
		var norm float64
		for k := 1; k <= keys; k++ {
			norm += math.Pow(float64(k), -s)
		}
		for k := range 5 {
			want := math.Pow(float64(k+1), -s) / norm
			// Four standard deviations of a share estimated from n draws.
			if tol := 4 * math.Sqrt(want*(1-want)/n); !within(share[k], want, tol) {
				t.Errorf("zipf:%v: key %d drawn %.4f of the time; want %.4f ± %.4f", s, k, share[k], want, tol)
			}
		}
		var tail, wantTail float64 // the last half of the keys
		for k := keys / 2; k < keys; k++ {
			tail += share[k]
			wantTail += math.Pow(float64(k+1), -s) / norm
		}
		if !within(tail, wantTail, 4*math.Sqrt(wantTail*(1-wantTail)/n)+1e-4) {
			t.Errorf("zipf:%v: the last half of the keys drawn %.4f of the time; want %.4f", s, tail, wantTail)
		}
	}
}

func TestCustomUniformAndGaussianDraws(t *testing.T) {
	const keys, n = 1000, 200_000
	share := keyShares(t, custom(t, "get:1", "uniform", "8", keys), n)
	for d := range 10 {
		var got float64
		for k := d * 100; k < (d+1)*100; k++ {
			got += share[k]
		}
		if !within(got, 0.1, 0.005) {
			t.Errorf("uniform: keys %d–%d drawn %.4f of the time; want 0.1", d*100, d*100+99, got)
		}
	}
	share = keyShares(t, custom(t, "get:1", "gaussian", "8", keys), n)
	var mean, inSD float64
	for k, s := range share {
		mean += float64(k) * s
		if math.Abs(float64(k)-499.5) <= keys/6 {
			inSD += s
		}
	}
	if !within(mean, 499.5, 5) || !within(inSD, 0.683, 0.01) {
		t.Errorf("gaussian: mean key %.1f, %.3f within one sd; want 499.5 and 0.683", mean, inSD)
	}
}

func TestCustomSequentialWalksTheKeysFromAStartPerWorker(t *testing.T) {
	c := custom(t, "get:1", "sequential", "8", 100)
	for w, start := range []int{0, 25, 50, 75} {
		rec := runCustom(t, c, w, 4, 150)
		for i, k := range rec.keys {
			if want := (start + i) % 100; k != want {
				t.Fatalf("worker %d, op %d: key %d; want %d", w, i, k, want)
			}
		}
	}
}

func TestCustomValueSizesFollowTheSpecPerKey(t *testing.T) {
	const keys = 20_000
	c := custom(t, "set:1", "sequential", "64:80,4096:20", keys)
	rec := runCustom(t, c, 0, 1, keys) // every key once
	count := map[int]int{}
	for _, v := range rec.values {
		count[len(v)]++
	}
	if len(count) != 2 || !within(float64(count[64])/keys, 0.8, 0.015) || !within(float64(count[4096])/keys, 0.2, 0.015) {
		t.Errorf("value sizes over %d keys: %v; want 64 B for 80%% and 4096 B for 20%%", keys, count)
	}

	c = custom(t, "set:1", "sequential", "64-4096", keys)
	rec = runCustom(t, c, 0, 1, keys)
	var sum float64
	for _, v := range rec.values {
		if len(v) < 64 || len(v) > 4096 {
			t.Fatalf("a value of %d bytes; want 64–4096", len(v))
		}
		sum += float64(len(v))
	}
	if mean := sum / keys; !within(mean, 2080, 30) {
		t.Errorf("mean value size %.0f; want about 2080", mean)
	}

	// A GET checks the size its key's SETs write, and a miss is no error.
	c = custom(t, "get:50,set:40,del:10", "uniform", "64:80,4096:20", 50)
	runCustom(t, c, 0, 1, 10_000)
}

func TestCustomBatchesHoldDistinctKeysEvenWhenSkewed(t *testing.T) {
	c := custom(t, "mget:1,mset:1", "zipf:3", "8", 20)
	c.Batch = 20 // every key: a Zipf of exponent 3 draws key 0 most of the time
	rec := runCustom(t, c, 0, 1, 200)
	for i := 0; i < len(rec.keys); i += 20 {
		seen := map[int]bool{}
		for _, k := range rec.keys[i : i+20] {
			if seen[k] {
				t.Fatalf("a batch names key %d twice: %v", k, rec.keys[i:i+20])
			}
			seen[k] = true
		}
	}
}

func TestCustomOpFailsClearlyOnAClientWithoutDel(t *testing.T) {
	c := custom(t, "del:1", "uniform", "8", 10)
	op := c.Workload().Op(getOnly{newRecorder()}, 1)
	if err := op(context.Background(), 0, 0); err == nil || !strings.Contains(err.Error(), "Del") {
		t.Errorf("del on a Client without Del: %v; want an error naming Del", err)
	}
}

// getOnly hides the recorder's Del and MSet.
type getOnly struct{ r *recorder }

func (g getOnly) Get(ctx context.Context, k string) ([]byte, error) { return g.r.Get(ctx, k) }
func (g getOnly) Set(ctx context.Context, k string, v []byte, ttl time.Duration) error {
	return g.r.Set(ctx, k, v, ttl)
}
func (g getOnly) MGet(ctx context.Context, ks ...string) ([][]byte, error) {
	return g.r.MGet(ctx, ks...)
}
func (g getOnly) Close() error { return nil }
