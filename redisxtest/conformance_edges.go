package redisxtest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/gomodule/redigo/redis"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
	"go.uber.org/goleak"
)

// The checks at the edges of the contract: what Close does to a
// call in flight and to the calls after it, what it leaves running, and
// what errors look like.

// closeWithBlockedCommand checks that Close returns promptly while a BLPOP
// with no timeout (block 0) waits on the server under a context without
// deadline — one sent by Do, one in a DoMulti batch — and that the
// blocked calls then fail with ErrClosed.
//
// The GoRedis adapter runs over a client its user owns, which its Close
// leaves open (unless CloseClient is set), so it cannot fail the call: for
// a backend whose Stats().Strategy names go-redis (also under Near) only
// the prompt Close is checked, and the call is released by a push.
func (s *suite) closeWithBlockedCommand(t *testing.T) {
	ctx := ctxT(t)
	c, err := redisx.New(ctx, s.opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	overUserClient := strings.HasSuffix(c.Stats().Strategy, "go-redis")
	list := s.key(t, "list")
	// Whatever happens, release the BLPOPs still blocked when the test ends.
	t.Cleanup(func() { s.oracle.RPush(context.Background(), list, "release", "release") })

	before := s.blockedClients(ctx, t)
	done := make(chan error, 2)
	go func() {
		_, err := c.Do(context.Background(), "BLPOP", list, 0)
		done <- err
	}()
	go func() {
		res := c.DoMulti(context.Background(), []any{"GET", list + "x"}, []any{"BLPOP", list, 0})
		done <- res[1].Err
	}()
	for deadline := time.Now().Add(5 * time.Second); s.blockedClients(ctx, t) < before+2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("BLPOP %s 0 of Do and of DoMulti not both blocked on the server after 5s", list)
		}
	}

	closed := make(chan error, 1)
	start := time.Now()
	go func() { closed <- c.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
		t.Logf("Close with a BLPOP 0 in flight returned after %v", time.Since(start).Round(time.Millisecond))
	case <-time.After(3 * time.Second):
		t.Fatalf("Close with a BLPOP 0 in flight has not returned after 3s")
	}
	if overUserClient {
		t.Log("go-redis adapter: the blocked call runs on the user's client, which Close leaves open; released by RPUSH")
		s.oracle.RPush(ctx, list, "release", "release")
		<-done
		<-done
		return
	}
	for range 2 {
		select {
		case err := <-done:
			if !errors.Is(err, redisx.ErrClosed) {
				t.Fatalf("BLPOP 0 in flight during Close: error = %v, want ErrClosed", err)
			}
			if n := strings.Count(err.Error(), "redisx:"); n != 1 {
				t.Errorf("BLPOP 0 in flight during Close: error %q has %d \"redisx:\" prefixes, want 1", err, n)
			}
		case <-time.After(3 * time.Second):
			t.Fatalf("BLPOP 0 in flight still blocked 3s after Close")
		}
	}
}

// blockedClients sums the clients blocked on a command over every server.
func (s *suite) blockedClients(ctx context.Context, t *testing.T) int64 {
	return s.infoSum(ctx, t, "clients", "blocked_clients:")
}

