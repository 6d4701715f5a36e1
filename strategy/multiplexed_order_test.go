package strategy_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/faultproxy"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// orderSetup is a Multiplexed client through a proxy whose upstream is
// capped at rate bytes a second on each connection: a big value takes a
// while to reach the server, a small one does not.
func orderSetup(t *testing.T, rate int) (*redisx.Client, *faultproxy.Proxy) {
	t.Helper()
	return orderSetupWith(t, rate, strategy.Multiplexed{})
}

// orderSetupWith is orderSetup with strategy s.
func orderSetupWith(t *testing.T, rate int, s strategy.Strategy) (*redisx.Client, *faultproxy.Proxy) {
	t.Helper()
	srv := launcher.Private(t, launcher.Options{})
	p, err := faultproxy.Start(context.Background(), srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	c := edgeNew(t, redisx.Options{Addrs: []string{p.Addr()}, Strategy: s, ReadTimeout: 10 * time.Second})
	if err := c.Set(edgeCtx(t, 5*time.Second), "order:warm", []byte("v"), time.Minute); err != nil {
		t.Fatal(err)
	}
	p.Bandwidth(faultproxy.Upstream, rate)
	return c, p
}

// settle lifts the cap and gives the server time to apply whatever is
// still on its way.
func settle(t *testing.T, p *faultproxy.Proxy) {
	t.Helper()
	p.Bandwidth(faultproxy.Upstream, 0)
	time.Sleep(200 * time.Millisecond)
}

// TestBigSetAbandonedStaysBeforeNextCommand: a SET of a big value whose
// context ends while the value is still on its way may yet be applied;
// the caller's next SET of the key, a small value on the shared
// connection, must be applied after it, not overwritten by it.
func TestBigSetAbandonedStaysBeforeNextCommand(t *testing.T) {
	const rate = 256 << 10
	c, p := orderSetup(t, rate)
	big := bytes.Repeat([]byte("B"), 2*rate) // 2 s on the wire

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	err := c.Set(ctx, "order:k", big, time.Minute)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Set of %d bytes at %d B/s with a 100ms deadline = %v; want context.DeadlineExceeded", len(big), rate, err)
	}
	if err := c.Set(edgeCtx(t, 10*time.Second), "order:k", []byte("small"), time.Minute); err != nil {
		t.Fatalf("Set of a small value after the abandoned big one: %v", err)
	}
	settle(t, p)
	if v, err := c.Get(edgeCtx(t, 5*time.Second), "order:k"); err != nil || string(v) != "small" {
		t.Fatalf("Get after an abandoned big SET then a small SET = %d bytes %.10q, %v; want %q: the abandoned SET was applied last", len(v), v, err, "small")
	}
}

// TestSmallSetAbandonedStaysBeforeNextBigSet is the other way round: a
// small SET whose context ends while it waits behind a slow command on
// the shared connection, then a SET of a big value of the same key, which
// must not overtake it on a connection of its own.
func TestSmallSetAbandonedStaysBeforeNextBigSet(t *testing.T) {
	const rate = 256 << 10
	c, p := orderSetup(t, rate)
	// A slow command on the shared connection: MSET of a big value.
	slow := make(chan error, 1)
	go func() {
		slow <- c.MSet(edgeCtx(t, 10*time.Second), map[string][]byte{"order:slow": bytes.Repeat([]byte("S"), 2*rate)}, time.Minute)
	}()
	time.Sleep(50 * time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	err := c.Set(ctx, "order:k", []byte("small"), time.Minute)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Set behind a slow MSET with a 100ms deadline = %v; want context.DeadlineExceeded", err)
	}
	big := bytes.Repeat([]byte("B"), 32<<10)
	if err := c.Set(edgeCtx(t, 10*time.Second), "order:k", big, time.Minute); err != nil {
		t.Fatalf("Set of a big value after the abandoned small one: %v", err)
	}
	if err := <-slow; err != nil {
		t.Fatalf("the slow MSET: %v", err)
	}
	settle(t, p)
	if v, err := c.Get(edgeCtx(t, 5*time.Second), "order:k"); err != nil || !bytes.Equal(v, big) {
		t.Fatalf("Get after an abandoned small SET then a big SET = %d bytes %.10q, %v; want the %d big bytes: the abandoned SET was applied last", len(v), v, err, len(big))
	}
}

