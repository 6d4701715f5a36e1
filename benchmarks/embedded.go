package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"runtime"

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
// compete with the servers for the others; KeepClientOff keeps the
// client off the servers' CPU as well.
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

// KeepClientOff moves this process — the client the harness measures —
// off the CPU the servers were pinned to, onto the others, and lowers
// GOMAXPROCS to their number, so that the client and the servers never
// share a CPU. A client free to run on the servers' CPU keeps meeting
// them there: on 2 CPUs, on loopback, one goroutine's GETs ran at a third
// of the rate (14k/s against 42k/s) and two identical targets' samples
// spread 2–3 times wider. It does nothing when the servers are not
// pinned, nor for an open-loop plan (Plan.Rate or Plan.SLO) that would be
// left a single CPU: the pacer needs a P of its own. It reports whether
// the client was moved, and adds to PinNote where it runs or why not.
func (e *Embedded) KeepClientOff(p *Plan) bool {
	if !e.Pinned {
		return false
	}
	cpu := launcher.LastCPU()
	if (p.Rate > 0 || p.SLO != nil) && cpu < 2 {
		e.PinNote += "; the client is not moved off it: open loop needs 2 CPUs of its own"
		return false
	}
	n, err := keepOffCPU(cpu)
	if err != nil {
		e.PinNote += "; the client is not moved off it: " + err.Error()
		return false
	}
	cpus := "CPU"
	if n > 1 {
		cpus += "s"
	}
	e.PinNote += fmt.Sprintf("; the client on the %d other %s (GOMAXPROCS %d)", n, cpus, runtime.GOMAXPROCS(0))
	return true
}
