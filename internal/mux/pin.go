package mux

import "sync/atomic"

// pins is what the ordering rule of route.go needs to know: for a key,
// the connection (slot) on which calls on it whose callers left are still
// unanswered. Keys are counted by stripe (the key's FNV-1a hash modulo
// pinStripes): two keys of one stripe share its pins, which at worst
// makes a command wait, or take a connection it did not have to, while
// the other key's reply is awaited; it never lets one through early.
//
// A stripe's word holds the slot pinned (plus one; 0 for none, pinMixed
// when calls on two slots or more pin it) in its top 16 bits and the
// number of calls pinning it below. A call pins its stripes before it is
// abandoned and is unpinned once its reply is read (or its connection
// failed), by whoever recycles it.
type pins struct {
	n     atomic.Int64                              // calls pinning stripes now, node-wide
	table atomic.Pointer[[pinStripes]atomic.Uint64] // made on first use
}

const (
	pinStripes = 1 << 12
	pinShift   = 48
	pinCount   = 1<<pinShift - 1
	pinMixed   = 1<<16 - 1
)

func stripeOf(key string) uint16 { return uint16(fnv(key) % pinStripes) }

// stripes returns the table, made on first use.
func (p *pins) stripes() *[pinStripes]atomic.Uint64 {
	if t := p.table.Load(); t != nil {
		return t
	}
	p.table.CompareAndSwap(nil, new([pinStripes]atomic.Uint64))
	return p.table.Load()
}

// pin pins stripes to slot, for one call.
func (p *pins) pin(slot int, stripes []uint16) {
	if len(stripes) == 0 {
		return
	}
	p.n.Add(1)
	t := p.stripes()
	for _, s := range stripes {
		for {
			old := t[s].Load()
			owner := old >> pinShift
			switch {
			case old&pinCount == 0:
				owner = uint64(slot) + 1
			case owner != uint64(slot)+1:
				owner = pinMixed
			}
			if t[s].CompareAndSwap(old, owner<<pinShift|(old&pinCount+1)) {
				break
			}
		}
	}
}

// unpin undoes pin, for one call.
func (p *pins) unpin(stripes []uint16) {
	if len(stripes) == 0 {
		return
	}
	t := p.table.Load()
	for _, s := range stripes {
		for {
			old := t[s].Load()
			next := old - 1
			if next&pinCount == 0 {
				next = 0
			}
			if t[s].CompareAndSwap(old, next) {
				break
			}
		}
	}
	p.n.Add(-1)
}

// any reports whether some call pins stripes: the fast path's check.
func (p *pins) any() bool { return p.n.Load() > 0 }

// of returns the slot the stripe of key is pinned to: -1 when none, and
// mixed when calls on several slots pin it.
func (p *pins) of(key string) (slot int, mixed bool) {
	t := p.table.Load()
	if t == nil {
		return -1, false
	}
	owner := t[stripeOf(key)].Load() >> pinShift
	switch owner {
	case 0:
		return -1, false
	case pinMixed:
		return -1, true
	}
	return int(owner - 1), false
}
