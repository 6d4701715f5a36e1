package redisx_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// adminPassword is the default user's password on the servers below:
// every connection must authenticate, and only redis-cli knows it.
const adminPassword = "admin-PW-0"

// credentialStrategies are the strategies that authenticate with the
// shared settings, and the near-cache over each.
func credentialStrategies() []struct {
	name string
	s    strategy.Strategy
} {
	return []struct {
		name string
		s    strategy.Strategy
	}{
		{"multiplexed", strategy.Multiplexed{Conns: 2}},
		{"pool", strategy.Pool{Size: 4}},
		{"near-multiplexed", localcache.Near{Inner: strategy.Multiplexed{}, PingInterval: 100 * time.Millisecond}},
		{"near-pool", localcache.Near{Inner: strategy.Pool{Size: 4}, PingInterval: 100 * time.Millisecond}},
		{"near-broadcast", localcache.Near{Inner: strategy.Multiplexed{}, PingInterval: 100 * time.Millisecond, Tracking: localcache.TrackBroadcast}},
	}
}

// rotatingSecret is a Credentials function whose password the test
// changes; it counts its calls, and apart those made to dial a
// near-cache's invalidation connections, which reconnect in the
// background, whatever the calls do.
type rotatingSecret struct {
	user               string
	pw                 atomic.Pointer[string]
	calls, invalidator atomic.Int64
}

func (r *rotatingSecret) set(pw string) { r.pw.Store(&pw) }

func (r *rotatingSecret) credentials(context.Context) (string, string, error) {
	r.calls.Add(1)
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for f, more := frames.Next(); more; f, more = frames.Next() {
		// Every connection of the near-cache's own (invalidations, and the
		// checks of tracked connections) is dialled by dialRedigo.
		if f.Function == "github.com/redisx-go/kit/localcache.dialRedigo" {
			r.invalidator.Add(1)
			break
		}
	}
	return r.user, *r.pw.Load(), nil
}

// callerCalls is the number of calls not made for a near-cache's own
// connections.
func (r *rotatingSecret) callerCalls() int64 { return r.calls.Load() - r.invalidator.Load() }

func cli(t *testing.T, srv *launcher.Server, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if out, err := srv.CLI(ctx, args...); err != nil {
		t.Fatalf("redis-cli %s: %v (%s)", args[0], err, out)
	}
}

// TestCredentialRotation rotates an ACL user's password while 16
// goroutines run Set and Get without retries, MaxConnAge 150 ms: the new
// password is added (ACL SETUSER app >new), the Credentials function
// switches to it, and once every connection was replaced the old one is
// removed (ACL SETUSER app resetpass >new). No call fails; connections
// opened after the removal authenticate (with the new password: the old
// one is refused), no dial fails; the near-cache's invalidation
// connections are replaced without a flush (with TrackBroadcast: with
// TrackKeys, each data connection replaced takes what the server tracked
// for it, and flushes).
func TestCredentialRotation(t *testing.T) {
	const age = 150 * time.Millisecond
	srv := launcher.Private(t, launcher.Options{Password: adminPassword})
	for _, tc := range credentialStrategies() {
		t.Run(tc.name, func(t *testing.T) {
			secret := &rotatingSecret{user: "app-" + tc.name}
			oldPW, newPW := "old-PW-"+tc.name, "new-PW-"+tc.name
			cli(t, srv, "ACL", "SETUSER", secret.user, "reset", "on", ">"+oldPW, "~*", "&*", "+@all")
			secret.set(oldPW)
			c, err := redisx.New(t.Context(), redisx.Options{
				Addrs:       []string{srv.Addr()},
				Strategy:    tc.s,
				Credentials: secret.credentials,
				MaxConnAge:  age,
				Retry:       redisx.Retry{MaxAttempts: 1}, // no failure to hide
			})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()

			var (
				calls, failed atomic.Int64
				first         atomic.Value
				stop          = make(chan struct{})
				wg            sync.WaitGroup
			)
			for g := range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					key := fmt.Sprintf("rot:%s:%d", tc.name, g)
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
						want := fmt.Sprintf("%s:%d", key, i)
						err := c.Set(ctx, key, []byte(want), time.Minute)
						if err == nil {
							var v []byte
							if v, err = c.Get(ctx, key); err == nil && string(v) != want {
								err = fmt.Errorf("Get(%q) = %q; want %q", key, v, want)
							}
						}
						cancel()
						calls.Add(1)
						if err != nil {
							failed.Add(1)
							first.CompareAndSwap(nil, err)
						}
						time.Sleep(time.Millisecond)
					}
				}()
			}

			time.Sleep(3 * age)
			cli(t, srv, "ACL", "SETUSER", secret.user, ">"+newPW)
			secret.set(newPW)
			switched := secret.calls.Load()
			time.Sleep(4 * age) // every connection is replaced, with the new password
			cli(t, srv, "ACL", "SETUSER", secret.user, "resetpass", ">"+newPW)
			removed := c.Stats()
			time.Sleep(4 * age)
			close(stop)
			wg.Wait()

			st := c.Stats()
			t.Logf("%d calls, %d failed; %d credentials calls after the switch; %d dials after the old password went",
				calls.Load(), failed.Load(), secret.calls.Load()-switched, st.Dials-removed.Dials)
			if n := failed.Load(); n > 0 {
				t.Errorf("%d of %d calls failed during the rotation; first: %v", n, calls.Load(), first.Load())
			}
			if st.Dials-removed.Dials == 0 {
				t.Errorf("no connection was opened after the old password was removed; want them replaced every %v", age)
			}
			if st.DialErrors != 0 {
				t.Errorf("Stats().DialErrors = %d; want 0: a dial used a refused password", st.DialErrors)
			}
			if near, ok := tc.s.(localcache.Near); ok && near.Tracking == localcache.TrackBroadcast && st.LocalFlushes != 0 {
				t.Errorf("Stats().LocalFlushes = %d; want 0: replacing an invalidation connection flushed the cache", st.LocalFlushes)
			}
			// The old password no longer opens anything: what the
			// connections opened since used is the new one.
			secret.set(oldPW)
			if c2, err := redisx.New(t.Context(), redisx.Options{Addrs: []string{srv.Addr()}, Strategy: strategy.Multiplexed{}, Credentials: secret.credentials}); !errors.Is(err, redisx.ErrAuth) {
				if c2 != nil {
					c2.Close()
				}
				t.Errorf("New with the removed password = %v; want ErrAuth", err)
			}
		})
	}
}