// sharedConnOf is the shared connection of key among conns, as
// Multiplexed routes it (FNV-1a), for tests that need keys on different
// connections.
func sharedConnOf(key string, conns int) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(conns))
}

// keyOnOtherConn returns a key whose shared connection, among conns, is
// not key's.
func keyOnOtherConn(t *testing.T, key string, conns int) string {
	t.Helper()
	for i := range 1000 {
		k := fmt.Sprintf("order:other:%d", i)
		if sharedConnOf(k, conns) != sharedConnOf(key, conns) && sharedConnOf(k, 4) != sharedConnOf(key, 4) {
			return k
		}
	}
	t.Fatalf("no key on another connection than %q", key)
	return ""
}

// nextWrites are the ways a caller's next write of key k can be sent
// after a write of k whose context ended: each API that writes a key, and
// a multi-key call whose first key is another, want is what Get(k) must
// then return (nil: the key is gone).
type nextWrite struct {
	name  string
	write func(ctx context.Context, c *redisx.Client, k, other string) error
	want  []byte
}

var nextWrites = []nextWrite{
	{"Set", func(ctx context.Context, c *redisx.Client, k, _ string) error {
		return c.Set(ctx, k, []byte("small"), time.Minute)
	}, []byte("small")},
	{"Do SET", func(ctx context.Context, c *redisx.Client, k, _ string) error {
		_, err := c.Do(ctx, "SET", k, "small")
		return err
	}, []byte("small")},
	{"Del other first", func(ctx context.Context, c *redisx.Client, k, other string) error {
		_, err := c.Del(ctx, other, k)
		return err
	}, nil},
	{"Do DEL other first", func(ctx context.Context, c *redisx.Client, k, other string) error {
		_, err := c.Do(ctx, "DEL", other, k)
		return err
	}, nil},
	{"Do MSET other first", func(ctx context.Context, c *redisx.Client, k, other string) error {
		_, err := c.Do(ctx, "MSET", other, "x", k, "small")
		return err
	}, []byte("small")},
	{"MSet", func(ctx context.Context, c *redisx.Client, k, other string) error {
		return c.MSet(ctx, map[string][]byte{other: []byte("x"), k: []byte("small")}, time.Minute)
	}, []byte("small")},
	{"DoMulti other first", func(ctx context.Context, c *redisx.Client, k, other string) error {
		for _, r := range c.DoMulti(ctx, []any{"SET", other, "x"}, []any{"SET", k, "small"}) {
			if r.Err != nil {
				return r.Err
			}
		}
		return nil
	}, []byte("small")},
}

// TestAbandonedWriteStaysBeforeNextWriteOnEveryAPI: the rule of
// Multiplexed's order after a call whose context ended holds for every
// API that writes a key, by every key of a multi-key call, with one
// shared connection or several: a SET of a big value abandoned on its way
// through a slow link, then the caller's next write of the key, which the
// abandoned SET must not overwrite once it lands.
func TestAbandonedWriteStaysBeforeNextWriteOnEveryAPI(t *testing.T) {
	const rate = 256 << 10
	for _, conns := range []int{1, 2} {
		for _, nw := range nextWrites {
			t.Run(fmt.Sprintf("conns=%d/%s", conns, nw.name), func(t *testing.T) {
				c, p := orderSetupWith(t, rate, strategy.Multiplexed{Conns: conns})
				k := "order:k"
				other := keyOnOtherConn(t, k, max(conns, 2))
				big := bytes.Repeat([]byte("B"), rate/4) // 250 ms on the wire
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				err := c.Set(ctx, k, big, time.Minute)
				cancel()
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("Set of %d bytes at %d B/s with a 100ms deadline = %v; want context.DeadlineExceeded", len(big), rate, err)
				}
				if err := nw.write(edgeCtx(t, 10*time.Second), c, k, other); err != nil {
					t.Fatalf("%s after the abandoned SET: %v", nw.name, err)
				}
				settle(t, p)
				v, err := c.Get(edgeCtx(t, 5*time.Second), k)
				switch {
				case nw.want == nil && !errors.Is(err, redisx.ErrNotFound):
					t.Fatalf("Get after an abandoned big SET then %s = %d bytes, %v; want ErrNotFound: the abandoned SET was applied last", nw.name, len(v), err)
				case nw.want != nil && (err != nil || !bytes.Equal(v, nw.want)):
					t.Fatalf("Get after an abandoned big SET then %s = %d bytes %.10q, %v; want %q: the abandoned SET was applied last", nw.name, len(v), v, err, nw.want)
				}
			})
		}
	}
}

