package workload_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redisx-go/kit/benchmarks/workload"
)

func TestParseMixReadsWeightsAndNamesWhatIsWrong(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want workload.Mix
	}{
		{"get:90,set:10", workload.Mix{{Op: "get", Weight: 90}, {Op: "set", Weight: 10}}},
		{" GET : 1 ", workload.Mix{{Op: "get", Weight: 1}}},
		{"get:0.5,del:1,mget:2,mset:3,set:4", workload.Mix{{"get", 0.5}, {"del", 1}, {"mget", 2}, {"mset", 3}, {"set", 4}}},
	} {
		got, err := workload.ParseMix(tc.in)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseMix(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			continue
		}
		if back, err := workload.ParseMix(got.String()); err != nil || !reflect.DeepEqual(back, got) {
			t.Errorf("ParseMix(%q.String() = %q) = %v, %v; want it back", tc.in, got.String(), back, err)
		}
	}
	for _, tc := range []struct{ in, says string }{
		{"", "empty"},
		{"get", "not OP:WEIGHT"},
		{"get:90,foo:10", `unknown op "foo" (ops: get, set, del, mget, mset)`},
		{"get:0", "not a positive number"},
		{"get:-1", "not a positive number"},
		{"get:abc", "not a positive number"},
		{"get:NaN", "not a positive number"},
		{"get:Inf", "not a positive number"},
		{"get:1,get:2", "named twice"},
	} {
		_, err := workload.ParseMix(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("ParseMix(%q) error = %v; want one saying %q", tc.in, err, tc.says)
		}
	}
}

func TestParseKeyDistReadsTheFourDistributions(t *testing.T) {
	for in, want := range map[string]workload.KeyDist{
		"uniform":    {Kind: "uniform"},
		"zipf:0.99":  {Kind: "zipf", S: 0.99},
		"ZIPF:2":     {Kind: "zipf", S: 2},
		"gaussian":   {Kind: "gaussian"},
		"sequential": {Kind: "sequential"},
	} {
		got, err := workload.ParseKeyDist(in)
		if err != nil || got != want {
			t.Errorf("ParseKeyDist(%q) = %v, %v; want %v", in, got, err, want)
		}
		if back, err := workload.ParseKeyDist(got.String()); err != nil || back != got {
			t.Errorf("ParseKeyDist(%q) = %v, %v; want %v back", got.String(), back, err, got)
		}
	}
	for _, in := range []string{"", "zipf", "zipf:", "zipf:0", "zipf:-1", "zipf:11", "zipf:x", "pareto", "uniform:1", "sequential:2"} {
		if _, err := workload.ParseKeyDist(in); err == nil || !strings.Contains(err.Error(), "-key-dist") {
			t.Errorf("ParseKeyDist(%q) error = %v; want one naming -key-dist", in, err)
		}
	}
}

func TestParseValueReadsSizesRangesAndWeights(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want workload.ValueSpec
		str  string
	}{
		{"64", workload.ValueSpec{Min: 64, Max: 64}, "64"},
		{"0", workload.ValueSpec{}, "0"},
		{"4KiB", workload.ValueSpec{Min: 4096, Max: 4096}, "4096"},
		{"512MiB", workload.ValueSpec{Min: 512 << 20, Max: 512 << 20}, "536870912"},
		{"64-4096", workload.ValueSpec{Min: 64, Max: 4096}, "64-4096"},
		{"64:70,1024:25,32KiB:5", workload.ValueSpec{Sizes: []workload.SizeWeight{{64, 70}, {1024, 25}, {32768, 5}}}, "64:70,1024:25,32768:5"},
	} {
		got, err := workload.ParseValue(tc.in)
		if err != nil || !reflect.DeepEqual(got, tc.want) || got.String() != tc.str {
			t.Errorf("ParseValue(%q) = %+v (%q), %v; want %+v (%q)", tc.in, got, got.String(), err, tc.want, tc.str)
		}
	}
	for _, tc := range []struct{ in, says string }{
		{"", "not a number"},
		{"x", "not a number"},
		{"-1", "not a number"},
		{"4KB", "not a number"},
		{"513MiB", "512 MiB"},
		{"536870913", "512 MiB"},
		{"4096-64", "backwards"},
		{"64-", "not a number"},
		{"64:", "not a positive number"},
		{"64:0", "not a positive number"},
		{"64:1,64:2", "named twice"},
		{"64:1,2048", "not SIZE:WEIGHT"},
	} {
		_, err := workload.ParseValue(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "-value") {
			t.Errorf("ParseValue(%q) error = %v; want one naming -value and saying %q", tc.in, err, tc.says)
		}
	}
}

func TestCustomValidateRefusesWhatCannotRun(t *testing.T) {
	ok := workload.DefaultCustom()
	if err := ok.Validate(); err != nil {
		t.Fatalf("DefaultCustom().Validate() = %v", err)
	}
	for _, tc := range []struct {
		says string
		edit func(*workload.Custom)
	}{
		{"no op", func(c *workload.Custom) { c.Mix = nil }},
		{"-keys 0", func(c *workload.Custom) { c.Keys = 0 }},
		{"-batch 0", func(c *workload.Custom) { c.Batch = 0 }},
		{"-batch 10001", func(c *workload.Custom) { c.Batch = 10_001 }},
		{"more than the 5 keys", func(c *workload.Custom) { c.Keys, c.Mix = 5, workload.Mix{{"mget", 1}} }},
		{"over 512 MiB", func(c *workload.Custom) {
			c.Mix, c.Batch, c.Keys = workload.Mix{{"mset", 1}}, 100, 100
			c.Value = workload.ValueSpec{Min: 64 << 20, Max: 64 << 20}
		}},
		{"-ttl 500µs", func(c *workload.Custom) { c.TTL = 500 * time.Microsecond }},
		{"-ttl -1s", func(c *workload.Custom) { c.TTL = -time.Second }},
		{"lower -keys", func(c *workload.Custom) { c.Keys, c.Value = 1_000_000, workload.ValueSpec{Min: 4096, Max: 4096} }},
	} {
		c := workload.DefaultCustom()
		tc.edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("Validate() = %v; want an error saying %q", err, tc.says)
		}
	}
	// A batch larger than the keys is fine when no op batches.
	c := workload.DefaultCustom()
	c.Keys = 3
	if err := c.Validate(); err != nil {
		t.Errorf("get/set over 3 keys with -batch 10: Validate() = %v; want nil", err)
	}
}

func TestCustomFlagsReadBack(t *testing.T) {
	c := workload.Custom{
		Mix: workload.Mix{{"get", 80}, {"mset", 20}}, Keys: 5000, KeyDist: workload.KeyDist{Kind: "zipf", S: 0.9},
		Value: workload.ValueSpec{Sizes: []workload.SizeWeight{{64, 80}, {4096, 20}}}, Batch: 20, TTL: 90 * time.Minute,
	}
	want := "-mix get:80,mset:20 -keys 5000 -key-dist zipf:0.9 -value 64:80,4096:20 -batch 20 -ttl 1h30m"
	if got := c.Flags(); got != want {
		t.Errorf("Flags() = %q; want %q", got, want)
	}
}
