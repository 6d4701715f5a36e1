// Package subscribe keeps one subscribed connection alive. It dials it and
// has it subscribed, pings it so that a dead or half-open connection is
// noticed, hands what the server pushes to its user, and when the
// connection is lost dials again and subscribes again — with backoff, for
// as long as its context lasts, or until the server refuses it for good,
// which ends it with that error.
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
// MinBackoff once a connection was subscribed; none after a loss with
// Options.RedialAtOnce) the next dial. A failed dial or handshake goes
// to Protocol.Failed, which says whether it ends the run. With
// Options.MaxAge a connection is replaced for its age by a successor
// subscribed while it serves, without a loss (see [Handover]).
//
// Goroutines: Run's own, one pinger per connection, and with MaxAge a
// reader per connection and one that dials the successor; all of them
// end before Run returns.
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
// the pushes, a loss and a restore mean. Its methods are called one at a
// time, in the order of the connection's life, except with
// Options.MaxAge (see Handover): a successor's Hello runs while the
// current connection serves, and a kept connection's Push runs on a
// goroutine of its own.
type Protocol interface {
	// Hello subscribes c, a new connection, to what is wanted and reads
	// the server's confirmations, within the dial's deadline. An error
	// fails the dial (see Failed); a MOVED or ASK reply is followed by a
	// Dialer that follows redirects, Hello running again.
	Hello(c *Conn) error
	// Up takes c subscribed; again tells that a connection was lost
	// before it (a marker's place; not so for a successor after a
	// handover). An error closes c and ends Run with it.
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
	// MaxAge, when positive, is the age at which a connection is
	// replaced without a loss: see Handover.
	MaxAge time.Duration
}

// Run keeps a connection subscribed for p until ctx ends — then it
// returns nil — or until p.Up or p.Failed returns an error, which it
// returns. Its connections and their goroutines are gone when it
// returns.
func Run(ctx context.Context, o Options, p Protocol) error {
	r := &runner{ctx: ctx, o: &o, p: p}
	r.hp, _ = p.(Handover)
	defer r.kept.Wait()
	backoff := o.MinBackoff
	again := false
	for ctx.Err() == nil {
		c, err := r.connect()
		switch {
		case err == nil:
			err = r.up(c, again)
		case ctx.Err() == nil:
			err = p.Failed(err) // nil: tried again after the backoff
		}
		if err == nil && c != nil {
			backoff, again = o.MinBackoff, true
			err = r.serve(c)
		}
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			return err
		case c != nil && o.RedialAtOnce:
			continue
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

// runner is one Run's.
type runner struct {
	ctx  context.Context
	o    *Options
	p    Protocol
	hp   Handover       // p's, if it is one
	kept sync.WaitGroup // the goroutines of connections kept after a handover
}

// connect dials a connection and has p subscribe it, within o.Timeout.
func (r *runner) connect() (*Conn, error) {
	hctx, cancel := context.WithTimeout(r.ctx, r.o.Timeout)
	defer cancel()
	var c *Conn
	if _, err := r.o.Dial(hctx, func(nc net.Conn) error {
		c = &Conn{Conn: redis.NewConn(nc, 0, r.o.WriteTimeout)}
		return r.p.Hello(c)
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// up hands c, subscribed, to p; c is closed if p refuses it.
func (r *runner) up(c *Conn, again bool) error {
	err := r.p.Up(c, again)
	if err != nil {
		c.Close()
	}
	return err
}

// serve serves c, and after a handover each successor, until one is
// lost or ctx ends (nil), or p.Up refuses a successor (its error).
func (r *runner) serve(c *Conn) error {
	for {
		if r.o.MaxAge <= 0 {
			r.serveOne(c)
			return nil
		}
		next, missed := r.serveAged(c)
		if next == nil {
			return nil
		}
		if missed && r.hp != nil {
			r.hp.Missed()
		}
		if err := r.up(next, false); err != nil {
			return err
		}
		c = next
	}
}

// serveOne serves c until it is lost or ctx ends; then c is closed and
// its pinger gone.
func (r *runner) serveOne(c *Conn) {
	lv := r.start(c)
	defer func() {
		r.p.Down(c)
		lv.end()
	}()
	r.read(c)
}

// live is a connection being served: closed when ctx ends, and pinged.
type live struct {
	c         *Conn
	stopClose func() bool
	stop      chan struct{} // closed: the pinger returns
	pinged    chan struct{} // closed by the pinger as it returns
}

// start makes c live: ctx's end closes it, and it is pinged.
func (r *runner) start(c *Conn) *live {
	lv := &live{c: c, stop: make(chan struct{}), pinged: make(chan struct{})}
	lv.stopClose = context.AfterFunc(r.ctx, func() { c.Close() })
	go ping(c, r.o, lv.stop, lv.pinged)
	return lv
}

// stopPinging stops the pinger and waits for it; once.
func (lv *live) stopPinging() {
	select {
	case <-lv.stop:
	default:
		close(lv.stop)
	}
	<-lv.pinged
}

// end closes the connection and waits for its pinger.
func (lv *live) end() {
	lv.stopClose()
	lv.c.Close() // first: a ping stuck in a write returns
	lv.stopPinging()
}

// read hands what c's server sends to p until c fails, stays silent for
// three ping periods or p drops it — false — or until the pong of the
// handover marker — true.
func (r *runner) read(c *Conn) (handedOver bool) {
	early := c.Early
	c.Early = nil
	for _, v := range early {
		if !r.p.Push(c, v) {
			return false
		}
	}
	for {
		v, err := redis.ReceiveWithTimeout(c.Conn, 3*r.o.Ping) // the redigo connection, which has timeouts
		var re redis.Error
		switch {
		case errors.As(err, &re):
			v = re
		case err != nil:
			return false
		case isMarkerPong(v):
			return true
		}
		if !r.p.Push(c, v) {
			return false
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