// TestAbandonedSmallWriteStaysBeforeNextWriteOnOtherConn: with two
// shared connections, a small SET whose context ends while it waits
// behind a slow command on its key's connection, then the caller's next
// write of the key through an API that could take the other connection.
func TestAbandonedSmallWriteStaysBeforeNextWriteOnOtherConn(t *testing.T) {
	const rate = 256 << 10
	for _, nw := range nextWrites {
		t.Run(nw.name, func(t *testing.T) {
			c, p := orderSetupWith(t, rate, strategy.Multiplexed{Conns: 2})
			// k on connection 1: Do used to go to connection 0 whatever its
			// keys.
			k := ""
			for i := 0; k == ""; i++ {
				if cand := fmt.Sprintf("order:k:%d", i); sharedConnOf(cand, 2) == 1 {
					k = cand
				}
			}
			other := keyOnOtherConn(t, k, 2)
			slowKey := ""
			for i := 0; slowKey == ""; i++ {
				if cand := fmt.Sprintf("order:slow:%d", i); sharedConnOf(cand, 2) == 1 {
					slowKey = cand
				}
			}
			// A slow command on k's connection: an MSET of a big value.
			slow := make(chan error, 1)
			go func() {
				slow <- c.MSet(edgeCtx(t, 10*time.Second), map[string][]byte{slowKey: bytes.Repeat([]byte("S"), rate/4)}, time.Minute)
			}()
			time.Sleep(50 * time.Millisecond)
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			err := c.Set(ctx, k, []byte("abandoned"), time.Minute)
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Set behind a slow MSET with a 100ms deadline = %v; want context.DeadlineExceeded", err)
			}
			writeBehindSlow(t, c, p, nw, k, other, slow)
		})
	}
}

// TestAbandonedWriteStaysBeforeNextWriteOnOtherLane: with the adaptive
// lanes of Multiplexed{}, a small SET whose context ends while it waits
// behind a slow command on the only busy lane, then the caller's next
// write of the key, by every API, while another lane stands idle: the
// write must go behind the abandoned SET, not take the idle lane and
// overtake it.
func TestAbandonedWriteStaysBeforeNextWriteOnOtherLane(t *testing.T) {
	const rate = 256 << 10
	for _, nw := range nextWrites {
		t.Run(nw.name, func(t *testing.T) {
			c, p := orderSetupWith(t, rate, strategy.Multiplexed{})
			k, other := "order:lane:k", "order:lane:other"
			// A slow command takes lane 0, the only one open: an MSET of a
			// big value (MSet is not split off to a bulk connection).
			slow := make(chan error, 1)
			go func() {
				slow <- c.MSet(edgeCtx(t, 10*time.Second), map[string][]byte{"order:lane:slow": bytes.Repeat([]byte("S"), rate/4)}, time.Minute)
			}()
			time.Sleep(50 * time.Millisecond)
			// Every lane busy: the SET joins lane 0, behind the MSET, and
			// another lane is dialled meanwhile.
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			err := c.Set(ctx, k, []byte("abandoned"), time.Minute)
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Set behind a slow MSET with a 100ms deadline = %v; want context.DeadlineExceeded", err)
			}
			deadline := time.Now().Add(5 * time.Second)
			for c.Stats().Lanes < 2 {
				if time.Now().After(deadline) {
					t.Fatalf("Stats().Lanes = %d: no second lane was opened while the first was busy", c.Stats().Lanes)
				}
				time.Sleep(5 * time.Millisecond)
			}
			writeBehindSlow(t, c, p, nw, k, other, slow)
		})
	}
}

