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
	"github.com/redisx-go/kit/internal/subscribe"
	"github.com/redisx-go/kit/internal/transport"
)

// The watch: one connection to one sentinel at a time, subscribed to
// +switch-master by the subscribe engine, which pings it so that a silent
// sentinel is noticed; when it fails, the next sentinel is tried. It runs
// on a goroutine counted in the backend's wait group and ends with the
// backend's life (go-redis#1455 leaked one per reconnection).

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
	scfg := sentinelConfig(&b.cfg)
	addrs := b.cfg.Sentinel.Addrs
	i := 0
	next := func(ctx context.Context, hello func(net.Conn) error) (net.Conn, error) {
		addr := addrs[i]
		i = (i + 1) % len(addrs)
		return subscribe.Node(&scfg, addr)(ctx, hello)
	}
	subscribe.Run(b.life, subscribe.Options{
		Dial:       next,
		Timeout:    askTimeout(&b.cfg), // the dial's and the SUBSCRIBE's
		Ping:       pingPeriod,
		MinBackoff: 10 * time.Millisecond, // after a loss: the next sentinel at once
		MaxBackoff: maxBackoff,
	}, watcher{b})
}

// watcher is the watch's subscribe.Protocol: +switch-master, whose
// messages move the backend to the new master.
type watcher struct{ b *Backend }

func (w watcher) Hello(c *subscribe.Conn) error {
	if err := c.Send("SUBSCRIBE", "+switch-master"); err != nil {
		return err
	}
	if err := c.Flush(); err != nil {
		return err
	}
	_, err := c.Receive()
	return err
}

// Up asks for a discovery: a failover may have ended while no sentinel
// was watched.
func (w watcher) Up(*subscribe.Conn, bool) error {
	w.b.rediscover()
	return nil
}

// Push follows a +switch-master of the backend's master; an error reply
// ends the connection.
func (w watcher) Push(_ *subscribe.Conn, v any) bool {
	if _, ok := v.(redis.Error); ok {
		return false
	}
	if addr, ok := switched(v, w.b.cfg.Sentinel.Master); ok {
		w.b.switchTo(addr)
	}
	return true
}

func (watcher) Down(*subscribe.Conn) {}

// Failed: the next sentinel is tried, for as long as the backend lives.
func (watcher) Failed(error) error { return nil }

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
