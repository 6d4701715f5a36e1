package faultproxy_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"go.uber.org/goleak"

	"github.com/redisx-go/kit/internal/faultproxy"
	"github.com/redisx-go/kit/internal/launcher"
)

// start returns a proxy in front of a new redis-server. Its cleanup closes
// the proxy and fails the test if a goroutine of the proxy is left.
func start(t *testing.T) *faultproxy.Proxy {
	t.Helper()
	srv := launcher.Standalone(t, launcher.Options{})
	before := goleak.IgnoreCurrent()
	p, err := faultproxy.Start(context.Background(), srv.Addr())
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := goleak.Find(before); err != nil {
			t.Errorf("goroutines left after Close: %v", err)
		}
	})
	return p
}

// rawConn is a client socket speaking RESP by hand, for byte-exact checks.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	r  *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc, r: bufio.NewReader(nc)}
}

// command encodes args as a RESP array.
func command(args ...string) string {
	var b strings.Builder
	b.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	return b.String()
}

func (c *rawConn) send(s string) {
	c.t.Helper()
	c.nc.SetWriteDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c.nc, s); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// readLine reads one line (CRLF included) within d.
func (c *rawConn) readLine(d time.Duration) (string, error) {
	c.nc.SetReadDeadline(time.Now().Add(d))
	return c.r.ReadString('\n')
}