// writeBehindSlow is the end of the tests of a small SET of k abandoned
// behind a slow MSET (whose outcome slow gives): the caller's next write
// nw of k, then, once the link is free, Get(k) must be what nw wrote.
func writeBehindSlow(t *testing.T, c *redisx.Client, p *faultproxy.Proxy, nw nextWrite, k, other string, slow <-chan error) {
	t.Helper()
	if err := nw.write(edgeCtx(t, 10*time.Second), c, k, other); err != nil {
		t.Fatalf("%s after the abandoned SET: %v", nw.name, err)
	}
	if err := <-slow; err != nil {
		t.Fatalf("the slow MSET: %v", err)
	}
	settle(t, p)
	v, err := c.Get(edgeCtx(t, 5*time.Second), k)
	switch {
	case nw.want == nil && !errors.Is(err, redisx.ErrNotFound):
		t.Fatalf("Get after an abandoned SET then %s = %q, %v; want ErrNotFound: the abandoned SET was applied last", nw.name, v, err)
	case nw.want != nil && (err != nil || !bytes.Equal(v, nw.want)):
		t.Fatalf("Get after an abandoned SET then %s = %q, %v; want %q: the abandoned SET was applied last", nw.name, v, err, nw.want)
	}
}

// TestMultiReplyCallReturnsByItsDeadline: a call of many replies whose
// first reply comes at once and the rest trickle in (25 KiB/s) returns by
// its context's deadline on every transport: a lone caller reading its
// own replies must not parse past the first one when the others are not
// all here. The MSET with a ttl is a run of 20,000 SETs; SlotGrouped's
// MGET of 20,000 keys on one server is a pipeline of 2,000 MGETs.
func TestMultiReplyCallReturnsByItsDeadline(t *testing.T) {
	const (
		rate     = 25 << 10
		n        = 20000
		deadline = 300 * time.Millisecond
		slack    = 300 * time.Millisecond
	)
	kv := make(map[string][]byte, n)
	keys := make([]string, 0, n)
	for i := range n {
		k := fmt.Sprintf("trickle:%d", i)
		kv[k] = []byte("v")
		keys = append(keys, k)
	}
	cases := []struct {
		name string
		s    strategy.Strategy
		call func(ctx context.Context, c *redisx.Client) error
	}{
		{"Multiplexed/MSet with ttl", strategy.Multiplexed{}, func(ctx context.Context, c *redisx.Client) error {
			return c.MSet(ctx, kv, time.Minute)
		}},
		{"Pool/MSet with ttl", strategy.Pool{Size: 2}, func(ctx context.Context, c *redisx.Client) error {
			return c.MSet(ctx, kv, time.Minute)
		}},
		{"SlotGrouped/MGet in batches", strategy.SlotGrouped{MaxBatch: 10}, func(ctx context.Context, c *redisx.Client) error {
			_, err := c.MGet(ctx, keys...)
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := launcher.Private(t, launcher.Options{})
			p, err := faultproxy.Start(context.Background(), srv.Addr())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			c := edgeNew(t, redisx.Options{Addrs: []string{p.Addr()}, Strategy: tc.s, ReadTimeout: 10 * time.Second})
			if err := c.MSet(edgeCtx(t, 10*time.Second), kv, 0); err != nil {
				t.Fatal(err)
			}
			p.Bandwidth(faultproxy.Downstream, rate)
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			start := time.Now()
			err = tc.call(ctx, c)
			took := time.Since(start)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s with replies at %d B/s and a %v deadline = %v; want context.DeadlineExceeded", tc.name, rate, deadline, err)
			}
			if took > deadline+slack {
				t.Errorf("%s with replies at %d B/s and a %v deadline returned after %v; want by %v", tc.name, rate, deadline, took.Round(time.Millisecond), deadline+slack)
			}
		})
	}
}