// errorsHaveOnePrefix checks that an error says "redisx:" once, however
// many layers wrapped it, and still matches its sentinel or type.
func (s *suite) errorsHaveOnePrefix(t *testing.T) {
	c, ctx := s.client(t), ctxT(t)
	k := s.key(t, "k")
	if err := c.Set(ctx, k, []byte("x"), time.Minute); err != nil {
		t.Fatalf("Set: %v", err)
	}
	closed, err := redisx.New(ctx, s.opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	closed.Close()

	var re redis.Error
	for _, tc := range []struct {
		name string
		call func() error
		is   func(error) bool
	}{
		{"bad argument", func() error { _, err := c.Do(ctx, "SET", k, struct{}{}); return err },
			func(err error) bool { return errors.Is(err, redisx.ErrInvalidArgument) }},
		{"server error reply", func() error { _, err := c.Do(ctx, "INCR", k); return err },
			func(err error) bool { return errors.As(err, &re) }},
		{"refused command", func() error { _, err := c.Do(ctx, "SUBSCRIBE", k); return err },
			func(err error) bool { return errors.Is(err, redisx.ErrUnsupported) }},
		{"closed client", func() error { _, err := closed.Get(ctx, k); return err },
			func(err error) bool { return errors.Is(err, redisx.ErrClosed) }},
		{"closed client Do", func() error { _, err := closed.Do(ctx, "GET", k); return err },
			func(err error) bool { return errors.Is(err, redisx.ErrClosed) }},
	} {
		err := tc.call()
		switch {
		case err == nil:
			t.Errorf("%s: no error", tc.name)
		case !tc.is(err):
			t.Errorf("%s: error %v (%T) is not of its kind", tc.name, err, err)
		case strings.Count(err.Error(), "redisx:") != 1:
			t.Errorf("%s: error %q has %d \"redisx:\" prefixes, want 1", tc.name, err, strings.Count(err.Error(), "redisx:"))
		}
	}
	s.batchErrorsHaveOnePrefix(t, c, closed)
}

// batchErrorsHaveOnePrefix is errorsHaveOnePrefix for DoMulti and
// transactions: every result of a batch refused before sending (its
// refused command's and the others') says "redisx:" once, at its start,
// and names the refused command by position, counted from 1 as people
// count, with its index; so do a transaction's refusals.
func (s *suite) batchErrorsHaveOnePrefix(t *testing.T, c, closed *redisx.Client) {
	ctx := ctxT(t)
	k := s.key(t, "{batch}k")
	check := func(what string, err error, names ...string) {
		t.Helper()
		switch msg := ""; {
		case err == nil:
			t.Errorf("%s: no error", what)
		case !strings.HasPrefix(err.Error(), "redisx: ") || strings.Count(err.Error(), "redisx:") != 1:
			t.Errorf("%s: error %q; want one \"redisx:\" prefix, at its start", what, err)
		default:
			msg = err.Error()
			for _, n := range names {
				if !strings.Contains(msg, n) {
					t.Errorf("%s: error %q does not say %q", what, msg, n)
				}
			}
		}
	}
	batches := []struct {
		name string
		cmds [][]any
		is   error
	}{
		{"MULTI", [][]any{{"SET", k, "1"}, {"MULTI"}, {"SET", k, "2"}}, redisx.ErrUnsupported},
		{"bad argument", [][]any{{"SET", k, "1"}, {"SET", k, struct{}{}}, {"GET", k}}, redisx.ErrInvalidArgument},
		{"nil command", [][]any{{"SET", k, "1"}, nil, {"GET", k}}, redisx.ErrInvalidArgument},
		{"empty command", [][]any{{"SET", k, "1"}, {}, {"GET", k}}, redisx.ErrInvalidArgument},
	}
	if _, ok := s.oracle.(*goredis.ClusterClient); ok {
		batches = append(batches, struct {
			name string
			cmds [][]any
			is   error
		}{"keys across slots", [][]any{{"SET", k, "1"}, {"MSET", "{a}x", "1", "{b}x", "1"}, {"GET", k}}, redisx.ErrCrossSlot})
	}
	for _, b := range batches {
		for i, r := range c.DoMulti(ctx, b.cmds...) {
			what := fmt.Sprintf("DoMulti with a %s at index 1: result %d", b.name, i)
			if !errors.Is(r.Err, b.is) {
				t.Errorf("%s = %v; want an error wrapping %v", what, r.Err, b.is)
			}
			check(what, r.Err, "#2", "index 1")
		}
	}
	if _, err := c.Get(ctx, k); !errors.Is(err, redisx.ErrNotFound) {
		t.Errorf("Get(%q) after refused batches = %v; want ErrNotFound: nothing sent", k, err)
	}
	for i, r := range closed.DoMulti(ctx, []any{"GET", k}, []any{"GET", k}) {
		check(fmt.Sprintf("DoMulti on a closed client: result %d", i), r.Err)
	}
	err := c.Watch(ctx, func(tx *redisx.Tx) error {
		_, err := tx.Do(ctx, "SUBSCRIBE", k)
		check("tx.Do(SUBSCRIBE)", err)
		_, err = tx.Exec(ctx, []any{"SET", k, "1"}, []any{"MULTI"})
		check("tx.Exec with a MULTI at index 1", err, "#2", "index 1")
		_, err = tx.Exec(ctx, []any{"SET", k, struct{}{}})
		check("tx.Exec with a bad argument at index 0", err, "#1", "index 0")
		return nil
	}, k)
	if errors.Is(err, redisx.ErrUnsupported) {
		return // no transactions
	}
	if err != nil {
		t.Errorf("Watch: %v", err)
	}
	check("Watch on a closed client", closed.Watch(ctx, func(*redisx.Tx) error { return nil }, k))
}

func (s *suite) useAfterClose(t *testing.T) {
	c, ctx := s.client(t), ctxT(t)
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	k := s.key(t, "k")
	checks := map[string]error{}
	_, checks["Get"] = c.Get(ctx, k)
	checks["Set"] = c.Set(ctx, k, []byte("v"), 0)
	_, checks["MGet"] = c.MGet(ctx, k)
	checks["MSet"] = c.MSet(ctx, map[string][]byte{k: nil}, 0)
	_, checks["Del"] = c.Del(ctx, k)
	_, checks["Do"] = c.Do(ctx, "PING")
	_, checks["GetOrLoad"] = c.GetOrLoad(ctx, k, 0, func(context.Context) ([]byte, error) { return nil, nil })
	for name, err := range checks {
		if !errors.Is(err, redisx.ErrClosed) {
			t.Errorf("%s after Close: error = %v, want ErrClosed", name, err)
		}
	}
}

func (s *suite) closeLeavesNoGoroutine(t *testing.T) {
	before := goleak.IgnoreCurrent()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := redisx.New(ctx, s.opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	k := s.key(t, "k")
	for i := 0; i < 100; i++ {
		if err := c.Set(ctx, k, []byte("v"), time.Minute); err != nil {
			t.Fatalf("Set: %v", err)
		}
	}
	if _, err := c.Do(ctx, "BLPOP", s.key(t, "list"), "0.01"); err != nil {
		t.Fatalf("BLPOP: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := goleak.Find(before, goleak.IgnoreTopFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).reaper")); err != nil {
		t.Fatalf("goroutines left after Close: %v", err)
	}
}

// oversizedRefused checks that a key, a value or a Do argument one byte
// over Redis's limit (strategy.MaxValueSize) is refused with
// ErrInvalidArgument before it is sent — the server would read it whole
// and close the connection — by a message that names its size, not its
// bytes, and that the client goes on working.
func (s *suite) oversizedRefused(t *testing.T) {
	c, ctx := s.client(t), ctxT(t)
	k := s.key(t, "k")
	// Allocated, never written: its pages cost address space, not memory.
	// The string shares them; nothing writes to the slice.
	b := make([]byte, strategy.MaxValueSize+1)
	big := unsafe.String(unsafe.SliceData(b), len(b))
	load := func(context.Context) ([]byte, error) { return []byte("v"), nil }
	inputBefore := s.infoSum(ctx, t, "stats", "total_net_input_bytes:")
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"Get", func() error { _, err := c.Get(ctx, big); return err }},
		{"AppendGet", func() error { _, err := c.AppendGet(ctx, nil, big); return err }},
		{"Set", func() error { return c.Set(ctx, big, []byte("v"), time.Minute) }},
		{"Del", func() error { _, err := c.Del(ctx, k, big); return err }},
		{"MGet", func() error { _, err := c.MGet(ctx, k, big); return err }},
		{"MSet", func() error { return c.MSet(ctx, map[string][]byte{k: []byte("v"), big: []byte("v")}, 0) }},
		{"GetOrLoad", func() error { _, err := c.GetOrLoad(ctx, big, time.Minute, load); return err }},
		{"Do key", func() error { _, err := c.Do(ctx, "SET", big, "v"); return err }},
		{"Do value", func() error { _, err := c.Do(ctx, "SET", k, b); return err }},
	} {
		err := tc.call()
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if !errors.Is(err, redisx.ErrInvalidArgument) || !strings.Contains(msg, strconv.Itoa(len(big))+" bytes") || len(msg) > 200 {
			if len(msg) > 200 {
				msg = msg[:200] + "…"
			}
			t.Errorf("%s of %d bytes: error %q; want ErrInvalidArgument naming the size", tc.name, len(big), msg)
		}
	}
	// The INFO calls themselves are small: a 512 MiB argument is not.
	if sent := s.infoSum(ctx, t, "stats", "total_net_input_bytes:") - inputBefore; sent > 1<<20 {
		t.Errorf("the servers read %d bytes during the refused calls; want nothing of them sent", sent)
	}
	if err := c.Set(ctx, k, []byte("after"), time.Minute); err != nil {
		t.Fatalf("Set after the refused calls: %v", err)
	}
	if v, err := c.Get(ctx, k); err != nil || string(v) != "after" {
		t.Fatalf("Get(%q) after the refused calls = %q, %v; want \"after\", nil", k, v, err)
	}
}
