package redisx_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// What New says when the address it dials is not a Redis server.

// fakePeer listens on loopback and answers each connection with reply,
// then reads until the client hangs up; an empty reply closes each
// connection as soon as it is accepted. Cleanup stops it.
func fakePeer(t *testing.T, reply string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				if reply == "" {
					return
				}
				c.Write([]byte(reply))
				c.SetReadDeadline(time.Now().Add(5 * time.Second))
				io.Copy(io.Discard, c)
			})
		}
	})
	t.Cleanup(func() {
		l.Close()
		wg.Wait()
	})
	return l.Addr().String()
}

// TestNewToAPeerThatIsNotRedisSaysSo: New against an HTTP server, a peer
// answering garbage, and one that hangs up at once fails with
// ErrConnection and a message in our words that names the address —
// not redigo's parser error — with every strategy, a password set or
// not, and never shows the password.
func TestNewToAPeerThatIsNotRedisSaysSo(t *testing.T) {
	const password = "s3cret-pw"
	peers := []struct {
		name, reply, want string
	}{
		{"http", "HTTP/1.1 400 Bad Request\r\n\r\n", "did not answer as a Redis server"},
		{"garbage", "\x00\x01\xfe garbage\r\n", "did not answer as a Redis server"},
		{"hang-up", "", "closed the connection during the handshake"},
	}
	strategies := []struct {
		name string
		s    strategy.Strategy
	}{
		{"default", nil},
		{"multiplexed", strategy.Multiplexed{}},
		{"pool", strategy.Pool{}},
	}
	for _, p := range peers {
		addr := fakePeer(t, p.reply)
		for _, s := range strategies {
			for _, pw := range []string{"", password} {
				name := p.name + "/" + s.name
				if pw != "" {
					name += "/password"
				}
				t.Run(name, func(t *testing.T) {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					defer cancel()
					c, err := redisx.New(ctx, redisx.Options{Addrs: []string{addr}, Strategy: s.s, Password: pw, DialTimeout: 2 * time.Second})
					if c != nil {
						c.Close()
						t.Fatalf("New(%s) returned a client, want an error", p.name)
					}
					msg := ""
					if err != nil {
						msg = err.Error()
					}
					if !errors.Is(err, redisx.ErrConnection) || !strings.Contains(msg, addr+" "+p.want) {
						t.Fatalf("New(%s) = %v; want ErrConnection saying %q", p.name, err, addr+" "+p.want)
					}
					if strings.Contains(msg, "redigo") || strings.Count(msg, "redisx:") != 1 || strings.Contains(msg, password) {
						t.Errorf("New(%s) = %q; want one redisx: prefix, no redigo error, no password", p.name, msg)
					}
				})
			}
		}
	}
}
