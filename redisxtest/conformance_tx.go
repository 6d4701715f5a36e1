package redisxtest

// The conformance suite's transactions: Watch, Tx.Do, Tx.Exec.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/redisx"
	"go.uber.org/goleak"
)

// watchOrSkip skips t when the strategy provides no transactions.
func watchOrSkip(t *testing.T, c *redisx.Client) {
	t.Helper()
	err := c.Watch(context.Background(), func(*redisx.Tx) error { return nil }, "conformance:watch-probe")
	if errors.Is(err, redisx.ErrUnsupported) {
		t.Skipf("no transactions: %v", err)
	}
	if err != nil {
		t.Fatalf("Watch with nothing to do: %v", err)
	}
}

// incr adds one to the counter at k in a Watch, trying again on conflict.
func incr(ctx context.Context, c *redisx.Client, k string) (attempts int, err error) {
	for attempts = 1; ; attempts++ {
		err = c.Watch(ctx, func(tx *redisx.Tx) error {
			n, err := redis.Int(tx.Do(ctx, "GET", k))
			if err != nil && !errors.Is(err, redis.ErrNil) {
				return err
			}
			_, err = tx.Exec(ctx, []any{"SET", k, n + 1})
			return err
		}, k)
		if !errors.Is(err, redisx.ErrTxConflict) {
			return attempts, err
		}
	}
}

// watchIncrementsExactly: 50 goroutines increment one counter 20 times
// each with GET and SET in a Watch, trying again on ErrTxConflict: the
// counter ends at exactly 1000, and conflicts did happen.
func (s *suite) watchIncrementsExactly(t *testing.T) {
	c := s.client(t)
	watchOrSkip(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	k := s.key(t, "counter")
	const goroutines, each = 50, 20
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	var mu sync.Mutex
	conflicts := 0
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				n, err := incr(ctx, c, k)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				conflicts += n - 1
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("increment: %v", err)
	}
	v, err := c.Get(ctx, k)
	if err != nil || string(v) != strconv.Itoa(goroutines*each) {
		t.Fatalf("counter = %q, %v; want %d", v, err, goroutines*each)
	}
	if conflicts == 0 {
		t.Fatalf("no conflict in %d concurrent increments: the watch did nothing", goroutines*each)
	}
	t.Logf("%d increments, %d conflicts retried", goroutines*each, conflicts)
}

// watchConflictAndResults checks Exec's outcomes: a watched key written
// meanwhile is ErrTxConflict with nothing applied; a WRONGTYPE at run
// time fails its command alone; a command the server will not queue
// aborts the whole transaction.
func (s *suite) watchConflictAndResults(t *testing.T) {
	c, ctx := s.client(t), ctxT(t)
	watchOrSkip(t, c)
	k, other := s.key(t, "{tx}k"), s.key(t, "{tx}other")
	if err := c.Set(ctx, k, []byte("0"), time.Minute); err != nil {
		t.Fatal(err)
	}
	err := c.Watch(ctx, func(tx *redisx.Tx) error {
		if err := c.Set(ctx, k, []byte("changed"), time.Minute); err != nil { // another connection
			return err
		}
		res, err := tx.Exec(ctx, []any{"SET", other, "x"})
		if res != nil {
			t.Errorf("Exec after a conflict returned results %v", res)
		}
		return err
	}, k)
	if !errors.Is(err, redisx.ErrTxConflict) {
		t.Fatalf("Watch with the key changed meanwhile = %v; want ErrTxConflict", err)
	}
	if _, err := c.Get(ctx, other); !errors.Is(err, redisx.ErrNotFound) {
		t.Fatalf("Get(other) after a conflict = %v; want ErrNotFound: nothing applied", err)
	}
	err = c.Watch(ctx, func(tx *redisx.Tx) error {
		res, err := tx.Exec(ctx, []any{"SET", other, "1"}, []any{"LPUSH", k, "x"}, []any{"INCR", other})
		if err != nil {
			return err
		}
		var re redis.Error
		if res[0].Value != "OK" || !errors.As(res[1].Err, &re) || res[2].Value != int64(2) {
			t.Errorf("Exec = %v; want OK, a WRONGTYPE error, 2", res)
		}
		return nil
	}, k)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	err = c.Watch(ctx, func(tx *redisx.Tx) error {
		res, err := tx.Exec(ctx, []any{"SET", other, "9"}, []any{"NOSUCHCOMMAND", k})
		var re redis.Error
		if err == nil || !errors.As(res[1].Err, &re) || res[0].Err == nil {
			t.Errorf("Exec with an unknown command = %v, %v; want EXECABORT", res, err)
		}
		return nil
	}, k)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	if v, err := c.Get(ctx, other); err != nil || string(v) != "2" {
		t.Fatalf("Get(other) = %q, %v; want 2: the aborted transaction must not have run", v, err)
	}
	// Read your writes: a value read (and cached, by a near-cache) before
	// is replaced by the transaction's at once.
	if _, err := c.Get(ctx, other); err != nil {
		t.Fatal(err)
	}
	err = c.Watch(ctx, func(tx *redisx.Tx) error {
		_, err := tx.Exec(ctx, []any{"SET", other, "after"})
		return err
	}, other)
	if v, e := c.Get(ctx, other); err != nil || e != nil || string(v) != "after" {
		t.Fatalf("Get after a transaction's SET = %q, %v (Watch: %v); want %q", v, e, err, "after")
	}
	err = c.Watch(ctx, func(tx *redisx.Tx) error {
		_, err := tx.Do(ctx, "MULTI")
		return err
	})
	if !errors.Is(err, redisx.ErrUnsupported) {
		t.Fatalf("tx.Do(MULTI) = %v; want ErrUnsupported", err)
	}
}

