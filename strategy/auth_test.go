package strategy_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

const (
	authPassword      = "s3cr3t-PW"
	authWrongPassword = "wr0ng-PW"
	authUser          = "app"
	authUserPassword  = "app-PW"
)

// authStrategies are the strategies that authenticate with the shared
// Config (go-redis brings its own client and credentials).
func authStrategies() []struct {
	name string
	s    strategy.Strategy
} {
	return []struct {
		name string
		s    strategy.Strategy
	}{
		{"multiplexed", strategy.Multiplexed{}},
		{"pool", strategy.Pool{Size: 4}},
	}
}

func authCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// authNew opens a client, closed when the test ends.
func authNew(t *testing.T, o redisx.Options) *redisx.Client {
	t.Helper()
	c, err := redisx.New(authCtx(t), o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// authRoundTrip checks that c can write and read back a value.
func authRoundTrip(t *testing.T, c *redisx.Client, key string) {
	t.Helper()
	ctx := authCtx(t)
	if err := c.Set(ctx, key, []byte("v:"+key), time.Minute); err != nil {
		t.Fatalf("Set(%q): %v", key, err)
	}
	if v, err := c.Get(ctx, key); err != nil || string(v) != "v:"+key {
		t.Fatalf("Get(%q) = %q, %v; want %q, nil", key, v, err, "v:"+key)
	}
}

// authRefused checks that New fails with ErrAuth, not ErrConnection, and
// that its error names none of the passwords.
func authRefused(t *testing.T, o redisx.Options) {
	t.Helper()
	c, err := redisx.New(authCtx(t), o)
	if err == nil {
		c.Close()
		t.Fatalf("New with user %q and a wrong or missing password succeeded", o.Username)
	}
	if !errors.Is(err, redisx.ErrAuth) || errors.Is(err, redisx.ErrConnection) {
		t.Errorf("New error = %v; want ErrAuth, not ErrConnection", err)
	}
	for _, pw := range []string{authPassword, authWrongPassword, authUserPassword} {
		if strings.Contains(err.Error(), pw) {
			t.Errorf("New error contains the password %q: %v", pw, err)
		}
	}
	t.Logf("refused: %v", err)
}

func TestAuthPassword(t *testing.T) {
	srv := launcher.Private(t, launcher.Options{Password: authPassword})
	for _, tc := range authStrategies() {
		t.Run(tc.name, func(t *testing.T) {
			base := redisx.Options{Addrs: []string{srv.Addr()}, Strategy: tc.s}

			right := base
			right.Password = authPassword
			authRoundTrip(t, authNew(t, right), "auth:"+tc.name)

			wrong := base
			wrong.Password = authWrongPassword
			authRefused(t, wrong)

			authRefused(t, base) // no password at all: NOAUTH
		})
	}
}

func TestAuthACLUser(t *testing.T) {
	srv := launcher.Private(t, launcher.Options{Password: authPassword})
	if out, err := srv.CLI(authCtx(t), "ACL", "SETUSER", authUser, "on", ">"+authUserPassword, "~*", "+@all"); err != nil {
		t.Fatalf("ACL SETUSER: %v (%s)", err, out)
	}
	for _, tc := range authStrategies() {
		t.Run(tc.name, func(t *testing.T) {
			o := redisx.Options{Addrs: []string{srv.Addr()}, Strategy: tc.s, Username: authUser, Password: authUserPassword}
			c := authNew(t, o)
			authRoundTrip(t, c, "acl:"+tc.name)
			who, err := redigo.String(c.Do(authCtx(t), "ACL", "WHOAMI"))
			if err != nil || who != authUser {
				t.Errorf("ACL WHOAMI = %q, %v; want %q", who, err, authUser)
			}

			wrong := o
			wrong.Password = authWrongPassword
			authRefused(t, wrong)

			// The default user's password is not the ACL user's.
			wrong.Password = authPassword
			authRefused(t, wrong)
		})
	}
}

func TestAuthDBSelection(t *testing.T) {
	srv := launcher.Private(t, launcher.Options{Password: authPassword})
	for _, tc := range authStrategies() {
		t.Run(tc.name, func(t *testing.T) {
			ctx := authCtx(t)
			c := authNew(t, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: tc.s, Password: authPassword, DB: 3})
			key := fmt.Sprintf("db3:%s:%d", tc.name, time.Now().UnixNano())
			if err := c.Set(ctx, key, []byte("in-db-3"), time.Minute); err != nil {
				t.Fatalf("Set: %v", err)
			}
			if got, err := srv.CLI(ctx, "-n", "3", "GET", key); err != nil || got != "in-db-3" {
				t.Errorf("redis-cli -n 3 GET %s = %q, %v; want %q", key, got, err, "in-db-3")
			}
			if got, err := srv.CLI(ctx, "-n", "0", "EXISTS", key); err != nil || got != "0" {
				t.Errorf("redis-cli -n 0 EXISTS %s = %q, %v; want 0 (the write went to db 0)", key, got, err)
			}
			if v, err := c.Get(ctx, key); err != nil || string(v) != "in-db-3" {
				t.Errorf("Get(%q) = %q, %v; want %q, nil", key, v, err, "in-db-3")
			}
		})
	}
}

func TestAuthClientName(t *testing.T) {
	srv := launcher.Private(t, launcher.Options{Password: authPassword})
	for _, tc := range authStrategies() {
		t.Run(tc.name, func(t *testing.T) {
			ctx := authCtx(t)
			name := "redisx-test-" + tc.name
			c := authNew(t, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: tc.s, Password: authPassword, ClientName: name})
			authRoundTrip(t, c, "name:"+tc.name)
			list, err := srv.CLI(ctx, "CLIENT", "LIST")
			if err != nil {
				t.Fatalf("CLIENT LIST: %v", err)
			}
			n := 0
			for _, line := range strings.Split(list, "\n") {
				if strings.Contains(" "+line+" ", " name="+name+" ") {
					n++
				}
			}
			if n == 0 {
				t.Errorf("CLIENT LIST has no connection named %q:\n%s", name, list)
			}
			t.Logf("%d connection(s) named %q", n, name)
		})
	}
}
