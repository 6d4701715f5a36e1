package faultproxy

import (
	"strconv"
	"time"
)

// Direction selects the traffic a fault applies to.
type Direction int

const (
	// Upstream is the traffic from the client to the upstream server:
	// requests.
	Upstream Direction = 1 << iota
	// Downstream is the traffic from the upstream server to the client:
	// replies.
	Downstream
	// Both is Upstream and Downstream.
	Both = Upstream | Downstream
)

// faults is the fault setting of a Proxy, copied by every pipe at each
// step. Per-direction settings are indexed 0 (Upstream) and 1
// (Downstream).
type faults struct {
	delay     [2]time.Duration
	rate      [2]int // bytes per second; 0: unlimited
	cut       [2]cutFault
	drop      bool
	blackhole bool
}

// cutFault closes a connection after bytes more bytes. gen changes with
// every CutAfter and Heal, so that each pipe knows when to start counting
// afresh.
type cutFault struct {
	on    bool
	bytes int64
	gen   uint64
}

// faults returns the current setting and a channel closed when it next
// changes.
func (p *Proxy) faults() (faults, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.f, p.changed
}

// update changes the setting under the lock and wakes every pipe waiting
// for a change.
func (p *Proxy) update(change func(f *faults)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	change(&p.f)
	close(p.changed)
	p.changed = make(chan struct{})
}

// String returns "upstream", "downstream" or "both".
func (d Direction) String() string {
	switch d {
	case Upstream:
		return "upstream"
	case Downstream:
		return "downstream"
	case Both:
		return "both"
	}
	return "Direction(" + strconv.Itoa(int(d)) + ")"
}

// each calls fn with the index of every direction in dir.
func each(dir Direction, fn func(i int)) {
	for i, d := range [2]Direction{Upstream, Downstream} {
		if dir&d != 0 {
			fn(i)
		}
	}
}

// Delay holds every chunk read in dir for d before forwarding it, on
// current and new connections. A chunk is what one read returns, so
// pipelined traffic that arrives while a chunk is held is forwarded, one
// delay later, as the next chunk. Zero or negative d clears the delay; a
// chunk already held still waits out its delay.
func (p *Proxy) Delay(dir Direction, d time.Duration) {
	p.update(func(f *faults) {
		each(dir, func(i int) { f.delay[i] = max(d, 0) })
	})
}

// Bandwidth caps each connection's traffic in dir at bytesPerSecond,
// forwarded in pieces of about 20 ms' worth, on current and new
// connections. Zero or negative clears the cap.
func (p *Proxy) Bandwidth(dir Direction, bytesPerSecond int) {
	p.update(func(f *faults) {
		each(dir, func(i int) { f.rate[i] = max(bytesPerSecond, 0) })
	})
}

// CutAfter closes each connection, current and new, once n more bytes
// went through it in dir: the first n bytes are forwarded, then both of
// its sockets are closed (a plain close, normally a FIN; the kernel sends
// an RST instead when unread bytes are pending on a socket). With n = 0 a
// connection is closed when its next byte in dir arrives, and that byte
// is not forwarded. Bytes count from the moment of the call for open
// connections, from their start for new ones. A negative n clears the
// fault.
func (p *Proxy) CutAfter(dir Direction, n int) {
	p.update(func(f *faults) {
		each(dir, func(i int) {
			f.cut[i] = cutFault{on: n >= 0, bytes: int64(n), gen: f.cut[i].gen + 1}
		})
	})
}

// Drop, when on, makes the proxy accept each new connection and close it
// at once, before any byte is read: a dial succeeds and the first read
// sees the connection closed. Open connections are left alone. "Open"
// means accepted by the proxy: a connection whose handshake the kernel
// completed but which the proxy had not yet accepted when Drop was turned
// on is dropped too. A caller that needs a connection to survive Drop
// makes one round trip on it first.
func (p *Proxy) Drop(on bool) {
	p.update(func(f *faults) { f.drop = on })
}

// Blackhole, when on, stops forwarding in both directions on current and
// new connections while every socket stays open, as a peer that is gone
// without a FIN or RST: writes succeed until the kernel buffers fill and
// reads never return. What the proxy reads meanwhile is held, not
// dropped, and forwarded when the fault is cleared. New connections are
// still accepted (the kernel completes the handshake) and dialled
// upstream.
func (p *Proxy) Blackhole(on bool) {
	p.update(func(f *faults) { f.blackhole = on })
}

// Strand makes every connection open now half-open for good: nothing
// more is forwarded on it in either direction and its sockets stay open,
// as when a NAT or load balancer on the way forgets a connection — while
// new connections, and the server, work. It returns how many it
// stranded. Heal does not revive them; Reset or Close closes them.
func (p *Proxy) Strand() int {
	p.mu.Lock()
	conns := p.snapshotConns()
	p.mu.Unlock()
	for _, c := range conns {
		c.stranded.Store(true)
	}
	return len(conns)
}

// Reset closes every open connection with a TCP RST on both sides (linger
// zero), and returns how many it closed. New connections are not
// affected.
func (p *Proxy) Reset() int {
	p.mu.Lock()
	conns := p.snapshotConns()
	p.mu.Unlock()
	n := 0
	for _, c := range conns {
		if c.close(true, &p.reset) {
			n++
		}
	}
	return n
}

// Heal clears every fault: delays, bandwidth caps, cuts, Drop and
// Blackhole. Data held by Blackhole is forwarded.
func (p *Proxy) Heal() {
	p.update(func(f *faults) {
		var healed faults
		for i := range f.cut {
			healed.cut[i].gen = f.cut[i].gen + 1
		}
		*f = healed
	})
}
