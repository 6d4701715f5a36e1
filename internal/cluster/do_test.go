package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"

	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/launcher"
)

// Where Do sends a command on a cluster: by its key positions
// from the server's key specs, to every master for the keyless commands
// whose request policy says so, and nowhere — with a clear error — when
// the keys span slots or each master's reply stands alone.

func (d doBackend) do(t *testing.T, args ...any) any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := d.Do(ctx, args...)
	if err != nil {
		t.Fatalf("Do%q: %v", args, err)
	}
	return v
}

const (
	getScript = "return redis.call('GET', KEYS[1])"
	getLib    = "#!lua name=redisxtest\nredis.register_function('getit', function(keys, args) return redis.call('GET', keys[1]) end)"
)

func TestClusterDo(t *testing.T) {
	// EVAL_RO and LASTSAVE renamed: commands the table does not know, one
	// with keys (movable ones), one without.
	cl := launcher.ClusterForTest(t, launcher.ClusterOptions{Args: []string{
		"--rename-command", "EVAL_RO", "MYEVALRO",
		"--rename-command", "LASTSAVE", "MYLASTSAVE",
	}})
	if cl.External() {
		t.Skip("needs renamed commands on a cluster of its own")
	}
	strategies := []tcase{
		{"multiplexed", multiplexed},
		{"pool", pooled(8)},
		{"slot-grouped", slotGrouped},
	}
	masters, _ := masterKeys(t, cl, "do:probe:")

	t.Run("ScriptsStreamsAndObjectGoToTheirKeysMaster", func(t *testing.T) {
		for _, tc := range strategies {
			t.Run(tc.name, func(t *testing.T) {
				d := openDo(t, tc.s, cl.Addrs())
				_, keys := masterKeys(t, cl, "do:"+tc.name+":")
				sha, err := redigo.String(d.do(t, "SCRIPT", "LOAD", getScript), nil)
				if err != nil {
					t.Fatal(err)
				}
				if lib, err := redigo.String(d.do(t, "FUNCTION", "LOAD", "REPLACE", getLib), nil); err != nil || lib != "redisxtest" {
					t.Fatalf("FUNCTION LOAD = %q, %v; want redisxtest", lib, err)
				}
				before := d.Stats()
				for _, k := range keys {
					want := "v-" + k
					d.do(t, "SET", k, want)
					for _, args := range [][]any{
						{"EVAL", getScript, 1, k},
						{"EVALSHA", sha, 1, k},
						{"FCALL", "getit", 1, k},
						{"MYEVALRO", getScript, 1, k}, // unknown: COMMAND GETKEYS tells
					} {
						if v, err := redigo.String(d.do(t, args...), nil); err != nil || v != want {
							t.Errorf("Do%q = %q, %v; want %q", args, v, err, want)
						}
					}
					stream := "{" + k + "}:stream"
					d.do(t, "XADD", stream, "*", "f", "v")
					if v, err := redigo.Values(d.do(t, "XREAD", "COUNT", 1, "STREAMS", stream, "0"), nil); err != nil || len(v) != 1 {
						t.Errorf("XREAD STREAMS %q = %v, %v; want one stream", stream, v, err)
					}
					if v, err := redigo.String(d.do(t, "OBJECT", "ENCODING", k), nil); err != nil || v != "embstr" {
						t.Errorf("OBJECT ENCODING %q = %q, %v; want embstr", k, v, err)
					}
				}
				if after := d.Stats(); after.Redirects != before.Redirects {
					t.Errorf("%d redirects for commands routed by their keys; want none", after.Redirects-before.Redirects)
				}
			})
		}
	})

	t.Run("SteadyEvalshaNeitherRedirectsNorRefreshes", func(t *testing.T) {
		for _, tc := range strategies {
			t.Run(tc.name, func(t *testing.T) {
				d := openDo(t, tc.s, cl.Addrs())
				_, keys := masterKeys(t, cl, "do:steady:")
				sha, err := redigo.String(d.do(t, "SCRIPT", "LOAD", getScript), nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, k := range keys {
					d.do(t, "SET", k, "v-"+k)
				}
				before := d.Stats()
				var calls atomic.Int64
				errs := make(chan error, 4)
				var wg sync.WaitGroup
				end := time.Now().Add(time.Second)
				for g := 0; g < 4; g++ {
					wg.Go(func() {
						for i := 0; time.Now().Before(end); i++ {
							k := keys[i%len(keys)]
							v, err := redigo.String(d.Do(t.Context(), "EVALSHA", sha, 1, k))
							if err != nil || v != "v-"+k {
								errs <- fmt.Errorf("EVALSHA on %q = %q, %v", k, v, err)
								return
							}
							calls.Add(1)
						}
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Error(err)
				}
				after := d.Stats()
				t.Logf("%d EVALSHA calls in 1 s: redirects %d → %d, refreshes %d → %d",
					calls.Load(), before.Redirects, after.Redirects, before.TopologyRefreshes, after.TopologyRefreshes)
				if after.Redirects != before.Redirects || after.TopologyRefreshes != before.TopologyRefreshes {
					t.Errorf("a steady EVALSHA load caused %d redirects and %d refreshes; want none",
						after.Redirects-before.Redirects, after.TopologyRefreshes-before.TopologyRefreshes)
				}
			})
		}
	})

	t.Run("KeylessCommandsCoverEveryMaster", func(t *testing.T) {
		for _, tc := range strategies {
			t.Run(tc.name, func(t *testing.T) {
				d := openDo(t, tc.s, cl.Addrs())
				if v, err := redigo.String(d.do(t, "FLUSHALL"), nil); err != nil || v != "OK" {
					t.Fatalf("FLUSHALL = %q, %v; want OK", v, err)
				}
				ctx := t.Context()
				for _, m := range masters {
					if n, err := m.CLI(ctx, "DBSIZE"); err != nil || n != "0" {
						t.Fatalf("master %s holds %q keys after FLUSHALL (%v); want 0", m.Addr(), n, err)
					}
				}
				var keys []string
				for i := 0; i < 30; i++ {
					k := "all:" + strconv.Itoa(i)
					keys = append(keys, k)
					d.do(t, "SET", k, "v")
				}
				for _, m := range masters {
					if n, err := m.CLI(ctx, "DBSIZE"); err != nil || n == "0" {
						t.Fatalf("master %s holds %q of the 30 keys (%v); the test needs keys everywhere", m.Addr(), n, err)
					}
				}
				if n, err := redigo.Int64(d.do(t, "DBSIZE"), nil); err != nil || n != 30 {
					t.Errorf("DBSIZE = %d, %v; want 30, the sum over the masters", n, err)
				}
				got, err := redigo.Strings(d.do(t, "KEYS", "all:*"), nil)
				slices.Sort(got)
				slices.Sort(keys)
				if err != nil || !slices.Equal(got, keys) {
					t.Errorf("KEYS all:* = %q, %v; want the 30 keys of every master", got, err)
				}
				if k, err := redigo.String(d.do(t, "RANDOMKEY"), nil); err != nil || !slices.Contains(keys, k) {
					t.Errorf("RANDOMKEY = %q, %v; want one of the keys", k, err)
				}
				if v, err := redigo.String(d.do(t, "PING"), nil); err != nil || v != "PONG" {
					t.Errorf("PING = %q, %v; want PONG", v, err)
				}
				sha, err := redigo.String(d.do(t, "SCRIPT", "LOAD", getScript), nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range masters {
					if out, err := m.CLI(ctx, "SCRIPT", "EXISTS", sha); err != nil || out != "1" {
						t.Errorf("SCRIPT EXISTS on %s after SCRIPT LOAD = %q, %v; want 1 (every master)", m.Addr(), out, err)
					}
				}
				none := strings.Repeat("0", 40)
				if v, err := redigo.Int64s(d.do(t, "SCRIPT", "EXISTS", sha, none), nil); err != nil || !slices.Equal(v, []int64{1, 0}) {
					t.Errorf("SCRIPT EXISTS = %v, %v; want [1 0]", v, err)
				}
				if _, err := redigo.Int64(d.do(t, "MYLASTSAVE"), nil); err != nil {
					t.Errorf("MYLASTSAVE (unknown to the table, keyless): %v", err)
				}
				_, err = d.Do(ctx, "NOSUCHCOMMAND", "x")
				var re redigo.Error
				if !errors.As(err, &re) || !strings.Contains(string(re), "unknown command") {
					t.Errorf("Do(NOSUCHCOMMAND) = %v; want the server's unknown command error", err)
				}
				d.do(t, "FLUSHALL")
				if n, err := redigo.Int64(d.do(t, "DBSIZE"), nil); err != nil || n != 0 {
					t.Errorf("DBSIZE after FLUSHALL = %d, %v; want 0", n, err)
				}
			})
		}
	})

	t.Run("PerNodeCommandsRefused", func(t *testing.T) {
		d := openDo(t, multiplexed, cl.Addrs())
		for _, args := range [][]any{{"SCAN", 0}, {"INFO"}, {"MEMORY", "STATS"}} {
			_, err := d.Do(t.Context(), args...)
			if !errors.Is(err, backend.ErrUnsupported) || !strings.Contains(err.Error(), "DoOn") ||
				!strings.Contains(err.Error(), fmt.Sprint(args[0])) {
				t.Errorf("Do%q on a cluster = %v; want ErrUnsupported naming it and DoOn", args, err)
			}
		}
	})

	t.Run("DoOnEachMaster", func(t *testing.T) {
		for _, tc := range strategies {
			t.Run(tc.name, func(t *testing.T) {
				d := openDo(t, tc.s, cl.Addrs())
				ctx := t.Context()
				var want []string
				for _, m := range masters {
					want = append(want, m.Addr())
				}
				got := d.nodes.Masters()
				if !slices.Equal(got, want) {
					t.Fatalf("Masters = %v; want %v", got, want)
				}
				var keys []string
				for i := 0; i < 20; i++ {
					k := "scan:" + tc.name + ":" + strconv.Itoa(i)
					keys = append(keys, k)
					d.do(t, "SET", k, "v")
				}
				var found []string
				for i, addr := range got {
					n, err := redigo.Int64(d.nodes.DoOn(ctx, addr, "DBSIZE"))
					if cli, _ := masters[i].CLI(ctx, "DBSIZE"); err != nil || strconv.FormatInt(n, 10) != cli {
						t.Errorf("DoOn(%s, DBSIZE) = %d, %v; the server says %s", addr, n, err, cli)
					}
					for cursor := "0"; ; {
						v, err := redigo.Values(d.nodes.DoOn(ctx, addr, "SCAN", cursor, "MATCH", "scan:"+tc.name+":*"))
						if err != nil || len(v) != 2 {
							t.Fatalf("DoOn(%s, SCAN) = %v, %v", addr, v, err)
						}
						cursor, _ = redigo.String(v[0], nil)
						page, _ := redigo.Strings(v[1], nil)
						found = append(found, page...)
						if cursor == "0" {
							break
						}
					}
				}
				slices.Sort(found)
				slices.Sort(keys)
				if !slices.Equal(found, keys) {
					t.Errorf("SCAN on every master with DoOn found %q; want %q", found, keys)
				}
				if _, err := d.nodes.DoOn(ctx, "127.0.0.1:1", "PING"); !errors.Is(err, backend.ErrInvalidArgument) {
					t.Errorf("DoOn on an address that is no master = %v; want ErrInvalidArgument", err)
				}
				if _, err := d.nodes.DoOn(ctx, got[0], "SUBSCRIBE", "ch"); !errors.Is(err, backend.ErrUnsupported) {
					t.Errorf("DoOn(SUBSCRIBE) = %v; want ErrUnsupported, as Do", err)
				}
			})
		}
	})

	t.Run("CrossSlotRefusedBeforeSending", func(t *testing.T) {
		d := openDo(t, multiplexed, cl.Addrs())
		_, keys := masterKeys(t, cl, "do:cross:")
		a, b := keys[0], keys[1]
		for _, tc := range []struct {
			args []any
			hint string
		}{
			{[]any{"EVAL", getScript, 2, a, b}, "hash tag"},
			{[]any{"MGET", a, b}, "MGet"},
			{[]any{"DEL", a, b}, "Del"},
			{[]any{"RENAME", a, b}, "hash tag"},
		} {
			_, err := d.Do(t.Context(), tc.args...)
			var re redigo.Error
			if !errors.Is(err, backend.ErrInvalidArgument) || errors.As(err, &re) {
				t.Errorf("Do%q across slots = %v; want ErrInvalidArgument before sending", tc.args, err)
				continue
			}
			for _, want := range []string{fmt.Sprint(tc.args[0]), "CROSSSLOT", tc.hint} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Do%q across slots: %q does not say %q", tc.args, err, want)
				}
			}
			if strings.Contains(err.Error(), a) || strings.Contains(err.Error(), b) {
				t.Errorf("the error names the keys: %q", err)
			}
		}
		d.do(t, "MSET", "{tag}a", "1", "{tag}b", "2")
		if v, err := redigo.Strings(d.do(t, "MGET", "{tag}a", "{tag}b"), nil); err != nil || !slices.Equal(v, []string{"1", "2"}) {
			t.Errorf("MGET of one slot = %q, %v", v, err)
		}
	})
}
