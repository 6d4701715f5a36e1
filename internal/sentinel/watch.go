package sentinel

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/dial"
	"github.com/redisx-go/kit/internal/transport"
)

// The watch: one connection to one sentinel at a time, subscribed to
// +switch-master, pinged so that a silent sentinel is noticed; when it
// fails, the next sentinel is tried. Every goroutine of it is counted in
// the backend's wait group and ends with the backend's life (go-redis#1455
// leaked one per reconnection).

const (
	// pingPeriod is how often the subscribed connection is pinged; it is
	// given up after three periods without a reply.
	pingPeriod = time.Second
	// rediscoverGap is the least time between two discoveries that
	// failures asked for.
	rediscoverGap = 100 * time.Millisecond
	// rolePeriod is how often the master is asked its ROLE.
	rolePeriod = time.Second
	// maxBackoff bounds the wait before the watch tries the next sentinel.
	maxBackoff = time.Second
)

// watch keeps a subscription to +switch-master on one of the sentinels
// until the backend's life ends.
func (b *Backend) watch() {
	defer b.wg.Done()
	addrs := b.cfg.Sentinel.Addrs
	backoff := 10 * time.Millisecond
	for i := 0; ; i = (i + 1) % len(addrs) {
		subscribed := b.session(addrs[i])
		if b.life.Err() != nil {
			return
		}
		if subscribed {
			backoff = 10 * time.Millisecond // a new loss: try the next one at once
		}
		select {
		case <-b.life.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// session subscribes to +switch-master on the sentinel at addr and follows
// its messages until the connection fails or the backend's life ends. It
// reports whether the subscription was confirmed.
func (b *Backend) session(addr string) (subscribed bool) {
	scfg := sentinelConfig(&b.cfg)
	hctx, cancel := context.WithTimeout(b.life, askTimeout(&b.cfg))
	defer cancel()
	nc, err := dial.Dial(b.life, &scfg, addr) // bounded by askTimeout as DialTimeout
	if err != nil {
		return false
	}
	c := redis.NewConn(nc, 0, 0)
	// From here the end of the backend's life closes the connection,
	// whatever step the session is in.
	defer context.AfterFunc(b.life, func() { c.Close() })()
	defer c.Close()
	if err := c.Send("SUBSCRIBE", "+switch-master"); err != nil {
		return false
	}
	if err := c.Flush(); err != nil {
		return false
	}
	deadline, _ := hctx.Deadline()
	if _, err := redis.ReceiveWithTimeout(c, remaining(deadline)); err != nil {
		return false
	}
	cancel()
	// A failover may have ended while no sentinel was watched.
	b.rediscover()

	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(pingPeriod)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if c.Send("PING") != nil || c.Flush() != nil {
					return
				}
			}
		}
	}()
	defer func() {
		c.Close() // first: a ping stuck in a write returns
		close(stop)
		<-stopped
	}()
	for {
		v, err := redis.ReceiveWithTimeout(c, 3*pingPeriod)
		if err != nil {
			return true
		}
		if addr, ok := switched(v, b.cfg.Sentinel.Master); ok {
			b.switchTo(addr)
		}
	}
}

// switched reads a +switch-master message of master: "<name> <old ip>
// <old port> <new ip> <new port>", and returns the new address.
func switched(v any, master string) (string, bool) {
	msg, ok := v.([]any)
	if !ok || len(msg) != 3 {
		return "", false
	}
	kind, _ := redis.String(msg[0], nil)
	payload, _ := redis.String(msg[2], nil)
	f := strings.Fields(payload)
	if kind != "message" || len(f) != 5 || f[0] != master {
		return "", false
	}
	return net.JoinHostPort(f[3], f[4]), true
}

// rediscover asks for a discovery soon: a connection to the master
// failed, or a server refused a write as a replica.
func (b *Backend) rediscover() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// follow runs the discoveries that failures ask for, at most one per
// rediscoverGap, and asks the master its ROLE every rolePeriod, until the
// backend's life ends.
func (b *Backend) follow() {
	defer b.wg.Done()
	t := time.NewTicker(rolePeriod)
	defer t.Stop()
	for {
		select {
		case <-b.life.Done():
			return
		case <-t.C:
			b.checkRole()
			continue
		case <-b.wake:
		}
		ctx, cancel := context.WithTimeout(b.life, 2*askTimeout(&b.cfg))
		addr, err := Discover(ctx, &b.cfg)
		cancel()
		if err == nil {
			b.switchTo(addr)
		}
		select {
		case <-b.life.Done():
			return
		case <-time.After(rediscoverGap):
		}
	}
}

// checkRole asks the master, on one of its connections, for its ROLE. A
// master the sentinels demoted ends its clients' connections as it is
// made a replica, and every new connection is checked; this catches a
// demotion by anyone else (REPLICAOF sent by an operator), which would
// leave replies of a replica on connections to a master.
func (b *Backend) checkRole() {
	m, err := b.acquire()
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(b.life, askTimeout(&b.cfg))
	start := time.Now()
	v, err := m.n.Do(ctx, "ROLE")
	cancel()
	m.Release()
	if err == nil {
		transport.ObserveRTT(&b.masterRTT, time.Since(start))
	}
	if err != nil {
		b.check(m, err)
		return
	}
	if role, ok := v.([]any); !ok || len(role) == 0 || string(asBytes(role[0])) != "master" {
		b.demoted(m, fmt.Errorf("%w: %s: %w (ROLE)", backend.ErrConnection, m.n.Address(), dial.ErrNotMaster))
	}
}

func asBytes(v any) []byte {
	switch v := v.(type) {
	case []byte:
		return v
	case string:
		return []byte(v)
	}
	return nil
}
