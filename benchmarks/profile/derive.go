package profile

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redisx-go/kit/benchmarks/workload"
)

// From what a profile read to a Custom: the estimates, and the notes that
// say how each was made.

// profileOpOf maps the commands of INFO commandstats to the op that
// stands for them.
var profileOpOf = map[string]string{
	"get": workload.OpGet, "getex": workload.OpGet,
	"set": workload.OpSet, "setex": workload.OpSet, "psetex": workload.OpSet, "setnx": workload.OpSet, "getset": workload.OpSet,
	"del": workload.OpDel, "unlink": workload.OpDel, "getdel": workload.OpDel,
	"mget": workload.OpMGet,
	"mset": workload.OpMSet, "msetnx": workload.OpMSet,
}

func (p *Profile) note(format string, args ...any) {
	p.Notes = append(p.Notes, fmt.Sprintf(format, args...))
}

// derive sets p.Custom from the reads.
func (p *Profile) derive(stats map[string]string, dbsize, masters int64, policy, allocator string, s keySample) {
	c := workload.DefaultCustom()
	c.Source = workload.SourceProfile
	c.Mix = p.deriveMix(stats, c.Mix)

	var sizes []int
	kinds := map[string]int{}
	for _, k := range s.keys {
		if k.kind != "string" {
			kinds[k.kind]++
			continue
		}
		sizes = append(sizes, valueSize(k.usage, len(k.name), p.Cluster, strings.HasPrefix(allocator, "jemalloc")))
	}
	how := fmt.Sprintf("%d keys sampled by SCAN", len(s.keys))
	switch {
	case s.done:
		how += " (every key)"
	case s.partial:
		how += " (cut short by the time limit)"
	}
	if s.own > 0 {
		how += fmt.Sprintf(", %d under %s left out", s.own, workload.KeyPrefix)
	}
	if len(sizes) > 0 {
		c.Value = sizeBuckets(sizes)
		p.note("-value %s: MEMORY USAGE of the %d string keys of the %s, less what Redis spends on the key itself; the allocator's size classes leave each size within about 12%%",
			c.Value, len(sizes), how)
	} else {
		p.note("-value %s assumed: no string key among the %s", c.Value, how)
	}
	if len(kinds) > 0 {
		var ks []string
		for k, n := range kinds {
			ks = append(ks, fmt.Sprintf("%s %d", k, n))
		}
		slices.Sort(ks)
		p.note("left out of the sizes: the sampled keys that are not strings (%s); the workload writes strings only", strings.Join(ks, ", "))
	}

	c.Keys = int(min(dbsize*masters, math.MaxInt32))
	switch {
	case dbsize == 0:
		c.Keys = workload.DefaultCustom().Keys
		p.note("-keys %d assumed: the database is empty (DBSIZE 0)", c.Keys)
	case masters > 1:
		p.note("-keys %d: DBSIZE %d of this node times the %d masters of its cluster", c.Keys, dbsize, masters)
	default:
		p.note("-keys %d: DBSIZE", c.Keys)
	}
	if perKey := c.Value.Mean() + workload.SeedOverhead; float64(c.Keys)*perKey > workload.MaxSeedBytes {
		was := c.Keys
		c.Keys = int(workload.MaxSeedBytes / perKey)
		p.note("-keys %d rather than %d: storing every key before the run would take over %s; the key count matters little to a client's strategy, the skew and the sizes do",
			c.Keys, was, workload.FormatBytes(workload.MaxSeedBytes))
	}

	c.TTL = p.deriveTTL(s.keys)
	c.KeyDist = p.deriveSkew(s.keys, int(min(dbsize*masters, math.MaxInt32)), policy)
	if c.Mix.Has(workload.OpMGet) || c.Mix.Has(workload.OpMSet) {
		p.note("-batch %d assumed: no statistic of the server counts the keys of an MGET or MSET", c.Batch)
	}
	p.Custom = c
}

