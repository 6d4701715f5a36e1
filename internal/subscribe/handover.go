package subscribe

import (
	"time"

	"github.com/gomodule/redigo/redis"
)

// Handover is an optional interface of a Protocol whose connections are
// replaced for their age (Options.MaxAge). A successor is dialled and
// subscribed while the connection serves on (a failure is tried again
// after min(MaxAge, 1 s)); then HandOver says how the old one ends.
type Handover interface {
	Protocol
	// HandOver takes next, subscribed while old served, and reports
	// whether old is kept. Kept, old is read on — Push, and at its end
	// Retired, called on a goroutine of its own — until it fails, Push
	// drops it or the Protocol closes it, and Up(next, false) follows at
	// once. Not kept, old is pinged no more and read up to the pong of a
	// marker PING sent on it: whatever the server pushed on old before
	// it confirmed next's subscription comes ahead of that pong, and
	// everything later comes on next too. Up(next, false) follows the
	// pong; should old fail first, Missed comes before it.
	HandOver(old, next *Conn) (keep bool)
	// Retired takes the end of a connection HandOver kept, before it is
	// closed.
	Retired(old *Conn)
	// Missed says that pushes may have been lost between a connection
	// and its successor: the old one failed before it was read to its
	// end, or while the successor was being subscribed. The successor
	// carries on; there is no Down.
	Missed()
}

// marker is the argument of the PING that ends a connection's part in a
// handover.
const marker = "redisx-handover"

// isMarkerPong reports whether v is the reply, in subscribed mode, to
// PING marker: ["pong", marker].
func isMarkerPong(v any) bool {
	msg, ok := v.([]any)
	if !ok || len(msg) != 2 {
		return false
	}
	kind, _ := redis.String(msg[0], nil)
	arg, _ := redis.String(msg[1], nil)
	return kind == "pong" && arg == marker
}

// dialled is the outcome of a successor's connect.
type dialled struct {
	c   *Conn
	err error
}

// serveAged serves c until it is lost — then it returns nil, c closed
// and its pinger gone — or until a successor takes over, which it
// returns, with missed set when pushes may have been lost in between.
func (r *runner) serveAged(c *Conn) (next *Conn, missed bool) {
	lv := r.start(c)
	done := make(chan bool, 1) // read's outcome: handed over
	go func() { done <- r.read(c) }()
	aged := time.NewTimer(r.o.MaxAge)
	defer aged.Stop()
	var successor chan dialled // the successor's connect, while it runs
	var handing *Conn          // the successor, while c is read up to the marker's pong
	for {
		select {
		case handedOver := <-done:
			if successor != nil {
				// c ended while the successor was connecting: it may
				// carry on.
				if d := <-successor; d.err == nil {
					handing = d.c
				}
			}
			if handing != nil && r.ctx.Err() != nil {
				handing.Close()
				handing = nil
			}
			if handing == nil {
				r.p.Down(c)
				lv.end()
				return nil, false
			}
			lv.end()
			return handing, !handedOver
		case <-aged.C:
			successor = make(chan dialled, 1)
			go func() {
				next, err := r.connect()
				successor <- dialled{next, err}
			}()
		case d := <-successor:
			successor = nil
			if d.err != nil {
				aged.Reset(min(r.o.MaxAge, time.Second)) // c serves on
				continue
			}
			if r.hp != nil && r.hp.HandOver(c, d.c) {
				r.kept.Add(1)
				go func() {
					defer r.kept.Done()
					<-done
					r.hp.Retired(c)
					lv.end()
				}()
				return d.c, false
			}
			handing = d.c
			lv.stopPinging() // one writer at a time
			if r.o.PingLock != nil {
				r.o.PingLock.Lock()
			}
			err := c.Send("PING", marker)
			if err == nil {
				err = c.Flush()
			}
			if r.o.PingLock != nil {
				r.o.PingLock.Unlock()
			}
			if err != nil {
				c.Close() // read fails, and the successor carries on
			}
		}
	}
}
