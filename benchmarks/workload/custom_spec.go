package workload

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The user's own workload, as the -mix, -keys, -key-dist, -value, -batch
// and -ttl flags of redisx-bench describe it (after memtier_benchmark's
// --ratio, --key-pattern, --data-size-list and --expiry-range): its parts,
// how each is read from a flag and written back, and its limits.

// CustomName is the name of the workload a Custom defines.
const CustomName = "custom"

// Ops of a Mix: GET and SET of one key, DEL of one key, MGET and MSET of
// Custom.Batch keys.
const (
	OpGet  = "get"
	OpSet  = "set"
	OpDel  = "del"
	OpMGet = "mget"
	OpMSet = "mset"
)

// mixOps are the ops a Mix may name, in the order they are written.
var mixOps = []string{OpGet, OpSet, OpDel, OpMGet, OpMSet}

// MixOps returns the ops a Mix may name, in the order they are written.
func MixOps() []string { return slices.Clone(mixOps) }

// Limits of a Custom.
const (
	// MaxValueSize is Redis's limit on a string value (proto-max-bulk-len).
	MaxValueSize = 512 << 20
	// MaxSeedBytes bounds what a Custom stores before it runs: Keys times
	// the mean value size plus SeedOverhead per key. The key count matters
	// little to a client's strategy; the skew and the sizes do.
	MaxSeedBytes = 1 << 30
	// MaxBatch bounds Custom.Batch.
	MaxBatch = 10_000
	// SeedOverhead is about what Redis spends on a key besides its value
	// (dict entry, object header, the key's own bytes), in bytes.
	SeedOverhead = 64
)

// MixOp is one op of a Mix and its weight.
type MixOp struct {
	Op     string  // OpGet, OpSet, OpDel, OpMGet or OpMSet
	Weight float64 // positive; relative to the other ops' weights
}

// Mix is the share of each op in a workload: "get:90,set:10" runs a GET
// nine times as often as a SET. Weights are relative: they need not add
// up to 100.
type Mix []MixOp

// ParseMix reads OP:WEIGHT pairs separated by commas: "get:90,set:10".
// Ops are get, set, del, mget and mset, each named at most once; weights
// are positive numbers.
func ParseMix(s string) (Mix, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("benchmarks: -mix is empty: want OP:WEIGHT pairs such as get:90,set:10 (ops: %s)", strings.Join(mixOps, ", "))
	}
	var m Mix
	for _, part := range strings.Split(s, ",") {
		op, w, ok := strings.Cut(strings.TrimSpace(part), ":")
		op = strings.ToLower(strings.TrimSpace(op))
		if !ok {
			return nil, fmt.Errorf("benchmarks: -mix %q: %q is not OP:WEIGHT (such as get:90)", s, part)
		}
		if !slices.Contains(mixOps, op) {
			return nil, fmt.Errorf("benchmarks: -mix %q: unknown op %q (ops: %s)", s, op, strings.Join(mixOps, ", "))
		}
		if slices.ContainsFunc(m, func(o MixOp) bool { return o.Op == op }) {
			return nil, fmt.Errorf("benchmarks: -mix %q: %s is named twice", s, op)
		}
		weight, err := strconv.ParseFloat(strings.TrimSpace(w), 64)
		if err != nil || !(weight > 0) || math.IsInf(weight, 0) {
			return nil, fmt.Errorf("benchmarks: -mix %q: the weight of %s, %q, is not a positive number", s, op, w)
		}
		m = append(m, MixOp{Op: op, Weight: weight})
	}
	return m, nil
}

// String is the form ParseMix reads.
func (m Mix) String() string {
	parts := make([]string, len(m))
	for i, o := range m {
		parts[i] = o.Op + ":" + strconv.FormatFloat(o.Weight, 'f', -1, 64)
	}
	return strings.Join(parts, ",")
}

// Has reports whether m runs op.
func (m Mix) Has(op string) bool {
	return slices.ContainsFunc(m, func(o MixOp) bool { return o.Op == op })
}

// Key distributions.
const (
	DistUniform    = "uniform"
	DistZipf       = "zipf"
	DistGaussian   = "gaussian"
	DistSequential = "sequential"
)

