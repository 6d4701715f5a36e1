package redisx_test

import (
	"context"
	"errors"
	"log"
	"sync"
	"time"

	"github.com/redisx-go/kit/redisx"
)

// The examples connect to 127.0.0.1:6379 and have no Output line: they
// are compiled, not run.

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
	tokens := &tokenSource{}
	c, err := redisx.New(ctx, redisx.Options{
		Addrs:       []string{"127.0.0.1:6379"},
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
}

// Retries: a read that fails for want of a connection is tried again;
// a write only when it provably never reached the server. Here up to 5
// attempts, 20 ms to 1 s apart, always within the call's deadline.
func ExampleRetry() {
	ctx := context.Background()
	c, err := redisx.New(ctx, redisx.Options{
		Addrs: []string{"127.0.0.1:6379"},
		Retry: redisx.Retry{MaxAttempts: 5, MinBackoff: 20 * time.Millisecond, MaxBackoff: time.Second},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if _, err := c.Get(ctx, "user:42"); err != nil && !errors.Is(err, redisx.ErrNotFound) {
		log.Print(err) // every attempt failed, or the deadline came first
	}
	log.Printf("%d retries so far", c.Stats().Retries)
}
