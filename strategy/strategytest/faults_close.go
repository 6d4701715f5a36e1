package strategytest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redisx-go/kit/strategy"
)

// CloseWithBlockedCall closes the client while a call is in flight that
// nothing else would end for 10 s: a BLPOP 0 the server holds, or (into,
// when blackhole is set) a Set into a half-open connection, both without
// a deadline and with ReadTimeout 10 s. Close must return within 3 s and
// the call must fail, with ErrClosed or ErrConnection, within 3 s of it.
func CloseWithBlockedCall(t *testing.T, open Opener, blackhole bool) {
	e := setup(t, open, strategy.Config{ReadTimeout: 10 * time.Second})
	e.mustSet("close:warm", "v")

	done := make(chan error, 1)
	if blackhole {
		e.p.Blackhole(true)
		go func() { done <- e.c.Set(context.Background(), "close:k", []byte("v"), time.Minute) }()
		time.Sleep(100 * time.Millisecond) // let the Set reach the silent socket
	} else {
		go func() {
			_, err := e.do.Do(context.Background(), "BLPOP", "close:nothing", 0)
			done <- err
		}()
		e.waitBlocked(1)
	}

	closed := make(chan struct{})
	start := time.Now()
	go func() {
		e.close()
		close(closed)
	}()
	select {
	case err := <-done:
		if took := time.Since(start); !errors.Is(err, strategy.ErrClosed) && !errors.Is(err, strategy.ErrConnection) {
			t.Errorf("call in flight at Close = %v after %v; want ErrClosed or ErrConnection", err, took)
		}
	case <-time.After(3 * time.Second):
		// Say how it ends, for the report: the read timeout ends it at the
		// latest.
		select {
		case err := <-done:
			t.Errorf("call in flight at Close still blocked 3 s after Close began; it returned %v after %v", err, time.Since(start).Round(time.Millisecond))
		case <-time.After(12 * time.Second):
			t.Errorf("call in flight at Close still blocked 15 s after Close began")
		}
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatalf("Close still running 5 s after it began")
	}
}
