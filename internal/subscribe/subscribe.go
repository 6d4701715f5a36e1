// Package subscribe keeps one subscribed connection alive: it dials it
// and has it subscribed, pings it so that a dead or half-open connection
// is noticed, hands what the server pushes to its user, and when the
// connection is lost dials again and subscribes again — with backoff,
// for as long as its context lasts, or until the server refuses it for
// good, which ends it with that error.
//
// What the connection subscribes to, what a push means and what a loss
// or a restore calls for (a marker, a flush, a rediscovery) belong to the
// user, a [Protocol]: Pub/Sub (redisx's Subscription), the near-cache's
// invalidation connections and the Sentinel watch are its users.
//
// # The life of a connection
//
// [Run] loops: dial through Options.Dial with Protocol.Hello as the
// handshake, both within Options.Timeout; Protocol.Up once it is
// subscribed; then pushes to Protocol.Push, one at a time and in order,
// until the connection fails, stays silent for three ping periods,
// Push asks for a new one, or the context ends; Protocol.Down; and after
// a backoff (Options.MinBackoff doubling to Options.MaxBackoff, back to
// MinBackoff once a connection was subscribed) the next dial. A failed
// dial or handshake goes to Protocol.Failed, which says whether it ends
// the run.
//
// Goroutines: Run's own, and one pinger per connection, which ends
// before Run dials again or returns.
package subscribe

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/dial"
)

// Dialer opens a connection within ctx, runs hello on it within ctx (and
// again on a new one when it follows a redirect hello returned), and
// returns it: the caller's to close.
type Dialer func(ctx context.Context, hello func(net.Conn) error) (net.Conn, error)

// Node is the Dialer of addr with cfg's handshake (dial.Session): TCP,
// TLS, credentials, SELECT, CLIENT SETNAME, then hello.
func Node(cfg *backend.Config, addr string) Dialer {
	return func(ctx context.Context, hello func(net.Conn) error) (net.Conn, error) {
		return dial.Session(ctx, cfg, addr, hello)
	}
}

// Conn is a subscribed connection: redigo's, which allows one writer and
// one reader at a time (Run's pinger writes; Options.PingLock keeps it
// apart from the Protocol's own writes).
type Conn struct {
	redis.Conn
	// Early holds what Hello read while it waited for its replies and
	// that is not one of them: Push has it first.
	Early []any
	// ID is the connection's client ID, set by a Hello that asked for it
	// (CLIENT ID).
	ID int64
}

// Protocol is what a user of Run supplies: what to subscribe to and what
// the pushes, a loss and a restore mean. Its methods are called from
// Run's goroutine, one at a time.
type Protocol interface {
	// Hello subscribes c, a new connection, to what is wanted and reads
	// the server's confirmations, within the dial's deadline. An error
	// fails the dial (see Failed); a MOVED or ASK reply is followed by a
	// Dialer that follows redirects, Hello running again.
	Hello(c *Conn) error
	// Up takes c subscribed; again tells that a connection was up before
	// (a marker's place). An error closes c and ends Run with it.
	Up(c *Conn, again bool) error
	// Push takes one reply read on c — a push, a pong, or an error reply
	// as a redis.Error — and reports whether c is still wanted: false
	// replaces it.
	Push(c *Conn, v any) bool
	// Down takes the loss of c, before it is closed.
	Down(c *Conn)
	// Failed takes the failure of a dial or of Hello, and returns nil to
	// try again after the backoff, or the error that ends Run.
	Failed(err error) error
}

// Options are Run's timings and its dialer.
type Options struct {
	// Dial opens the connections.
	Dial Dialer
	// Timeout bounds a dial with its Hello.
	Timeout time.Duration
	// WriteTimeout bounds each write on the connection; 0: none.
	WriteTimeout time.Duration
	// Ping is how often the connection is pinged; one silent for three
	// periods is replaced.
	Ping time.Duration
	// PingLock, when set, is held around each ping's write: the
	// Protocol's own writers take it too.
	PingLock sync.Locker
	// MinBackoff and MaxBackoff bound the wait before a dial: MinBackoff
	// after a loss, doubling after each failure up to MaxBackoff.
	MinBackoff, MaxBackoff time.Duration
	// RedialAtOnce dials again at once after a loss, without the wait.
	RedialAtOnce bool
}

// Run keeps a connection subscribed for p until ctx ends — then it
// returns nil — or until p.Up or p.Failed returns an error, which it
// returns. Its connection and pinger are gone when it returns.
func Run(ctx context.Context, o Options, p Protocol) error {
	backoff := o.MinBackoff
	again := false
	for ctx.Err() == nil {
		c, err := connect(ctx, &o, p)
		switch {
		case err == nil:
			if err = p.Up(c, again); err != nil {
				c.Close()
			}
		case ctx.Err() == nil:
			err = p.Failed(err) // nil: tried again after the backoff
		}
		switch {
		case ctx.Err() != nil:
			if c != nil && err == nil {
				c.Close()
			}
			return nil
		case err != nil:
			return err
		}
		if c != nil {
			backoff, again = o.MinBackoff, true
			serve(ctx, &o, p, c)
			if o.RedialAtOnce {
				continue
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, o.MaxBackoff)
	}
	return nil
}

// connect dials a connection and has p subscribe it, within o.Timeout.
func connect(ctx context.Context, o *Options, p Protocol) (*Conn, error) {
	hctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	var c *Conn
	if _, err := o.Dial(hctx, func(nc net.Conn) error {
		c = &Conn{Conn: redis.NewConn(nc, 0, o.WriteTimeout)}
		return p.Hello(c)
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// serve pings c and hands what it reads to p until c fails, stays
// silent, p drops it or ctx ends; then c is closed and its pinger gone.
func serve(ctx context.Context, o *Options, p Protocol, c *Conn) {
	stopClose := context.AfterFunc(ctx, func() { c.Close() })
	stop, pinged := make(chan struct{}), make(chan struct{})
	go ping(c, o, stop, pinged)
	defer func() {
		p.Down(c)
		stopClose()
		c.Close() // first: a ping stuck in a write returns
		close(stop)
		<-pinged
	}()
	early := c.Early
	c.Early = nil
	for _, v := range early {
		if !p.Push(c, v) {
			return
		}
	}
	for {
		v, err := redis.ReceiveWithTimeout(c.Conn, 3*o.Ping) // the redigo connection, which has timeouts
		var re redis.Error
		switch {
		case errors.As(err, &re):
			v = re
		case err != nil:
			return
		}
		if !p.Push(c, v) {
			return
		}
	}
}

// ping writes a PING on c every o.Ping until stop is closed or a write
// fails: a connection that lost its peer then shows as silent. It closes
// pinged as it returns.
func ping(c *Conn, o *Options, stop <-chan struct{}, pinged chan<- struct{}) {
	defer close(pinged)
	t := time.NewTicker(o.Ping)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if o.PingLock != nil {
			o.PingLock.Lock()
		}
		err := c.Send("PING")
		if err == nil {
			err = c.Flush()
		}
		if o.PingLock != nil {
			o.PingLock.Unlock()
		}
		if err != nil {
			return
		}
	}
}