// TestRefusedPasswordIsErrAuth: once the Credentials function returns a
// wrong password, the next connection is refused: the call fails with
// ErrAuth, not ErrConnection, after one dial — ErrAuth is not retried —
// and neither the error nor the client's Stats name a password.
func TestRefusedPasswordIsErrAuth(t *testing.T) {
	const right, wrong = "right-PW-1", "wrong-PW-2"
	srv := launcher.Private(t, launcher.Options{Password: right})
	for _, tc := range credentialStrategies() {
		t.Run(tc.name, func(t *testing.T) {
			secret := &rotatingSecret{}
			secret.set(right)
			c, err := redisx.New(t.Context(), redisx.Options{Addrs: []string{srv.Addr()}, Strategy: tc.s, Credentials: secret.credentials})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := c.Set(t.Context(), "auth:k", []byte("v"), time.Minute); err != nil {
				t.Fatal(err)
			}
			secret.set(wrong)
			cli(t, srv, "CLIENT", "KILL", "TYPE", "normal") // every connection but redis-cli's
			deadline := time.Now().Add(5 * time.Second)
			var err2 error
			for {
				// A pooled connection learns of the kill from a call, which
				// is retried: the dial it then makes is refused.
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				before := secret.callerCalls()
				_, err2 = c.Get(ctx, fmt.Sprintf("auth:missing:%d", time.Now().UnixNano()))
				cancel()
				if errors.Is(err2, redisx.ErrAuth) {
					// The near-cache's invalidation connection, killed too,
					// redials meanwhile: its calls are not the Get's.
					if n := secret.callerCalls() - before; n != 1 {
						t.Errorf("a call refused with ErrAuth asked for credentials %d times; want 1: ErrAuth is not retried", n)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("Get after the password went wrong = %v; want ErrAuth within 5 s", err2)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if errors.Is(err2, redisx.ErrConnection) || !strategy.Unsent(err2) {
				t.Errorf("refused password: %v; want ErrAuth alone, unsent", err2)
			}
			for _, pw := range []string{right, wrong} {
				if strings.Contains(err2.Error(), pw) || strings.Contains(fmt.Sprintf("%+v", c.Stats()), pw) {
					t.Errorf("error %q or Stats name the password %q", err2, pw)
				}
			}
			t.Logf("refused: %v", err2)
		})
	}
}

// TestCredentialsOptions: Credentials beside a password is refused; the
// function's error fails New with ErrConnection wrapping it; it is called
// for every connection.
func TestCredentialsOptions(t *testing.T) {
	creds := func(context.Context) (string, string, error) { return "", "pw", nil }
	for _, o := range []redisx.Options{
		{Credentials: creds, Password: "pw"},
		{Credentials: creds, Username: "app", Password: "pw"},
		{MaxConnAge: -time.Second},
	} {
		if _, err := redisx.New(context.Background(), o); !errors.Is(err, redisx.ErrInvalidArgument) {
			t.Errorf("New(%+v) = %v; want ErrInvalidArgument", o, err)
		}
	}

	srv := launcher.Private(t, launcher.Options{Password: "pw-3"})
	boom := errors.New("token service down")
	_, err := redisx.New(t.Context(), redisx.Options{Addrs: []string{srv.Addr()},
		Credentials: func(context.Context) (string, string, error) { return "", "", boom }})
	if !errors.Is(err, redisx.ErrConnection) || !errors.Is(err, boom) || errors.Is(err, redisx.ErrAuth) {
		t.Errorf("New with a failing Credentials function = %v; want ErrConnection wrapping its error", err)
	}

	var calls atomic.Int64
	c, err := redisx.New(t.Context(), redisx.Options{Addrs: []string{srv.Addr()}, Strategy: strategy.Multiplexed{Conns: 3},
		Credentials: func(ctx context.Context) (string, string, error) {
			if _, ok := ctx.Deadline(); !ok {
				return "", "", errors.New("no deadline: not within DialTimeout")
			}
			calls.Add(1)
			return "", "pw-3", nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if n, dials := calls.Load(), c.Stats().Dials; n != dials || n < 3 {
		t.Errorf("Credentials called %d times for %d dials; want once per connection, at least 3", n, dials)
	}
	if redisx.ErrAuth != strategy.ErrAuth {
		t.Error("redisx.ErrAuth is not strategy.ErrAuth")
	}
}
