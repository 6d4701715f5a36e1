package profile_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/benchmarks/profile"
	"github.com/redisx-go/kit/benchmarks/workload"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
)

// serverState is what a profile must leave as it was: the calls of every
// command (commandstats), the changes since the last save and DBSIZE.
type serverState struct {
	calls   map[string]int64
	changes string
	dbsize  int64
}

func readState(t *testing.T, c redigo.Conn) serverState {
	t.Helper()
	st := serverState{calls: map[string]int64{}}
	text, err := redigo.String(c.Do("INFO", "commandstats"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(text, "\n") {
		name, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if name, ok2 := strings.CutPrefix(name, "cmdstat_"); ok && ok2 {
			calls, _, _ := strings.Cut(strings.TrimPrefix(v, "calls="), ",")
			st.calls[name], _ = strconv.ParseInt(calls, 10, 64)
		}
	}
	persistence, err := redigo.String(c.Do("INFO", "persistence"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(persistence, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "rdb_changes_since_last_save:"); ok {
			st.changes = v
		}
	}
	if st.dbsize, err = redigo.Int64(c.Do("DBSIZE")); err != nil {
		t.Fatal(err)
	}
	return st
}

// seedProfiled stores 2000 string keys, 80% of 64 B and 20% of 4 KiB,
// 70% of them with a TTL of an hour, and 10 hashes; then, statistics
// reset, runs 90,000 GETs and 10,000 SETs of keys drawn by draw, and 500
// HGETs.
func seedProfiled(t *testing.T, c redigo.Conn, draw func() int) {
	t.Helper()
	key := func(i int) string { return fmt.Sprintf("app:item:%d", i) }
	size := func(i int) int {
		if i%5 == 0 {
			return 4096
		}
		return 64
	}
	pipeline := func(n int, send func(i int) error) {
		t.Helper()
		for i := range n {
			if err := send(i); err != nil {
				t.Fatal(err)
			}
			if i%500 == 499 || i == n-1 {
				if err := c.Flush(); err != nil {
					t.Fatal(err)
				}
				for range i%500 + 1 {
					if _, err := c.Receive(); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	pipeline(2000, func(i int) error {
		v := strings.Repeat("v", size(i))
		if i%10 < 7 {
			return c.Send("SET", key(i), v, "EX", 3600)
		}
		return c.Send("SET", key(i), v)
	})
	pipeline(10, func(i int) error { return c.Send("HSET", fmt.Sprintf("app:hash:%d", i), "f", "v") })
	if _, err := c.Do("CONFIG", "RESETSTAT"); err != nil {
		t.Fatal(err)
	}
	pipeline(100_000, func(i int) error {
		k := draw()
		if i%10 == 9 {
			return c.Send("SET", key(k), strings.Repeat("v", size(k)), "KEEPTTL")
		}
		return c.Send("GET", key(k))
	})
	pipeline(500, func(i int) error { return c.Send("HGET", fmt.Sprintf("app:hash:%d", i%10), "f") })
}

// lfuServer starts a server of its own (not REDISX_BENCH_ADDR's: the test
// sets its policy and resets its statistics) with an LFU policy, and a
// connection to it.
func lfuServer(t *testing.T) (*launcher.Server, redigo.Conn) {
	t.Helper()
	srv := launcher.Private(t, launcher.Options{Args: []string{"--maxmemory-policy", "allkeys-lfu"}})
	c, err := redigo.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return srv, c
}

func TestProfileReadsTheWorkloadAndLeavesTheServerUnchanged(t *testing.T) {
	ctx := context.Background()
	srv, c := lfuServer(t)
	z := rand.NewZipf(rand.New(rand.NewPCG(1, 2)), 1.1, 1, 1999)
	seedProfiled(t, c, func() int { return int(z.Uint64()) })

	before := readState(t, c)
	p, err := profile.Read(ctx, "redis://"+srv.Addr(), profile.Options{})
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	after := readState(t, c)

	// H4: nothing written, no key added or removed.
	if after.changes != before.changes || after.dbsize != before.dbsize {
		t.Errorf("rdb_changes_since_last_save %s → %s, DBSIZE %d → %d; want both unchanged",
			before.changes, after.changes, before.dbsize, after.dbsize)
	}
	// Every command sent is a read (readState's own INFO and DBSIZE
	// included); the write commands' calls did not move.
	reads := []string{"info", "dbsize", "scan", "type", "pttl", "memory|usage", "object|freq", "cluster|info"}
	for name, n := range after.calls {
		if n != before.calls[name] && !slices.Contains(reads, name) {
			t.Errorf("the profile sent %s (%d calls → %d); want reads only", name, before.calls[name], n)
		}
	}

	t.Logf("profile: %s\n%s", p.Custom.Flags(), strings.Join(p.Notes, "\n"))
	c0 := p.Custom
	if c0.Source != workload.SourceProfile || c0.Keys != 2010 || p.Sampled != 1000 || p.Cluster {
		t.Errorf("source %q, keys %d, %d sampled, cluster %v; want profile, DBSIZE 2010, 1000 sampled, standalone",
			c0.Source, c0.Keys, p.Sampled, p.Cluster)
	}
	if got := c0.Mix.String(); got != "get:90,set:10" {
		t.Errorf("mix %s; want get:90,set:10", got)
	}
	if v := c0.Value; len(v.Sizes) != 2 || !within(float64(v.Sizes[0].Bytes), 64, 64*0.15) || !within(float64(v.Sizes[1].Bytes), 4096, 4096*0.15) ||
		!within(v.Sizes[0].Weight, 80, 5) || !within(v.Sizes[1].Weight, 20, 5) {
		t.Errorf("-value %s; want about 64:80,4096:20", v)
	}
	if c0.TTL < time.Hour || c0.TTL > 2*time.Hour {
		t.Errorf("-ttl %v; want between the hour the keys were given and twice that", c0.TTL)
	}
	if d := c0.KeyDist; d.Kind != workload.DistZipf || math.Abs(d.S-1.1) > 0.4 {
		t.Errorf("-key-dist %s; want zipf near the 1.1 of the traffic", d)
	}
	notes := strings.Join(p.Notes, "\n")
	for _, want := range []string{"hget 500", "not strings (hash", "-batch"} {
		if want == "-batch" {
			if strings.Contains(notes, want) {
				t.Errorf("notes mention -batch without mget or mset in the mix:\n%s", notes)
			}
			continue
		}
		if !strings.Contains(notes, want) {
			t.Errorf("notes say nothing of %q:\n%s", want, notes)
		}
	}
}

func TestProfileOfUniformAccessSaysUniform(t *testing.T) {
	srv, c := lfuServer(t)
	r := rand.New(rand.NewPCG(1, 2))
	seedProfiled(t, c, func() int { return r.IntN(2000) })
	p, err := profile.Read(context.Background(), srv.Addr(), profile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Custom.KeyDist.Kind != workload.DistUniform {
		t.Errorf("-key-dist %s after uniform traffic; want uniform:\n%s", p.Custom.KeyDist, strings.Join(p.Notes, "\n"))
	}
}

func TestProfileOfAServerWithoutLFUAssumesUniform(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	ctx := context.Background()
	if _, err := srv.CLI(ctx, "MSET", "a", "1", "b", "2"); err != nil {
		t.Fatal(err)
	}
	defer srv.CLI(ctx, "DEL", "a", "b")
	p, err := profile.Read(ctx, srv.Addr(), profile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Custom.KeyDist.Kind != workload.DistUniform || !strings.Contains(strings.Join(p.Notes, "\n"), "uniform assumed: the server's maxmemory-policy") {
		t.Errorf("key dist %s, notes:\n%s\nwant uniform, saying it was assumed", p.Custom.KeyDist, strings.Join(p.Notes, "\n"))
	}
}

func within(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

func TestProfileOfAClusterNodeCountsEveryMaster(t *testing.T) {
	ctx := context.Background()
	seeds := launcher.ClusterForTest(t, launcher.ClusterOptions{Masters: 3}).Addrs()
	c, err := redisx.New(ctx, redisx.Options{Addrs: seeds})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() }) // after the keys are deleted
	kv := map[string][]byte{}
	for i := range 3000 {
		size := 64
		if i%5 == 0 {
			size = 4096
		}
		kv["app:profiled:"+strconv.Itoa(i)] = []byte(strings.Repeat("v", size))
	}
	if err := c.MSet(ctx, kv, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		keys := make([]string, 0, len(kv))
		for k := range kv {
			keys = append(keys, k)
		}
		if _, err := c.Del(ctx, keys...); err != nil {
			t.Error(err)
		}
	})
	p, err := profile.Read(ctx, seeds[0], profile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := p.Custom.Value
	if !p.Cluster || !within(float64(p.Custom.Keys), 3000, 300) || len(v.Sizes) != 2 ||
		!within(float64(v.Sizes[0].Bytes), 64, 64*0.15) || !within(float64(v.Sizes[1].Bytes), 4096, 4096*0.15) {
		t.Errorf("cluster %v, -keys %d, -value %s; want a cluster node, about 3000 keys over 3 masters, about 64:80,4096:20\n%s",
			p.Cluster, p.Custom.Keys, v, strings.Join(p.Notes, "\n"))
	}
}
