package redisxtest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/redisxtest"
	"github.com/redisx-go/kit/strategy"
)

func newClient(t *testing.T, o redisx.Options) *redisx.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := redisx.New(ctx, o)
	if err != nil {
		t.Fatalf("redisx.New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func setGet(t *testing.T, c *redisx.Client, key string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Set(ctx, key, []byte("v:"+key), time.Minute); err != nil {
		t.Fatalf("Set(%q): %v", key, err)
	}
	if v, err := c.Get(ctx, key); err != nil || string(v) != "v:"+key {
		t.Fatalf("Get(%q) = %q, %v; want %q, nil", key, v, err, "v:"+key)
	}
}

func TestStart(t *testing.T) {
	srv := redisxtest.Start(t, redisxtest.Options{})
	setGet(t, newClient(t, srv.Options()), "k")
}

func TestStartWithPassword(t *testing.T) {
	srv := redisxtest.Start(t, redisxtest.Options{Password: "s3cret"})
	setGet(t, newClient(t, srv.Options()), "k")
	o := srv.Options()
	o.Password = "wrong"
	if c, err := redisx.New(context.Background(), o); err == nil {
		c.Close()
		t.Fatal("New with a wrong password succeeded")
	}
}

func TestStartWithACLUser(t *testing.T) {
	srv := redisxtest.Start(t, redisxtest.Options{Username: "app", Password: "app-pw"})
	c := newClient(t, srv.Options())
	setGet(t, c, "k")
	who, err := redis.String(c.Do(context.Background(), "ACL", "WHOAMI"))
	if err != nil || who != "app" {
		t.Fatalf("ACL WHOAMI = %v, %v; want app", who, err)
	}
	o := srv.Options()
	o.Username = "" // the default user with the ACL user's password
	if c, err := redisx.New(context.Background(), o); err == nil {
		c.Close()
		t.Fatal("the default user accepted the ACL user's password")
	}
}

func TestUsernameWithoutPassword(t *testing.T) {
	if _, err := redisxtest.NewServer(context.Background(), redisxtest.Options{Username: "app"}); err == nil {
		t.Fatal("NewServer with a Username and no Password succeeded")
	}
}

func TestKillRestart(t *testing.T) {
	srv := redisxtest.Start(t, redisxtest.Options{})
	c := newClient(t, srv.Options())
	setGet(t, c, "before")
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err := c.Get(ctx, "before")
	cancel()
	if err == nil {
		t.Fatal("Get from a killed server succeeded")
	}
	if err := srv.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitServing(t, c, "after")
	if _, err := c.Get(context.Background(), "before"); !errors.Is(err, redisx.ErrNotFound) {
		t.Fatalf("Get(before) after a restart without persistence: %v, want ErrNotFound", err)
	}
}

// waitServing retries a SET until the server behind c answers, for 5 s.
func waitServing(t *testing.T, c *redisx.Client, key string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Set(ctx, key, []byte("v"), 0)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no recovery 5 s after the server came back: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestRestartRestartsARunningServer(t *testing.T) {
	srv := redisxtest.Start(t, redisxtest.Options{Password: "pw"})
	c := newClient(t, srv.Options())
	setGet(t, c, "before")
	if err := srv.Restart(context.Background()); err != nil {
		t.Fatalf("Restart of a running server: %v", err)
	}
	waitServing(t, c, "after")
	if _, err := c.Get(context.Background(), "before"); !errors.Is(err, redisx.ErrNotFound) {
		t.Fatalf("Get(before) after a restart without persistence: %v, want ErrNotFound", err)
	}
}

func TestStopThenRestart(t *testing.T) {
	srv := redisxtest.Start(t, redisxtest.Options{})
	c := newClient(t, srv.Options())
	setGet(t, c, "before")
	if err := srv.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatalf("a second Stop: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err := c.Get(ctx, "before")
	cancel()
	if err == nil {
		t.Fatal("Get from a stopped server succeeded")
	}
	if err := srv.Restart(context.Background()); err != nil {
		t.Fatalf("Restart after Stop: %v", err)
	}
	waitServing(t, c, "after")
}

func TestErrorsNameRedisxtestOnly(t *testing.T) {
	_, err := redisxtest.NewServer(context.Background(), redisxtest.Options{Args: []string{"--no-such-directive", "1"}})
	if err == nil {
		t.Fatal("NewServer with an unknown directive succeeded")
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "redisxtest: ") || strings.Contains(msg, "launcher:") {
		t.Fatalf("error %q: want one redisxtest: prefix and no internal package's name", msg)
	}
}

func TestStartCluster(t *testing.T) {
	cl := redisxtest.StartCluster(t, redisxtest.ClusterOptions{})
	if n := len(cl.Addrs()); n != 3 {
		t.Fatalf("%d nodes, want 3", n)
	}
	o := cl.Options()
	o.Strategy = strategy.SlotGrouped{}
	c := newClient(t, o)
	for i := range 20 {
		setGet(t, c, fmt.Sprintf("k%d", i))
	}
	if st := c.Stats(); st.Masters != 3 {
		t.Fatalf("Stats().Masters = %d, want 3", st.Masters)
	}
}

func TestStartWithTLS(t *testing.T) {
	srv := redisxtest.Start(t, redisxtest.Options{TLS: true, Password: "pw"})
	o := srv.Options()
	if o.TLS == nil {
		t.Fatal("Options().TLS is nil for a TLS server")
	}
	setGet(t, newClient(t, o), "k")
	o.TLS = nil // plain text to the TLS port is refused
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if c, err := redisx.New(ctx, o); err == nil {
		c.Close()
		t.Fatal("a plain-text client talked to the TLS port")
	}
}

func TestStartClusterWithTLS(t *testing.T) {
	cl := redisxtest.StartCluster(t, redisxtest.ClusterOptions{TLS: true})
	o := cl.Options()
	o.Strategy = strategy.SlotGrouped{}
	c := newClient(t, o)
	for i := range 20 {
		setGet(t, c, fmt.Sprintf("k%d", i))
	}
	vs, err := c.MGet(context.Background(), "k1", "k2", "k3", "k4")
	if err != nil || len(vs) != 4 || string(vs[2]) != "v:k3" {
		t.Fatalf("MGet over TLS = %q, %v", vs, err)
	}
}