// KeyDist is how an op picks its key among Custom.Keys:
//
//   - uniform: every key alike;
//   - zipf:S: key k (from 0) with probability proportional to (k+1)^-S,
//     S > 0 (YCSB's default is 0.99, memtier's 1);
//   - gaussian: around the middle key, with a standard deviation of a
//     sixth of the keys (memtier's default);
//   - sequential: each worker walks the keys in order from a start of
//     its own, wrapping around.
type KeyDist struct {
	Kind string  // DistUniform, DistZipf, DistGaussian or DistSequential
	S    float64 // the Zipf exponent (DistZipf only)
}

// MaxZipf is the largest Zipf exponent accepted: at 10 the first key
// takes all but 0.1% of the draws already.
const MaxZipf = 10

// ParseKeyDist reads uniform, zipf:S, gaussian or sequential.
func ParseKeyDist(s string) (KeyDist, error) {
	kind, arg, hasArg := strings.Cut(strings.ToLower(strings.TrimSpace(s)), ":")
	known := "uniform, zipf:S, gaussian or sequential"
	switch kind {
	case DistUniform, DistGaussian, DistSequential:
		if hasArg {
			return KeyDist{}, fmt.Errorf("benchmarks: -key-dist %q: %s takes no parameter (want %s)", s, kind, known)
		}
		return KeyDist{Kind: kind}, nil
	case DistZipf:
		exp, err := strconv.ParseFloat(arg, 64)
		if !hasArg || err != nil || !(exp > 0 && exp <= MaxZipf) {
			return KeyDist{}, fmt.Errorf("benchmarks: -key-dist %q: want zipf:S with an exponent 0 < S <= %d, such as zipf:0.99", s, MaxZipf)
		}
		return KeyDist{Kind: DistZipf, S: exp}, nil
	}
	return KeyDist{}, fmt.Errorf("benchmarks: -key-dist %q: unknown distribution (want %s)", s, known)
}

// String is the form ParseKeyDist reads.
func (d KeyDist) String() string {
	if d.Kind == DistZipf {
		return "zipf:" + strconv.FormatFloat(d.S, 'f', -1, 64)
	}
	if d.Kind == "" {
		return DistUniform
	}
	return d.Kind
}

// SizeWeight is one size of a weighted ValueSpec.
type SizeWeight struct {
	Bytes  int
	Weight float64
}

// ValueSpec is the size of the values, in bytes: one size (Min == Max,
// "64"), a range drawn uniformly (Min < Max, "64-4096"), or sizes drawn
// by weight (Sizes, "64:70,1024:25,32768:5"). Every key has a size of its
// own, drawn once: a SET writes, and a GET checks, that size.
type ValueSpec struct {
	Min, Max int
	Sizes    []SizeWeight
}

// ParseValue reads a size ("64"), a range ("64-4096") or weighted sizes
// ("64:70,1024:25,32768:5"). A size is bytes, or a number with KiB or MiB;
// every size is at most 512 MiB (MaxValueSize).
func ParseValue(s string) (ValueSpec, error) {
	s = strings.TrimSpace(s)
	switch {
	case strings.Contains(s, ":"):
		var v ValueSpec
		for _, part := range strings.Split(s, ",") {
			size, w, ok := strings.Cut(strings.TrimSpace(part), ":")
			if !ok {
				return ValueSpec{}, fmt.Errorf("benchmarks: -value %q: %q is not SIZE:WEIGHT (such as 1024:25)", s, part)
			}
			n, err := parseSize(size)
			if err != nil {
				return ValueSpec{}, fmt.Errorf("benchmarks: -value %q: %w", s, err)
			}
			if slices.ContainsFunc(v.Sizes, func(sw SizeWeight) bool { return sw.Bytes == n }) {
				return ValueSpec{}, fmt.Errorf("benchmarks: -value %q: size %d is named twice", s, n)
			}
			weight, err := strconv.ParseFloat(strings.TrimSpace(w), 64)
			if err != nil || !(weight > 0) || math.IsInf(weight, 0) {
				return ValueSpec{}, fmt.Errorf("benchmarks: -value %q: the weight of size %d, %q, is not a positive number", s, n, w)
			}
			v.Sizes = append(v.Sizes, SizeWeight{Bytes: n, Weight: weight})
		}
		return v, nil
	case strings.Contains(s, "-"):
		lo, hi, _ := strings.Cut(s, "-")
		a, err := parseSize(lo)
		if err != nil {
			return ValueSpec{}, fmt.Errorf("benchmarks: -value %q: %w", s, err)
		}
		b, err := parseSize(hi)
		if err != nil {
			return ValueSpec{}, fmt.Errorf("benchmarks: -value %q: %w", s, err)
		}
		if a > b {
			return ValueSpec{}, fmt.Errorf("benchmarks: -value %q: the range runs backwards (want MIN-MAX, such as 64-4096)", s)
		}
		return ValueSpec{Min: a, Max: b}, nil
	}
	n, err := parseSize(s)
	if err != nil {
		return ValueSpec{}, fmt.Errorf("benchmarks: -value %q: %w (want a size, MIN-MAX or SIZE:WEIGHT,…)", s, err)
	}
	return ValueSpec{Min: n, Max: n}, nil
}

