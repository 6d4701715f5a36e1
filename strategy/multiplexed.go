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
// The zero value adapts to the load: while fewer calls are in flight
// than it has lanes (shared connections), a caller that finds a lane with
// nothing in flight writes and reads its own reply on it, woken by the
// network poller as a pooled connection's caller is; otherwise a caller
// joins a pipeline — the busiest one still shallower than its depth cap
// (64 KiB of requests or 32 KiB of replies in flight, at the lane's
// bytes per call so far), an idle lane only when every busy one is that
// deep — whose writer, from 4 callers inside
// a call per lane on, gathers batches, so batching grows with load (the
// brief dips between a batch of replies and their callers' next commands
// do not count). A lane opens when a call finds every open one busy: it
// is dialled in the background, one at a time, while that call joins a
// pipeline, up to Lanes per node; a lane other than the first is closed
// after 30 s without a command. So one goroutine uses one connection per
// node. Conns instead fixes the number of connections and routes a key
// to its own.
//
// A SET of a value from 16 KiB does not take a lane: it takes one of up
// to 4 connections per node for big values, as a pool would lend one —
// the first with nothing in flight, else one more, dialled by that call
// (not again for a second after such a dial failed), else the least
// loaded — so that big values are read by the server side by side and
// do not delay the small commands behind them. These connections open as
// the load needs them and stay open. On a connection with at most 2
// commands in flight, with Conns as with Lanes, a caller writes its
// request itself — a bigger one than a 16 KiB chunk only as far as the
// socket takes it without waiting, the rest left to the connection's
// writer goroutine, which a context cannot keep waiting — and a caller whose context can end reads its reply itself
// once it is whole in the read buffer (64 KiB on a lane); should the
// context end first, the caller leaves, and the connection's own
// goroutine reads the reply and drops it.
//
// So, whatever the load, a node has at most Lanes (or Conns) shared
// connections plus 4 for big values open; besides them only the Blocking
// dedicated connections, once a blocking command was sent, and, with
// MaxConnAge, the replacement of a connection being dialled while the
// old one serves on. Stats says how many are open of each (Lanes,
// BigValueConns; Conns counts all), how deep the deepest pipeline is now
// (PipelineDepth) and how many commands await a reply (Pending).
//
// Whichever lane a key takes, its commands stay in order after a call
// whose context ended before its reply: the server may still apply that
// one, and whatever the caller sends next on that key — by any API,
// multi-key calls, Do and DoMulti included — goes behind it, on the same
// connection. (SETs of values from 16 KiB travel on up to 4 connections
// of their own, the first free one, under the same rule. Not covered: a
// connection failed or replaced for its age while such a call was on its
// way, and a command whose keys cannot be told, such as a script that
// declares none.)
type Multiplexed struct {
	// Conns, when set, is the fixed number of shared connections per
	// node, all dialled by Open, and a key always takes the same one, so
	// the reads and writes of one key stay in order. More than 2–4 rarely
	// helps: batching already amortises the system calls. Zero: adaptive
	// lanes (see Lanes).
	Conns int
	// Lanes is the most shared connections per node when Conns is zero.
	// Zero: GOMAXPROCS, at least 4. It cannot be set with Conns.
	Lanes int
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
	if err := m.Validate(cfg); err != nil {
		return nil, err
	}
	return open(ctx, cfg, mux.Options(m))
}

// Validate implements Validator: Conns and Lanes in 0..1024, not both
// set; MaxPending and Blocking not negative.
func (m Multiplexed) Validate(Config) error {
	_, err := mux.Options(m).WithDefaults()
	return err
}

// URLName implements URLStrategy: strategy=multiplexed.
func (Multiplexed) URLName() string { return "multiplexed" }

// URLKeys implements URLStrategy.
func (Multiplexed) URLKeys() []string { return []string{"conns", "lanes", "max_pending", "blocking"} }

// FromURL implements URLStrategy: conns, lanes, max_pending and blocking
// are Conns, Lanes, MaxPending and Blocking.
func (Multiplexed) FromURL(p *URLParams) (Strategy, error) {
	var m Multiplexed
	for _, f := range []struct {
		name string
		dst  *int
	}{{"conns", &m.Conns}, {"lanes", &m.Lanes}, {"max_pending", &m.MaxPending}, {"blocking", &m.Blocking}} {
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
	}{{"conns", m.Conns}, {"lanes", m.Lanes}, {"max_pending", m.MaxPending}, {"blocking", m.Blocking}} {
		if err := p.AddCount(f.name, f.n); err != nil {
			return err
		}
	}
	return nil
}
