package benchmarks

import (
	"context"
	"errors"

	"github.com/redisx-go/kit/internal/launcher"
)

// Embedded is a standalone redis-server and a 3-master cluster started
// by the harness on free loopback ports, for a run without servers of
// the user's. Stop stops them.
type Embedded struct {
	// Servers are the embedded deployments, ready for Run.
	Servers Servers
	// Pinned is set when every server runs on a CPU of its own (the
	// last), PinNote says which or why not: the copy on verdict.Machine.
	Pinned  bool
	PinNote string

	standalone *launcher.Server
	cluster    *launcher.Cluster
}

// EmbeddedAvailable reports why the embedded servers cannot start
// (redis-server or redis-cli missing, with the command that installs
// them), or nil.
func EmbeddedAvailable() error { return launcher.Available() }

// StartEmbedded starts the servers asked for. With pin, on a machine of
// at least 2 CPUs where taskset exists, every server process (all its
// threads) is moved to the last CPU, so the client measured does not
// compete with the servers for the others — it is not pinned itself.
func StartEmbedded(ctx context.Context, standalone, cluster, pin bool) (*Embedded, error) {
	if err := launcher.Available(); err != nil {
		return nil, err
	}
	e := &Embedded{}
	fail := func(err error) (*Embedded, error) { _ = e.Stop(); return nil, err }
	var servers []*launcher.Server
	if standalone {
		s, err := launcher.Start(ctx, launcher.Options{})
		if err != nil {
			return fail(err)
		}
		e.standalone = s
		e.Servers.Standalone = s.Addr()
		servers = append(servers, s)
	}
	if cluster {
		c, err := launcher.StartCluster(ctx, launcher.ClusterOptions{Masters: 3})
		if err != nil {
			return fail(err)
		}
		e.cluster = c
		e.Servers.Cluster = c.Addrs()
		servers = append(servers, c.Nodes()...)
	}
	switch {
	case len(servers) == 0:
	case pin:
		e.Pinned, e.PinNote = launcher.PinLast(ctx, servers...)
	default:
		e.PinNote = "pinning switched off"
	}
	return e, nil
}

// Stop stops every server started; it is idempotent.
func (e *Embedded) Stop() error {
	var errs []error
	if e.standalone != nil {
		errs = append(errs, e.standalone.Stop())
	}
	if e.cluster != nil {
		errs = append(errs, e.cluster.Stop())
	}
	return errors.Join(errs...)
}