// parseSize reads bytes, or a number with B, KiB or MiB. SI units (KB,
// MB) are refused rather than guessed at, as redisx.ParseURL does.
func parseSize(s string) (int, error) {
	s = strings.TrimSpace(s)
	num, mult := s, 1
	for _, u := range []struct {
		suffix string
		mult   int
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"B", 1}} {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			num, mult = n, u.mult
			break
		}
	}
	n, err := strconv.Atoi(strings.TrimSpace(num))
	switch {
	case err != nil || n < 0:
		return 0, fmt.Errorf("size %q is not a number of bytes (such as 64, 4KiB or 1MiB)", s)
	case n > MaxValueSize/mult:
		return 0, fmt.Errorf("size %q is over Redis's 512 MiB limit on a value", s)
	}
	return n * mult, nil
}

// String is the form ParseValue reads, sizes in bytes.
func (v ValueSpec) String() string {
	if len(v.Sizes) > 0 {
		parts := make([]string, len(v.Sizes))
		for i, sw := range v.Sizes {
			parts[i] = strconv.Itoa(sw.Bytes) + ":" + strconv.FormatFloat(sw.Weight, 'f', -1, 64)
		}
		return strings.Join(parts, ",")
	}
	if v.Min == v.Max {
		return strconv.Itoa(v.Min)
	}
	return strconv.Itoa(v.Min) + "-" + strconv.Itoa(v.Max)
}

// Mean is the expected size of a key's value, in bytes.
func (v ValueSpec) Mean() float64 {
	if len(v.Sizes) == 0 {
		return float64(v.Min+v.Max) / 2
	}
	var sum, total float64
	for _, sw := range v.Sizes {
		sum += float64(sw.Bytes) * sw.Weight
		total += sw.Weight
	}
	return sum / total
}

// largest is the largest size v draws.
func (v ValueSpec) largest() int {
	n := v.Max
	for _, sw := range v.Sizes {
		n = max(n, sw.Bytes)
	}
	return n
}

// Sources of a Custom.
const (
	SourceFlags   = "flags"
	SourceProfile = "profile"
)

// Custom is the user's own workload: its mix of ops over a key space of
// Keys keys (named KeyPrefix+"custom:N", hashed normally, so that on a
// cluster they spread over the slots as a service's keys do, and an MGET
// or MSET of Batch keys spans several slots), picked by KeyDist, with
// values of Value's sizes, written with a TTL of TTL (0: none). Its
// Workload stores every key before the run, so that a GET finds a value
// unless a DEL or an expiry removed it (a miss is not an error).
type Custom struct {
	Mix     Mix
	Keys    int
	KeyDist KeyDist
	Value   ValueSpec
	Batch   int           // keys of an MGET or MSET
	TTL     time.Duration // of every key written; 0: no expiry
	// Source says where the description came from: SourceFlags or
	// SourceProfile (read from a server by profile.Read).
	Source string
	// Cluster runs the workload on the cluster rather than the
	// standalone server.
	Cluster bool
}