// readAll reads until the connection ends, within d, and returns what came
// and the error that ended it.
func (c *rawConn) readAll(d time.Duration) (string, error) {
	c.nc.SetReadDeadline(time.Now().Add(d))
	var b strings.Builder
	_, err := io.Copy(&b, c.r)
	if err == nil {
		err = io.EOF // io.Copy reports a clean end as nil
	}
	return b.String(), err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func dialRedis(t *testing.T, addr string) redis.Conn {
	t.Helper()
	c, err := redis.Dial("tcp", addr, redis.DialConnectTimeout(2*time.Second),
		redis.DialReadTimeout(5*time.Second), redis.DialWriteTimeout(2*time.Second))
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// timed runs one command and returns how long it took.
func timed(t *testing.T, c redis.Conn, args ...any) (any, time.Duration) {
	t.Helper()
	start := time.Now()
	v, err := c.Do(args[0].(string), args[1:]...)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("%v through the proxy: %v (after %v)", args, err, took)
	}
	return v, took
}

func TestProxyForwardsBothWays(t *testing.T) {
	p := start(t)
	c := dialRedis(t, p.Addr())
	big := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB, many chunks each way
	if _, err := c.Do("SET", "big", big); err != nil {
		t.Fatalf("SET 1 MiB: %v", err)
	}
	got, err := redis.String(c.Do("GET", "big"))
	if err != nil || got != big {
		t.Fatalf("GET of 1 MiB = %d bytes, %v; want the value set", len(got), err)
	}
	if s := p.Stats(); s.Accepted != 1 || s.Active != 1 {
		t.Errorf("Stats = %+v; want 1 accepted, 1 active", s)
	}
}

func TestProxyDelay(t *testing.T) {
	const d = 300 * time.Millisecond
	p := start(t)
	c := dialRedis(t, p.Addr()) // opened before the fault: it applies anyway

	p.Delay(faultproxy.Upstream, d)
	if _, took := timed(t, c, "PING"); took < d || took > d+2*time.Second {
		t.Errorf("PING with %v upstream delay took %v; want about %v", d, took, d)
	}
	p.Delay(faultproxy.Downstream, d)
	if _, took := timed(t, c, "PING"); took < 2*d || took > 2*d+2*time.Second {
		t.Errorf("PING with %v delay each way took %v; want about %v", d, took, 2*d)
	}
	// A new connection gets the delay too.
	c2 := dialRedis(t, p.Addr())
	if _, took := timed(t, c2, "PING"); took < 2*d {
		t.Errorf("PING on a new connection with %v delay each way took %v; want ≥ %v", d, took, 2*d)
	}
	p.Heal()
	if _, took := timed(t, c, "PING"); took >= d {
		t.Errorf("PING after Heal took %v; want < %v", took, d)
	}
}

func TestProxyBandwidth(t *testing.T) {
	const (
		size = 64 << 10
		rate = 128 << 10 // bytes per second: size takes 500 ms
		min  = 350 * time.Millisecond
	)
	p := start(t)
	c := dialRedis(t, p.Addr())
	value := strings.Repeat("v", size)

	p.Bandwidth(faultproxy.Upstream, rate)
	if _, took := timed(t, c, "SET", "k", value); took < min || took > 5*time.Second {
		t.Errorf("SET of %d bytes at %d B/s upstream took %v; want about 500 ms", size, rate, took)
	}
	if _, took := timed(t, c, "PING"); took >= min {
		t.Errorf("PING with only upstream capped took %v; a small request should pass at once", took)
	}
	p.Bandwidth(faultproxy.Upstream, 0)
	p.Bandwidth(faultproxy.Downstream, rate)
	v, took := timed(t, c, "GET", "k")
	if took < min || took > 5*time.Second {
		t.Errorf("GET of %d bytes at %d B/s downstream took %v; want about 500 ms", size, rate, took)
	}
	if s, _ := redis.String(v, nil); s != value {
		t.Errorf("GET through the capped link = %d bytes; want the %d set", len(s), size)
	}
	p.Heal()
	if _, took := timed(t, c, "GET", "k"); took >= min {
		t.Errorf("GET after Heal took %v; want < %v", took, min)
	}
}

func TestProxyDrop(t *testing.T) {
	p := start(t)
	open := dialRedis(t, p.Addr())
	// A dial returns once the kernel has completed the handshake, which
	// may be before the proxy accepts the connection; a connection not yet
	// accepted when Drop is turned on is a new one. One round trip makes
	// sure it was accepted.
	if _, err := open.Do("PING"); err != nil {
		t.Fatalf("PING before Drop: %v", err)
	}

	p.Drop(true)
	fresh := dialRaw(t, p.Addr()) // the kernel completes the handshake
	fresh.send(command("PING"))
	if got, err := fresh.readAll(2 * time.Second); got != "" || isTimeout(err) {
		t.Errorf("new connection while dropping read %q, %v; want it closed at once", got, err)
	}
	if _, err := open.Do("PING"); err != nil {
		t.Errorf("PING on a connection opened before Drop: %v; want it untouched", err)
	}
	if s := p.Stats(); s.Dropped != 1 {
		t.Errorf("Stats.Dropped = %d; want 1", s.Dropped)
	}

	p.Heal()
	if _, err := dialRedis(t, p.Addr()).Do("PING"); err != nil {
		t.Errorf("PING on a new connection after Heal: %v", err)
	}
}

func TestProxyCutAfterDownstream(t *testing.T) {
	p := start(t)
	c := dialRaw(t, p.Addr())
	value := strings.Repeat("x", 100)
	c.send(command("SET", "k", value))
	if line, err := c.readLine(2 * time.Second); line != "+OK\r\n" {
		t.Fatalf("SET = %q, %v", line, err)
	}

	p.CutAfter(faultproxy.Downstream, 10)
	c.send(command("GET", "k"))
	got, err := c.readAll(2 * time.Second)
	if want := ("$100\r\n" + value)[:10]; got != want || isTimeout(err) {
		t.Errorf("GET with the reply cut after 10 bytes read %q, %v; want %q, then the connection closed", got, err, want)
	}
	if s := p.Stats(); s.Cut != 1 {
		t.Errorf("Stats.Cut = %d; want 1", s.Cut)
	}

	// New connections are cut too, counting from their start.
	p.CutAfter(faultproxy.Downstream, 3)
	c2 := dialRaw(t, p.Addr())
	c2.send(command("PING"))
	if got, err := c2.readAll(2 * time.Second); got != "+PO" || isTimeout(err) {
		t.Errorf("PING on a new connection cut after 3 bytes read %q, %v; want \"+PO\", then closed", got, err)
	}

	p.Heal()
	c3 := dialRaw(t, p.Addr())
	c3.send(command("PING"))
	if line, err := c3.readLine(2 * time.Second); line != "+PONG\r\n" {
		t.Errorf("PING after Heal = %q, %v", line, err)
	}
}

func TestProxyCutAfterUpstream(t *testing.T) {
	p := start(t)
	c := dialRaw(t, p.Addr())
	first, second := command("SET", "first", "1"), command("SET", "second", "2")

	p.CutAfter(faultproxy.Upstream, len(first))
	c.send(first + second) // one write: the cut falls between the two
	if _, err := c.readAll(2 * time.Second); isTimeout(err) {
		t.Fatalf("connection cut upstream still open after 2 s")
	}
	p.Heal()

	check := dialRedis(t, p.Addr())
	deadline := time.Now().Add(2 * time.Second)
	for {
		v, err := redis.String(check.Do("GET", "first"))
		if v == "1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET first = %q, %v; want the command before the cut executed", v, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n, err := redis.Int(check.Do("EXISTS", "second")); n != 0 || err != nil {
		t.Errorf("EXISTS second = %d, %v; want 0: the command after the cut never reached the server", n, err)
	}
}

func TestProxyBlackhole(t *testing.T) {
	p := start(t)
	c := dialRaw(t, p.Addr())
	c.send(command("PING"))
	if line, err := c.readLine(2 * time.Second); line != "+PONG\r\n" {
		t.Fatalf("PING before the fault = %q, %v", line, err)
	}

	p.Blackhole(true)
	c.send(command("PING")) // the write succeeds: the socket is open
	if line, err := c.readLine(300 * time.Millisecond); !isTimeout(err) {
		t.Errorf("PING into the blackhole = %q, %v; want no reply and no close (a read timeout)", line, err)
	}
	fresh := dialRaw(t, p.Addr())
	fresh.send(command("PING"))
	if line, err := fresh.readLine(300 * time.Millisecond); !isTimeout(err) {
		t.Errorf("PING on a new connection into the blackhole = %q, %v; want a read timeout", line, err)
	}
	if s := p.Stats(); s.Active != 2 {
		t.Errorf("Stats.Active = %d during the blackhole; want 2: sockets stay open", s.Active)
	}

	// What was held is delivered on Heal, as a healed partition would.
	p.Heal()
	for name, rc := range map[string]*rawConn{"old": c, "new": fresh} {
		if line, err := rc.readLine(2 * time.Second); line != "+PONG\r\n" {
			t.Errorf("%s connection after Heal read %q, %v; want the held PING answered", name, line, err)
		}
	}
}

// TestProxyStrand: the connections open when Strand is called get no
// reply, now or after Heal, and stay open; a new connection works.
func TestProxyStrand(t *testing.T) {
	p := start(t)
	c := dialRaw(t, p.Addr())
	c.send(command("PING"))
	if line, err := c.readLine(2 * time.Second); line != "+PONG\r\n" {
		t.Fatalf("PING before the fault = %q, %v", line, err)
	}

	if n := p.Strand(); n != 1 {
		t.Errorf("Strand() = %d; want 1 connection", n)
	}
	c.send(command("PING")) // the write succeeds: the socket is open
	if line, err := c.readLine(300 * time.Millisecond); !isTimeout(err) {
		t.Errorf("PING on the stranded connection = %q, %v; want no reply and no close (a read timeout)", line, err)
	}
	if _, err := dialRedis(t, p.Addr()).Do("PING"); err != nil {
		t.Errorf("PING on a new connection after Strand: %v; want new connections spared", err)
	}
	p.Heal()
	if line, err := c.readLine(300 * time.Millisecond); !isTimeout(err) {
		t.Errorf("the stranded connection after Heal read %q, %v; want nothing: Heal does not revive it", line, err)
	}
	if s := p.Stats(); s.Active != 2 {
		t.Errorf("Stats.Active = %d; want 2: the stranded socket stays open beside the new one", s.Active)
	}
}

func TestProxyReset(t *testing.T) {
	p := start(t)
	c := dialRaw(t, p.Addr())
	c.send(command("BLPOP", "nothing", "0")) // a command in flight
	c2 := dialRaw(t, p.Addr())
	c2.send(command("PING"))
	if line, err := c2.readLine(2 * time.Second); line != "+PONG\r\n" {
		t.Fatalf("PING = %q, %v", line, err)
	}

	if n := p.Reset(); n != 2 {
		t.Errorf("Reset() = %d; want 2 connections", n)
	}
	for name, rc := range map[string]*rawConn{"blocked": c, "idle": c2} {
		if _, err := rc.readAll(2 * time.Second); !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("%s connection after Reset: read error %v; want ECONNRESET", name, err)
		}
	}
	if s := p.Stats(); s.Reset != 2 {
		t.Errorf("Stats.Reset = %d; want 2", s.Reset)
	}
	if _, err := dialRedis(t, p.Addr()).Do("PING"); err != nil {
		t.Errorf("PING on a new connection after Reset: %v; want Reset to spare new connections", err)
	}
}

// TestProxyCloseEndsEverything closes a proxy with a connection held by
// the blackhole, one whose chunk waits out a long delay and one blocked in
// BLPOP: Close must return promptly, close them all and leave no goroutine
// (start's cleanup checks).
func TestProxyCloseEndsEverything(t *testing.T) {
	p := start(t)
	blocked := dialRaw(t, p.Addr())
	blocked.send(command("BLPOP", "nothing", "0"))
	p.Delay(faultproxy.Downstream, time.Minute)
	delayed := dialRaw(t, p.Addr())
	delayed.send(command("PING"))
	p.Blackhole(true)
	held := dialRaw(t, p.Addr())
	held.send(command("PING"))
	for p.Stats().Active < 3 {
		time.Sleep(time.Millisecond)
	}

	start := time.Now()
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Close took %v; want < 2 s", took)
	}
	for name, rc := range map[string]*rawConn{"blocked": blocked, "delayed": delayed, "held": held} {
		if got, err := rc.readAll(2 * time.Second); isTimeout(err) {
			t.Errorf("%s connection still open after Close (read %q)", name, got)
		}
	}
	if nc, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		nc.Close()
		t.Errorf("dial %s after Close succeeded; want it refused", p.Addr())
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestProxyStartRejectsBadUpstream(t *testing.T) {
	if p, err := faultproxy.Start(context.Background(), "no-port"); err == nil {
		p.Close()
		t.Fatal("Start(\"no-port\") succeeded; want an error")
	}
}
