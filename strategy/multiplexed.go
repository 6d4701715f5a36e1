package strategy

import (
	"context"

	"github.com/redisx-go/kit/internal/mux"
)

// Multiplexed shares a few auto-pipelined connections per node among all
// goroutines, the model of Lettuce and rueidis.
//
// Callers encode their command into the connection's write buffer and
// wait; one writer goroutine per connection writes whatever accumulated
// whenever the queue drains (the busier, the bigger the batch), and one
// reader goroutine matches replies to callers in order. A caller whose
// context ends leaves at once; its reply is still read and dropped, so no
// reply ever reaches the wrong caller. A connection that fails fails its
// in-flight calls with ErrConnection and is redialled by the next call;
// the dial is shared by the callers that need it meanwhile, each waiting
// within its own context. Blocking commands (BLPOP, XREAD BLOCK, WAIT…)
// run on a small pool of dedicated connections instead, and commands that
// change a connection's state are refused.
//
// Replies on a shared connection come in order, so Config.ReadTimeout's
// rule is applied to the call whose reply comes next: the connection is
// failed when that reply is overdue for that call — after its context's
// deadline, and never sooner than ReadTimeout after it was sent — and the
// calls queued behind it fail with it. Close fails the calls in flight
// with ErrClosed.
//
// With Config.MaxConnAge, a shared connection that old is replaced
// without failing a call: a new one is dialled in the background while
// the old one serves on; then new calls go to the new one, and the old
// one is closed once its calls in flight have their replies (or the
// ReadTimeout rule fails them, as it would have). A replacement that
// cannot be dialled leaves the old connection in use, and is tried again
// a second later (or after MaxConnAge, when shorter).
//
// The zero value is one connection per node.
type Multiplexed struct {
	// Conns is the number of shared connections per node. Zero: 1. A key
	// always maps to the same connection, so the reads and writes of one
	// key stay in order. (SETs of values from 16 KiB travel on 4
	// connections of their own, and stay in order with the key's other
	// commands too, even after a call whose context ended before its
	// reply: the server may still apply that one, and whatever the caller
	// sends next on that key — by any API, multi-key calls and Do
	// included — goes behind it, on the same connection. Not covered: a
	// connection failed or replaced for its age while such a call was on
	// its way.) More than 2–4 rarely helps: batching already amortises
	// the system calls.
	Conns int
	// MaxPending bounds the commands queued or awaiting a reply on one
	// connection; further callers wait, within their context, for room.
	// Zero: 16384.
	MaxPending int
	// Blocking is the number of dedicated connections per node for
	// blocking commands sent through Do, opened on first use. Zero: 8.
	Blocking int
}

// Open implements Strategy. It dials every shared connection of the first
// seed that answers before it returns; on a cluster, the other nodes'
// connections are dialled on first use.
func (m Multiplexed) Open(ctx context.Context, cfg Config) (Backend, error) {
	if _, err := mux.Options(m).WithDefaults(); err != nil {
		return nil, err
	}
	return open(ctx, cfg, mux.Options(m))
}

// URLName implements URLStrategy: strategy=multiplexed.
func (Multiplexed) URLName() string { return "multiplexed" }

// URLKeys implements URLStrategy.
func (Multiplexed) URLKeys() []string { return []string{"conns", "max_pending", "blocking"} }

// FromURL implements URLStrategy: conns, max_pending and blocking are
// Conns, MaxPending and Blocking.
func (Multiplexed) FromURL(p *URLParams) (Strategy, error) {
	var m Multiplexed
	for _, f := range []struct {
		name string
		dst  *int
	}{{"conns", &m.Conns}, {"max_pending", &m.MaxPending}, {"blocking", &m.Blocking}} {
		if err := p.Count(f.name, f.dst); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// ToURL implements URLStrategy.
func (m Multiplexed) ToURL(p *URLParams) error {
	for _, f := range []struct {
		name string
		n    int
	}{{"conns", m.Conns}, {"max_pending", m.MaxPending}, {"blocking", m.Blocking}} {
		if err := p.AddCount(f.name, f.n); err != nil {
			return err
		}
	}
	return nil
}
