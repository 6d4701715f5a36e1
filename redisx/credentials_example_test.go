package redisx_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/redisxtest"
)

// tokenSource stands for a cloud provider's token API: a token valid for
// 15 minutes, cached until shortly before it expires.
type tokenSource struct {
	mu      sync.Mutex
	token   string
	expires time.Time
}

func (s *tokenSource) credentials(ctx context.Context) (username, password string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Until(s.expires) < time.Minute {
		// Fetch a new token here, within ctx (the dial's DialTimeout).
		s.token, s.expires = "token-from-the-provider", time.Now().Add(15*time.Minute)
	}
	return "app", s.token, nil
}

// Authentication with tokens that expire: every new connection asks
// Credentials for one, and MaxConnAge replaces every connection — shared,
// pooled or invalidation — before the token it was opened with expires,
// without failing a call. To rotate a static password instead, give the
// ACL user the new password next to the old one (ACL SETUSER app >new),
// make Credentials return it, and remove the old one (ACL SETUSER app
// resetpass >new) once MaxConnAge has passed.
func ExampleOptions_credentials() {
	ctx := context.Background()
	// A server whose ACL user app accepts the provider's token.
	srv, err := redisxtest.NewServer(ctx, redisxtest.Options{Username: "app", Password: "token-from-the-provider"})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	tokens := &tokenSource{}
	c, err := redisx.New(ctx, redisx.Options{
		Addrs:       []string{srv.Addr()},
		Credentials: tokens.credentials,
		MaxConnAge:  10 * time.Minute,
	})
	if errors.Is(err, redisx.ErrAuth) {
		log.Fatal("the server refused the token: ", err) // never retried
	}
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	user, err := redis.String(c.Do(ctx, "ACL", "WHOAMI"))
	fmt.Println(user, err)
	// Output: app <nil>
}

// Retries: a read that fails for want of a connection is tried again;
// a write only when it provably never reached the server. Here up to 5
// attempts, 20 ms to 1 s apart, always within the call's deadline.
func ExampleRetry() {
	ctx := context.Background()
	srv, err := redisxtest.NewServer(ctx, redisxtest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	c, err := redisx.New(ctx, redisx.Options{
		Addrs: []string{srv.Addr()},
		Retry: redisx.Retry{MaxAttempts: 5, MinBackoff: 20 * time.Millisecond, MaxBackoff: time.Second},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// The server crashes and comes back, empty: the client's connection
	// is gone, and the next read opens another.
	if err := srv.Kill(); err != nil {
		log.Fatal(err)
	}
	if err := srv.Restart(ctx); err != nil {
		log.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, err = c.Get(ctx, "user:42")
	if err != nil && !errors.Is(err, redisx.ErrNotFound) {
		log.Fatal(err) // every attempt failed, or the deadline came first
	}
	// A miss, not a connection error: the Get that met the dead connection,
	// if it did, was retried. (Stats().Retries counts the retries made;
	// here 0 or 1, as the client may have noticed the loss before the Get.)
	fmt.Println(errors.Is(err, redisx.ErrNotFound))
	// Output: true
}