// watchLeavesConnectionClean: whatever fn does — return an error before
// Exec, panic — the connection goes back without its watch: a key watched
// by an abandoned transaction and written afterwards must not abort the
// later transactions that reuse the connection.
func (s *suite) watchLeavesConnectionClean(t *testing.T) {
	c, ctx := s.client(t), ctxT(t)
	watchOrSkip(t, c)
	k, j := s.key(t, "{clean}k"), s.key(t, "{clean}j")
	errFn := errors.New("fn gave up")
	for i := range 10 {
		var err error
		if i%2 == 0 {
			err = c.Watch(ctx, func(tx *redisx.Tx) error { return errFn }, k)
		} else {
			func() {
				defer func() {
					if r := recover(); r != "boom" {
						t.Fatalf("recover() = %v; want the panic of fn", r)
					}
					err = errFn
				}()
				c.Watch(ctx, func(tx *redisx.Tx) error { panic("boom") }, k)
			}()
		}
		if !errors.Is(err, errFn) {
			t.Fatalf("Watch = %v; want fn's error", err)
		}
		if err := c.Set(ctx, k, []byte(fmt.Sprint(i)), time.Minute); err != nil {
			t.Fatal(err)
		}
		err = c.Watch(ctx, func(tx *redisx.Tx) error {
			_, err := tx.Exec(ctx, []any{"SET", j, i})
			return err
		}, j)
		if err != nil {
			t.Fatalf("round %d: a transaction after an abandoned one = %v; want success (a watch left on the connection?)", i, err)
		}
	}
}

// watchCloseReturnsPromptly: Close returns at once while Watch callbacks
// run — one waiting for something that happens only after Close
// returns, one blocked in a BLPOP 0 of its transaction — without waiting
// for them: their connections are taken from them. Their calls after
// Close fail with ErrClosed, nothing of them is applied, each Watch
// returns, and nothing is left running.
func (s *suite) watchCloseReturnsPromptly(t *testing.T) {
	ctx := ctxT(t)
	before := goleak.IgnoreCurrent()
	c, err := redisx.New(ctx, s.opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	watchOrSkip(t, c)
	k, list := s.key(t, "{close}k"), s.key(t, "{close}list")
	t.Cleanup(func() { s.oracle.RPush(context.Background(), list, "release") })

	type outcome struct{ do, exec, watch error }
	waiting, blocked := make(chan outcome, 1), make(chan outcome, 1)
	inside, closed := make(chan struct{}), make(chan struct{})
	go func() {
		var o outcome
		o.watch = c.Watch(context.Background(), func(tx *redisx.Tx) error {
			if _, err := tx.Do(context.Background(), "GET", k); err != nil {
				return err
			}
			close(inside)
			select { // what a callback may wait for: here, the end of Close
			case <-closed:
			case <-time.After(10 * time.Second):
			}
			_, o.do = tx.Do(context.Background(), "GET", k)
			_, o.exec = tx.Exec(context.Background(), []any{"SET", k, "after close"})
			return o.exec
		}, k)
		waiting <- o
	}()
	blockedBefore := s.blockedClients(ctx, t)
	go func() {
		var o outcome
		o.watch = c.Watch(context.Background(), func(tx *redisx.Tx) error {
			_, o.do = tx.Do(context.Background(), "BLPOP", list, 0)
			_, o.exec = tx.Exec(context.Background(), []any{"SET", k, "after close"})
			return o.exec
		}, list)
		blocked <- o
	}()
	select {
	case <-inside:
	case o := <-waiting:
		t.Fatalf("Watch returned before Close: %v", o.watch)
	case <-time.After(5 * time.Second):
		t.Fatal("Watch's callback not called after 5s")
	}
	for deadline := time.Now().Add(5 * time.Second); s.blockedClients(ctx, t) <= blockedBefore; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("BLPOP %s 0 of a transaction not blocked on the server after 5s", list)
		}
	}

	start := time.Now()
	err = c.Close()
	took := time.Since(start)
	close(closed)
	if err != nil {
		t.Errorf("Close: %v", err)
	}
	if took > 3*time.Second {
		t.Errorf("Close with Watch callbacks running returned after %v; want it prompt, not waiting for the callbacks", took.Round(time.Millisecond))
	}
	for _, w := range []struct {
		name string
		ch   chan outcome
	}{{"callback waiting after Close", waiting}, {"callback in BLPOP 0", blocked}} {
		select {
		case o := <-w.ch:
			for call, err := range map[string]error{"tx.Do": o.do, "tx.Exec": o.exec, "Watch": o.watch} {
				if !errors.Is(err, redisx.ErrClosed) {
					t.Errorf("%s: %s after Close = %v; want ErrClosed", w.name, call, err)
				}
			}
		case <-time.After(5 * time.Second):
			t.Errorf("%s: Watch has not returned 5s after Close", w.name)
		}
	}
	if n := s.oracle.Exists(ctx, k).Val(); n != 0 {
		t.Errorf("a transaction's Exec after Close wrote %q", k)
	}
	if err := goleak.Find(before, goleak.IgnoreTopFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).reaper")); err != nil {
		t.Errorf("goroutines left after Close and Watch returned: %v", err)
	}
	if err := c.Watch(ctx, func(*redisx.Tx) error { return nil }, k); !errors.Is(err, redisx.ErrClosed) {
		t.Errorf("Watch after Close = %v; want ErrClosed", err)
	}
}

