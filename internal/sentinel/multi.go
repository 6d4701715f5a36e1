package sentinel

import (
	"context"
	"net"

	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/failure"
)

// DoMulti implements transport.Backend: on the current master. A command a
// replica refused (READONLY) is a switch signal, as for Do: its result
// says so, as an Unsent ErrConnection.
func (b *Backend) DoMulti(ctx context.Context, cmds ...[]any) []backend.Result {
	m, err := b.acquire()
	if err != nil {
		return failure.FailAll(len(cmds), err)
	}
	res := m.n.DoMulti(ctx, cmds...)
	m.Release()
	for i := range res {
		res[i].Err = b.check(m, res[i].Err)
	}
	return res
}

// Dedicated implements transport.Backend: a connection of the current
// master's node, which a switch closes with the node (its calls then
// fail with ErrConnection or ErrClosed, as a lost connection's do).
func (b *Backend) Dedicated(ctx context.Context, keys []string) (backend.Dedicated, error) {
	m, err := b.acquire()
	if err != nil {
		return nil, err
	}
	d, err := m.n.Dedicated(ctx, keys)
	m.Release()
	return d, b.check(m, err)
}

// DialSession implements transport.Backend: a connection of its own to the
// current master, so that a subscription that reconnects follows a
// switch.
func (b *Backend) DialSession(ctx context.Context, slot int, hello func(net.Conn) error) (net.Conn, error) {
	m, err := b.acquire()
	if err != nil {
		return nil, err
	}
	nc, err := m.n.DialSession(ctx, slot, hello)
	m.Release()
	return nc, b.check(m, err)
}
