package profile

import (
	"errors"
	"fmt"
	"math"
	"testing"
)

func TestProfileSendsOnlyReadCommands(t *testing.T) {
	for _, cmd := range [][]any{
		{"INFO", "commandstats"}, {"DBSIZE"}, {"SCAN", "0", "COUNT", 100}, {"TYPE", "k"}, {"PTTL", "k"},
		{"MEMORY", "USAGE", "k"}, {"object", "freq", "k"}, {"CLUSTER", "INFO"},
	} {
		if err := checkReadOnly(cmd[0].(string), cmd[1:]); err != nil {
			t.Errorf("%v: %v; want it allowed", cmd, err)
		}
	}
	for _, cmd := range [][]any{
		{"SET", "k", "v"}, {"DEL", "k"}, {"CLIENT", "SETNAME", "x"}, {"CONFIG", "SET", "maxmemory", "1"},
		{"CONFIG", "GET", "maxmemory"}, {"MEMORY", "PURGE"}, {"OBJECT", "ENCODING", "k"}, {"CLUSTER", "RESET"},
		{"GET", "k"}, {"STRLEN", "k"}, {"FLUSHALL"}, {"MEMORY"},
	} {
		if err := checkReadOnly(cmd[0].(string), cmd[1:]); !errors.Is(err, ErrNotReadOnly) {
			t.Errorf("%v: %v; want ErrNotReadOnly", cmd, err)
		}
	}
}

func TestValueSizeInvertsRedisMemoryUsage(t *testing.T) {
	// MEMORY USAGE of redisx-bench:custom:N holding N bytes, read from
	// redis-server 7.0.15 (jemalloc 5.3.0).
	for n, usage := range map[int]int64{
		1: 88, 10: 88, 44: 120, 45: 136, 64: 152, 100: 184, 500: 584, 1000: 1096, 1024: 1352,
		2000: 2120, 4000: 4168, 4096: 5192, 8192: 10312, 32768: 41032, 100000: 114760,
	} {
		key := fmt.Sprintf("redisx-bench:custom:%d", n)
		got := valueSize(usage, len(key), false, true)
		if d := math.Abs(float64(got - n)); d > 0.13*float64(n) && d > 12 {
			t.Errorf("valueSize(%d, %d bytes of key) = %d; want %d within 13%%", usage, len(key), got, n)
		}
	}
}

func TestJemallocClasses(t *testing.T) {
	for n, want := range map[int]int{1: 8, 8: 8, 9: 16, 21: 32, 68: 80, 128: 128, 129: 160, 1005: 1024, 1025: 1280, 4101: 5120, 32774: 40960} {
		if got := jemallocClass(n); got != want {
			t.Errorf("jemallocClass(%d) = %d; want %d", n, got, want)
		}
	}
	for c, want := range map[int]int{8: 0, 16: 8, 32: 16, 80: 64, 160: 128, 1024: 896, 5120: 4096, 40960: 32768, 5120 + 1024: 5120} {
		if got := jemallocPrevClass(c); got != want {
			t.Errorf("jemallocPrevClass(%d) = %d; want %d", c, got, want)
		}
	}
}

func TestSizeBucketsKeepTheLargestGroups(t *testing.T) {
	var sizes []int
	add := func(n, size int) {
		for range n {
			sizes = append(sizes, size)
		}
	}
	add(60, 100)
	add(25, 1000)
	add(10, 30000)
	add(3, 300_000)
	add(2, 5) // the fifth group: counted in the nearest kept one (100)
	if got, want := sizeBuckets(sizes).String(), "100:62,1000:25,30000:10,300000:3"; got != want {
		t.Errorf("sizeBuckets = %s; want %s", got, want)
	}
	if got := sizeBuckets([]int{64, 70, 66}).String(); got != "66" {
		t.Errorf("one group: %s; want 66", got)
	}
}