// deriveMix turns the calls of commandstats into a mix: each op's share
// of the calls mapped, in percent (one decimal under 1%).
func (p *Profile) deriveMix(stats map[string]string, def workload.Mix) workload.Mix {
	calls := map[string]int64{}
	var mapped []string
	type other struct {
		name  string
		calls int64
	}
	var others []other
	var ignored int64
	for k, v := range stats {
		name, ok := strings.CutPrefix(k, "cmdstat_")
		if !ok {
			continue
		}
		n := statCalls(v)
		if op, ok := profileOpOf[name]; ok {
			calls[op] += n
			mapped = append(mapped, fmt.Sprintf("%s %d", name, n))
			continue
		}
		if n > 0 {
			others = append(others, other{name, n})
			ignored += n
		}
	}
	var total int64
	for _, n := range calls {
		total += n
	}
	if total == 0 {
		p.note("-mix %s assumed: INFO commandstats counts no call of get, set, del, mget, mset or their relatives", def)
		return def
	}
	var m workload.Mix
	var dropped []string
	for _, op := range workload.MixOps() {
		n := calls[op]
		if n == 0 {
			continue
		}
		pct := 100 * float64(n) / float64(total)
		w := math.Round(pct)
		if pct < 1 {
			w = math.Round(pct*10) / 10
		}
		if w == 0 {
			dropped = append(dropped, fmt.Sprintf("%s (%d calls)", op, n))
			continue
		}
		m = append(m, workload.MixOp{Op: op, Weight: w})
	}
	slices.Sort(mapped)
	p.note("-mix %s: the calls INFO commandstats counts since the server started or its statistics were reset (%s)", m, strings.Join(mapped, ", "))
	if dropped != nil {
		p.note("left out of the mix, under 0.05%% of the calls: %s", strings.Join(dropped, ", "))
	}
	if len(others) > 0 {
		slices.SortFunc(others, func(a, b other) int { return cmp.Or(cmp.Compare(b.calls, a.calls), cmp.Compare(a.name, b.name)) })
		var top []string
		for _, o := range others[:min(len(others), 5)] {
			top = append(top, fmt.Sprintf("%s %d", o.name, o.calls))
		}
		if len(others) > 5 {
			top = append(top, "…")
		}
		share := fmt.Sprintf("%.0f%%", 100*float64(ignored)/float64(ignored+total))
		if 100*ignored < ignored+total {
			share = "under 1%"
		}
		p.note("ignored: %d calls of %d other commands (%s), %s of all calls", ignored, len(others), strings.Join(top, ", "), share)
	}
	return m
}

// statCalls reads calls= of a commandstats line: "calls=12,usec=…".
func statCalls(v string) int64 {
	for _, f := range strings.Split(v, ",") {
		if n, ok := strings.CutPrefix(f, "calls="); ok {
			c, _ := strconv.ParseInt(n, 10, 64)
			return c
		}
	}
	return 0
}

// deriveTTL is twice the median time left of the sampled keys that
// expire, when most do; 0 otherwise.
func (p *Profile) deriveTTL(keys []sampledKey) time.Duration {
	var left []int64
	known := 0
	for _, k := range keys {
		switch {
		case k.pttl >= 0:
			left = append(left, k.pttl)
			known++
		case k.pttl == -1:
			known++
		}
	}
	if known == 0 {
		p.note("-ttl 0 assumed: no key sampled")
		return 0
	}
	if 2*len(left) < known {
		if len(left) > 0 {
			p.note("-ttl 0 (no expiry): %d of the %d sampled keys expire, fewer than half", len(left), known)
		} else {
			p.note("-ttl 0 (no expiry): none of the %d sampled keys expires", known)
		}
		return 0
	}
	slices.Sort(left)
	ttl := roundDuration(2 * time.Duration(left[len(left)/2]) * time.Millisecond)
	ttl = max(ttl, time.Millisecond)
	p.note("-ttl %s: twice the median time left (PTTL) of the %d of %d sampled keys that expire (time left spreads over a key's life)",
		workload.FormatDuration(ttl), len(left), known)
	return ttl
}