// DefaultCustom is the workload of the custom flags not given: get:90,set:10
// over 10,000 keys, uniform, 64 B values, batches of 10, no expiry.
func DefaultCustom() Custom {
	return Custom{
		Mix:     Mix{{OpGet, 90}, {OpSet, 10}},
		Keys:    10_000,
		KeyDist: KeyDist{Kind: DistUniform},
		Value:   ValueSpec{Min: 64, Max: 64},
		Batch:   10,
		Source:  SourceFlags,
	}
}

// Validate reports what makes c impossible to run, with the flag to
// change.
func (c Custom) Validate() error {
	var errs []error
	if len(c.Mix) == 0 {
		errs = append(errs, errors.New("benchmarks: the custom workload has no op (-mix)"))
	}
	if c.Keys < 1 {
		errs = append(errs, fmt.Errorf("benchmarks: -keys %d: want at least one key", c.Keys))
	}
	if c.Batch < 1 || c.Batch > MaxBatch {
		errs = append(errs, fmt.Errorf("benchmarks: -batch %d: want 1 to %d keys per mget or mset", c.Batch, MaxBatch))
	} else if (c.Mix.Has(OpMGet) || c.Mix.Has(OpMSet)) && c.Batch > c.Keys {
		errs = append(errs, fmt.Errorf("benchmarks: -batch %d is more than the %d keys (-keys)", c.Batch, c.Keys))
	}
	if c.Mix.Has(OpMSet) && float64(c.Batch)*float64(c.Value.largest()) > MaxValueSize {
		errs = append(errs, fmt.Errorf("benchmarks: -batch %d of values up to %d bytes: an MSET over 512 MiB", c.Batch, c.Value.largest()))
	}
	if c.TTL < 0 || c.TTL > 0 && c.TTL < time.Millisecond {
		errs = append(errs, fmt.Errorf("benchmarks: -ttl %v: want 0 (no expiry) or at least 1ms", c.TTL))
	}
	if c.Keys > 0 {
		if seed := float64(c.Keys) * (c.Value.Mean() + SeedOverhead); seed > MaxSeedBytes {
			errs = append(errs, fmt.Errorf("benchmarks: -keys %d of values of %.0f bytes on average would store %s before the run, over the %s limit: lower -keys",
				c.Keys, c.Value.Mean(), FormatBytes(int64(seed)), FormatBytes(MaxSeedBytes)))
		}
	}
	switch c.KeyDist.Kind {
	case DistUniform, DistGaussian, DistSequential, "":
	case DistZipf:
		if !(c.KeyDist.S > 0 && c.KeyDist.S <= MaxZipf) {
			errs = append(errs, fmt.Errorf("benchmarks: -key-dist zipf:%v: want 0 < S <= %d", c.KeyDist.S, MaxZipf))
		}
	default:
		errs = append(errs, fmt.Errorf("benchmarks: unknown key distribution %q", c.KeyDist.Kind))
	}
	return errors.Join(errs...)
}

// Flags is c as redisx-bench flags, to read, edit and run again.
func (c Custom) Flags() string {
	return fmt.Sprintf("-mix %s -keys %d -key-dist %s -value %s -batch %d -ttl %s",
		c.Mix, c.Keys, c.KeyDist, c.Value, c.Batch, FormatDuration(c.TTL))
}

// describe is c in a sentence, for Workload.Description.
func (c Custom) describe() string {
	ttl := "no expiry"
	if c.TTL > 0 {
		ttl = "ttl " + FormatDuration(c.TTL)
	}
	batch := ""
	if c.Mix.Has(OpMGet) || c.Mix.Has(OpMSet) {
		batch = fmt.Sprintf(", %d keys per mget/mset", c.Batch)
	}
	return fmt.Sprintf("the user's workload (from %s): %s over %d keys (%s), values of %s bytes%s, %s; one op = one command",
		c.Source, c.Mix, c.Keys, c.KeyDist, c.Value, batch, ttl)
}
