package redisx_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// Options New refuses because of what the server says at the first dial:
// no retry can change its answer, so the error must not read as a
// connection failure (a caller that retries on ErrConnection would retry
// forever), and it says so once.

// openedStrategies are the strategies New opens, each alone and under a
// near-cache; slotGrouped false leaves out SlotGrouped (which refuses
// Sentinel).
func openedStrategies(slotGrouped bool) []struct {
	name string
	s    strategy.Strategy
} {
	type named = struct {
		name string
		s    strategy.Strategy
	}
	plain := []named{{"multiplexed", strategy.Multiplexed{}}, {"pool", strategy.Pool{Size: 2}}}
	if slotGrouped {
		plain = append(plain,
			named{"slot-grouped", strategy.SlotGrouped{}},
			named{"slot-grouped-pool", strategy.SlotGrouped{Transport: strategy.Pool{Size: 2}}})
	}
	all := plain
	for _, p := range plain {
		all = append(all, named{"near-" + p.name, localcache.Near{Inner: p.s, MaxBytes: 1 << 20}})
	}
	return all
}

// checkRefused opens o and wants an error wrapping want, not
// ErrConnection nor Temporary, on one line with one "redisx:" prefix,
// and containing each of says.
func checkRefused(t *testing.T, o redisx.Options, want error, says ...string) {
	t.Helper()
	o.DialTimeout = 2 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := redisx.New(ctx, o)
	if err == nil {
		c.Close()
		t.Fatalf("New = a client; want an error wrapping %v", want)
	}
	msg := err.Error()
	if !errors.Is(err, want) || errors.Is(err, redisx.ErrConnection) || strategy.Temporary(err) {
		t.Errorf("New: %q; want %v, neither ErrConnection nor Temporary", msg, want)
	}
	if strings.Contains(msg, "\n") || strings.Count(msg, "redisx:") != 1 {
		t.Errorf("New: %q; want one line with one \"redisx:\" prefix", msg)
	}
	for _, s := range says {
		if !strings.Contains(msg, s) {
			t.Errorf("New: %q; want it to say %q", msg, s)
		}
	}
}

// TestNewRefusesWhatTheServerRefuses: a database out of range, a
// database other than 0 on a cluster, an unknown user, a user who may not
// SELECT, and several standalone servers as seeds, on every strategy.
func TestNewRefusesWhatTheServerRefuses(t *testing.T) {
	srv := launcher.Private(t, launcher.Options{})
	other := launcher.Private(t, launcher.Options{})
	cl := launcher.ClusterForTest(t, launcher.ClusterOptions{})
	if _, err := srv.CLI(t.Context(), "ACL", "SETUSER", "noselect", "on", ">pw", "~*", "&*", "+@all", "-select"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range openedStrategies(true) {
		t.Run(tc.name, func(t *testing.T) {
			for _, c := range []struct {
				name string
				o    redisx.Options
				want error
				says []string
			}{
				{"DB out of range", redisx.Options{Addrs: []string{srv.Addr()}, DB: 99}, redisx.ErrInvalidArgument, []string{"DB 99", "out of range"}},
				{"DB on a cluster", redisx.Options{Addrs: cl.Addrs(), DB: 1}, redisx.ErrInvalidArgument, []string{"DB 1", "cluster"}},
				{"unknown user", redisx.Options{Addrs: []string{srv.Addr()}, Username: "nobody", Password: "pw-x"}, redisx.ErrAuth, nil},
				{"unknown user on a cluster", redisx.Options{Addrs: cl.Addrs(), Username: "nobody", Password: "pw-x"}, redisx.ErrAuth, nil},
				{"user who may not SELECT", redisx.Options{Addrs: []string{srv.Addr()}, Username: "noselect", Password: "pw", DB: 1}, redisx.ErrAuth, nil},
				{"two standalone seeds", redisx.Options{Addrs: []string{srv.Addr(), other.Addr()}}, redisx.ErrInvalidArgument, []string{"standalone", "cluster"}},
			} {
				t.Run(c.name, func(t *testing.T) {
					c.o.Strategy = tc.s
					checkRefused(t, c.o, c.want, c.says...)
				})
			}
		})
	}
}

// TestNewOverSentinelRefusesADatabaseOutOfRange: the master the sentinels
// name refuses SELECT 99.
func TestNewOverSentinelRefusesADatabaseOutOfRange(t *testing.T) {
	g := launcher.SentinelForTest(t, launcher.SentinelOptions{Replicas: 1, Sentinels: 1})
	for _, tc := range openedStrategies(false) {
		t.Run(tc.name, func(t *testing.T) {
			checkRefused(t, redisx.Options{
				Sentinel: &redisx.SentinelOptions{Master: g.Name(), Addrs: g.SentinelAddrs()},
				DB:       99,
				Strategy: tc.s,
			}, redisx.ErrInvalidArgument, "DB 99", "out of range")
		})
	}
}

// TestStatsCountOneNodeOnAStandaloneServer: Stats.Nodes counts the
// servers connected to — one on a standalone server, whatever the
// strategy (SlotGrouped there batches long key lists on that one node) —
// and none once closed.
func TestStatsCountOneNodeOnAStandaloneServer(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	for _, tc := range openedStrategies(true) {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			c, err := redisx.New(ctx, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: tc.s})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			keys := make([]string, 2500) // three batches of SlotGrouped's 1000
			for i := range keys {
				keys[i] = fmt.Sprintf("nodes:%s:%d", tc.name, i)
			}
			if _, err := c.MGet(ctx, keys...); err != nil {
				t.Fatalf("MGet of %d keys: %v", len(keys), err)
			}
			if st := c.Stats(); st.Nodes != 1 || st.Masters != 0 {
				t.Errorf("Stats on a standalone server: Nodes %d, Masters %d; want 1, 0 (no slot map)", st.Nodes, st.Masters)
			}
			c.Close()
			if st := c.Stats(); st.Nodes != 0 {
				t.Errorf("Stats after Close: Nodes %d; want 0", st.Nodes)
			}
		})
	}
}

// TestNewRefusesReadFromWhereItCannotWork: reads from replicas need
// Sentinel and a strategy that follows it; New refuses them elsewhere,
// and a ReadFrom it does not know.
func TestNewRefusesReadFromWhereItCannotWork(t *testing.T) {
	g := launcher.SentinelForTest(t, launcher.SentinelOptions{Replicas: 1, Sentinels: 1})
	ctx := t.Context()
	options := func() redisx.Options {
		return redisx.Options{Sentinel: &redisx.SentinelOptions{Master: g.Name(), Addrs: g.SentinelAddrs()}}
	}
	for _, tc := range []struct {
		name string
		o    redisx.Options
	}{
		{"Near", func() redisx.Options {
			o := options()
			o.Strategy, o.ReadFrom = localcache.Near{}, redisx.ReadReplicaPreferred
			return o
		}()},
		{"SlotGrouped", func() redisx.Options {
			o := options()
			o.Strategy, o.ReadFrom = strategy.SlotGrouped{}, redisx.ReadNearest
			return o
		}()},
		{"no Sentinel", redisx.Options{Addrs: []string{g.Nodes()[0].Addr()}, ReadFrom: redisx.ReadReplicaPreferred}},
		{"out of range", func() redisx.Options {
			o := options()
			o.ReadFrom = redisx.ReadNearest + 1
			return o
		}()},
	} {
		c, err := redisx.New(ctx, tc.o)
		if err == nil {
			c.Close()
		}
		if !errors.Is(err, redisx.ErrInvalidArgument) {
			t.Errorf("%s: New = %v; want ErrInvalidArgument", tc.name, err)
		}
	}
}