// watchRefusesMisuse: the mistakes of a transaction are refused with an
// error wrapping ErrInvalidArgument (one "redisx:" prefix), before
// anything of them is sent: Watch without fn (not even WATCH is sent), a
// second Exec in one Watch (EXEC ended the watch: the second transaction
// would run unguarded), an empty or nil command in tx.Do or tx.Exec.
func (s *suite) watchRefusesMisuse(t *testing.T) {
	c, ctx := s.client(t), ctxT(t)
	watchOrSkip(t, c)
	k := s.key(t, "{misuse}k")
	invalid := func(what string, err error) {
		t.Helper()
		switch {
		case !errors.Is(err, redisx.ErrInvalidArgument):
			t.Errorf("%s = %v; want an error wrapping ErrInvalidArgument", what, err)
		case !strings.HasPrefix(err.Error(), "redisx: ") || strings.Count(err.Error(), "redisx:") != 1:
			t.Errorf("%s: error %q; want one \"redisx:\" prefix, at its start", what, err)
		}
	}
	watches := s.commandCalls(ctx, t, "watch")
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("Watch with a nil fn panicked: %v; want ErrInvalidArgument", r)
			}
		}()
		invalid("Watch with a nil fn", c.Watch(ctx, nil, k))
	}()
	if n := s.commandCalls(ctx, t, "watch"); n != watches {
		t.Errorf("WATCH calls went from %d to %d for a Watch with a nil fn; want none sent", watches, n)
	}

	execs := s.commandCalls(ctx, t, "exec")
	var second error
	err := c.Watch(ctx, func(tx *redisx.Tx) error {
		if _, err := tx.Exec(ctx, []any{"SET", k, "1"}); err != nil {
			return err
		}
		_, second = tx.Exec(ctx, []any{"SET", k, "2"})
		return nil
	}, k)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	invalid("a second Exec in one Watch", second)
	if n := s.commandCalls(ctx, t, "exec"); n != execs+1 {
		t.Errorf("EXEC calls went from %d to %d; want the first Exec's alone", execs, n)
	}

	err = c.Watch(ctx, func(tx *redisx.Tx) error {
		_, err := tx.Do(ctx)
		invalid("tx.Do with no command", err)
		_, err = tx.Exec(ctx, []any{"SET", k, "3"}, nil)
		invalid("tx.Exec with a nil command", err)
		_, err = tx.Exec(ctx, []any{"SET", k, "3"}, []any{})
		invalid("tx.Exec with an empty command", err)
		_, err = tx.Exec(ctx, []any{"SET", k, "3"}, []any{"SET", k, struct{}{}})
		invalid("tx.Exec with an argument of an unsupported type", err)
		return nil
	}, k)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	if v, err := c.Get(ctx, k); err != nil || string(v) != "1" {
		t.Errorf("Get(%q) = %q, %v; want \"1\": only the first Exec ran", k, v, err)
	}
}
