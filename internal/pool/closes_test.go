package pool_test

import (
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/strategy"
)

// TestPoolDoesNotLendAgainAfterAProtocolErrorReply: Redis answers a
// request it cannot read with "ERR Protocol error: …" and closes the
// connection. A connection that carried such a reply must not be lent
// again, on any path (Do, DoMulti, a Dedicated session), or the next
// borrower's call would meet the closed socket. A script's own error can
// read the same, and the server then goes on: the connection is only
// replaced, every call answered.
func TestPoolDoesNotLendAgainAfterAProtocolErrorReply(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	script := []any{"EVAL", "return redis.error_reply('ERR Protocol error: a script says so')", "0"}
	for _, tc := range []struct {
		name string
		call func(t *testing.T, c pooled)
	}{
		{"Do", func(t *testing.T, c pooled) {
			if _, err := c.Do(timeout(t, 5*time.Second), script...); err == nil {
				t.Fatal("the script's error reply: got none")
			}
		}},
		{"DoMulti", func(t *testing.T, c pooled) {
			rs := c.(strategy.MultiDoer).DoMulti(timeout(t, 5*time.Second), []any{"PING"}, script)
			if rs[0].Err != nil || rs[1].Err == nil {
				t.Fatalf("DoMulti = %+v; want PING answered and the script's error", rs)
			}
		}},
		{"Dedicated", func(t *testing.T, c pooled) {
			ctx := timeout(t, 5*time.Second)
			d, err := c.(strategy.Dedicator).Dedicated(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			rs, err := d.DoMulti(ctx, script)
			if err != nil || rs[0].Err == nil {
				t.Fatalf("session DoMulti = %+v, %v; want the script's error", rs, err)
			}
			// The server did not close: the session goes on.
			if rs, err := d.DoMulti(ctx, []any{"PING"}); err != nil || rs[0].Err != nil {
				t.Fatalf("session PING after the script's error = %+v, %v", rs, err)
			}
			d.Release(true)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := open(t, strategy.Pool{Size: 1}, srv.Addr(), strategy.Config{})
			ctx := timeout(t, 5*time.Second)
			if _, err := c.Do(ctx, "PING"); err != nil {
				t.Fatal(err)
			}
			before := c.Stats().Dials
			tc.call(t, c)
			if _, err := c.Do(ctx, "PING"); err != nil {
				t.Fatalf("PING after the reply: %v", err)
			}
			if got := c.Stats().Dials; got != before+1 {
				t.Errorf("Dials %d -> %d after a reply reading \"ERR Protocol error\"; want the connection replaced (+1)", before, got)
			}
		})
	}
}