// roundDuration rounds d to a readable unit: minutes from an hour,
// seconds from a minute, 10 ms from a second.
func roundDuration(d time.Duration) time.Duration {
	switch {
	case d >= time.Hour:
		return d.Round(time.Minute)
	case d >= time.Minute:
		return d.Round(time.Second)
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// deriveSkew fits a Zipf exponent to the LFU counters of the keySample, when
// the policy keeps them.
func (p *Profile) deriveSkew(sampled []sampledKey, keys int, policy string) workload.KeyDist {
	uniform := workload.KeyDist{Kind: workload.DistUniform}
	if !strings.Contains(policy, "lfu") {
		p.note("-key-dist uniform assumed: the server's maxmemory-policy (%s) gives no access counts; with an LFU policy the profile reads them (OBJECT FREQ)", cmp.Or(policy, "unknown"))
		return uniform
	}
	var freqs []int64
	for _, k := range sampled {
		if k.freq >= 0 {
			freqs = append(freqs, k.freq)
		}
	}
	s, used := fitZipf(freqs, keys)
	if used < minZipfPoints {
		p.note("-key-dist uniform assumed: only %d of the %d sampled keys were read since they were written (OBJECT FREQ above its start of %d)", used, len(freqs), lfuInit)
		return uniform
	}
	if noise := lfuNoiseExponent(freqs, keys); s <= noise+0.1 {
		p.note("-key-dist uniform: the LFU counters (OBJECT FREQ) of the %d sampled keys spread no more than the counters' own noise would under uniform access (zipf:%.2f read, %.2f from the noise alone)",
			len(freqs), s, noise)
		return uniform
	}
	s = min(math.Round(s*100)/100, workload.MaxZipf)
	p.note("-key-dist zipf:%v: fitted to the LFU counters (OBJECT FREQ) of the %d sampled keys, %d of them read since written; the counters are logarithmic, rise at random and decay, so the exponent is rough",
		s, len(freqs), used)
	return workload.KeyDist{Kind: workload.DistZipf, S: s}
}

// lfuNoiseExponent is what fitZipf reads from counters of keys accessed
// uniformly, as often on average as the sampled ones: a counter rises at
// random, so keys of equal traffic spread over several counters, which
// looks like skew (about 0.2 to 0.4 at 10 to 500 hits a key). Simulated
// with a fixed seed: the same sample gives the same answer.
func lfuNoiseExponent(freqs []int64, n int) float64 {
	var mean float64
	for _, f := range freqs {
		if f > lfuInit {
			mean += lfuHits(f)
		}
	}
	mean /= float64(len(freqs))
	r := rand.New(rand.NewPCG(1, 2))
	sim := make([]int64, len(freqs))
	for i := range sim {
		hits := math.Round(mean + math.Sqrt(mean)*r.NormFloat64()) // Poisson, roughly
		sim[i] = lfuCounter(r, hits)
	}
	s, _ := fitZipf(sim, n)
	return s
}

// lfuCounter is a counter after hits hits, each raising it with Redis's
// probability (LFULogIncr), drawn a run of hits at a time: the hits until
// the next rise are geometric.
func lfuCounter(r *rand.Rand, hits float64) int64 {
	c := int64(lfuInit)
	for c < 255 && hits >= 1 {
		p := 1 / (float64(c-lfuInit)*lfuFactor + 1)
		k := 1.0
		if p < 1 {
			k = math.Ceil(math.Log(1-r.Float64()) / math.Log(1-p))
		}
		if k > hits {
			break
		}
		hits -= k
		c++
	}
	return c
}

// LFU counters: a key starts at lfuInit; with lfu-log-factor lfuFactor
// (Redis's default) a hit raises a counter c with probability
// 1/((c-lfuInit)*lfuFactor+1) (Redis's LFULogIncr). A different factor
// scales every count alike, which leaves the fitted slope as it is.
const (
	lfuInit       = 5
	lfuFactor     = 10
	minZipfPoints = 10
)

// lfuHits is about how many hits a key of counter c had: the middle of
// those that raise a counter from lfuInit to c and to c+1 (at small
// counters the steps are wide: 1 hit to reach 6, 11 more to reach 7).
func lfuHits(c int64) float64 {
	reach := func(c int64) float64 {
		d := float64(c - lfuInit)
		return d + lfuFactor*d*(d-1)/2
	}
	return (reach(c) + reach(c+1)) / 2
}

// fitZipf estimates the Zipf exponent of keys accessed over n keys
// from the LFU counters of a uniform sample of them: the exponent whose
// distribution gives the top 1% and the top 10% of the keys the shares of
// the hits that the sample's top 1% and 10% have (hits estimated from the
// counters, 0 at lfuInit and below), matched on a log scale over a grid
// of exponents. Shares of the hits rather than the slope of a rank–count
// plot: the counters' coarse steps at few hits, and the ranking of noise,
// would make a flat distribution look skewed there. It returns the
// exponent and the number of counters above lfuInit.
func fitZipf(freqs []int64, n int) (s float64, used int) {
	hits := make([]float64, len(freqs))
	var total float64
	for i, f := range freqs {
		if f > lfuInit {
			hits[i] = lfuHits(f)
			total += hits[i]
			used++
		}
	}
	if used < minZipfPoints || n < 2 {
		return 0, used
	}
	slices.SortFunc(hits, func(a, b float64) int { return cmp.Compare(b, a) })
	fractions := []float64{0.01, 0.1}
	observed := make([]float64, len(fractions))
	for i, f := range fractions {
		top := max(int(math.Round(f*float64(len(hits)))), 1)
		var sum float64
		for _, h := range hits[:top] {
			sum += h
		}
		observed[i] = sum / total
	}
	best, bestLoss := 0.0, math.Inf(1)
	for e := 0.0; e <= workload.MaxZipf; e += 0.01 {
		all := zipfMass(n, e)
		var loss float64
		for i, f := range fractions {
			d := math.Log(observed[i]) - math.Log(zipfMass(max(int(math.Round(f*float64(n))), 1), e)/all)
			loss += d * d
		}
		if loss < bestLoss {
			best, bestLoss = e, loss
		}
	}
	return best, used
}

// zipfMass is the sum of k^-s over k in [1, n]: exact over the first
// thousand terms, Euler–Maclaurin's integral and end correction after.
func zipfMass(n int, s float64) float64 {
	const exact = 1000
	var sum float64
	for k := 1; k <= min(n, exact); k++ {
		sum += math.Pow(float64(k), -s)
	}
	if n <= exact {
		return sum
	}
	a, b := float64(exact), float64(n)
	if math.Abs(s-1) < 1e-9 {
		sum += math.Log(b / a)
	} else {
		sum += (math.Pow(b, 1-s) - math.Pow(a, 1-s)) / (1 - s)
	}
	return sum + (math.Pow(b, -s)-math.Pow(a, -s))/2
}

// valueSize estimates the length of a string value from its MEMORY USAGE,
// after Redis 7's accounting: the key's dict entry (24 bytes, and 16 of
// metadata on a cluster node), the key's sds, and the value object — one
// allocation of a 16-byte header, a 3-byte sds header and the bytes for
// up to 44 bytes (embstr), else a 16-byte header and an sds of its own.
// With jemalloc an allocation is rounded up to its size class; the value
// is then somewhere in the class, and the middle is taken.
func valueSize(usage int64, keyLen int, cluster, jemalloc bool) int {
	alloc := func(n int) int { return n }
	prev := func(n int) int { return n - 1 }
	if jemalloc {
		alloc, prev = jemallocClass, jemallocPrevClass
	}
	keyHdr := 1 // sdshdr5 up to 31 bytes
	if keyLen >= 32 {
		keyHdr = sdsHeader(keyLen)
	}
	a := int(usage) - 24 - alloc(keyLen+keyHdr+1)
	if cluster {
		a -= 16
	}
	var lo, hi int // the value's length is in (lo, hi]
	switch {
	case a <= 16: // an integer, held in the header's pointer
		return 8
	case a <= 64 && jemalloc, a <= 16+3+44+1: // embstr
		lo, hi = prev(a)-20, a-20
	default:
		b := a - 16
		h := sdsHeader(b) + 1
		lo, hi = prev(b)-h, b-h
	}
	return max((max(lo, 0)+hi+1)/2, 1)
}

// sdsHeader is the header of an sds of n bytes (sdshdr8, 16 or 32).
func sdsHeader(n int) int {
	switch {
	case n < 1<<8:
		return 3
	case n < 1<<16:
		return 5
	}
	return 9
}

// jemallocClass is the size jemalloc allocates for n bytes: multiples of
// 8 up to 8 bytes, of 16 up to 128, then four classes per doubling.
func jemallocClass(n int) int {
	switch {
	case n <= 8:
		return 8
	case n <= 128:
		return (n + 15) &^ 15
	}
	g := 1 << (bits.Len(uint(n-1)) - 3)
	return (n + g - 1) / g * g
}

// jemallocPrevClass is the class below the class c.
func jemallocPrevClass(c int) int {
	switch {
	case c <= 8:
		return 0
	case c <= 16:
		return 8
	case c <= 128:
		return c - 16
	}
	return c - 1<<(bits.Len(uint(c-1))-3)
}

// sizeBuckets turns sampled sizes into at most four weighted sizes: the
// sizes grouped by power of two, the four largest groups kept (the keys of
// the others counted in the nearest kept one), each named by its median
// to two significant digits, weighted by its share of the keys in
// percent.
func sizeBuckets(sizes []int) workload.ValueSpec {
	groups := map[int][]int{}
	for _, s := range sizes {
		g := bits.Len(uint(s))
		groups[g] = append(groups[g], s)
	}
	var order []int
	for g := range groups {
		order = append(order, g)
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Or(cmp.Compare(len(groups[b]), len(groups[a])), cmp.Compare(a, b)) })
	kept := order[:min(len(order), 4)]
	counts := map[int]int{}
	for _, g := range order {
		near := slices.MinFunc(kept, func(a, b int) int { return cmp.Compare(abs(a-g), abs(b-g)) })
		counts[near] += len(groups[g])
	}
	slices.Sort(kept)
	var v workload.ValueSpec
	for _, g := range kept {
		s := slices.Clone(groups[g])
		slices.Sort(s)
		w := max(math.Round(100*float64(counts[g])/float64(len(sizes))), 1)
		v.Sizes = append(v.Sizes, workload.SizeWeight{Bytes: roundSig2(s[len(s)/2]), Weight: w})
	}
	if len(v.Sizes) == 1 {
		return workload.ValueSpec{Min: v.Sizes[0].Bytes, Max: v.Sizes[0].Bytes}
	}
	return v
}

func abs(x int) int { return max(x, -x) }

// roundSig2 rounds n to two significant digits: 4602 → 4600.
func roundSig2(n int) int {
	if n < 100 {
		return n
	}
	p := int(math.Pow10(len(strconv.Itoa(n)) - 2))
	return (n + p/2) / p * p
}
