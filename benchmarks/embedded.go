package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	"github.com/redisx-go/kit/internal/launcher"
)

// Embedded is a standalone redis-server and a 3-master cluster started
// by the harness on free loopback ports, for a run without servers of
// the user's. Stop stops them.
type Embedded struct {
	// Servers are the embedded deployments, ready for Run.
	Servers Servers
	// Pinned is set when every server runs on a CPU of its own (the
	// last), PinNote says which or why not: the copy on Machine.
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
	var pids []string
	if standalone {
		s, err := launcher.Start(ctx, launcher.Options{})
		if err != nil {
			return fail(err)
		}
		e.standalone = s
		e.Servers.Standalone = s.Addr()
		pid, err := s.CLI(ctx, "INFO", "server")
		if err != nil {
			return fail(err)
		}
		pids = append(pids, processID(pid))
	}
	if cluster {
		c, err := launcher.StartCluster(ctx, launcher.ClusterOptions{Masters: 3})
		if err != nil {
			return fail(err)
		}
		e.cluster = c
		e.Servers.Cluster = c.Addrs()
		for _, n := range c.Nodes() {
			info, err := n.CLI(ctx, "INFO", "server")
			if err != nil {
				return fail(err)
			}
			pids = append(pids, processID(info))
		}
	}
	e.Pinned, e.PinNote = pinServers(ctx, pids, pin)
	return e, nil
}

// processID reads process_id from an INFO server reply.
func processID(info string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			return v
		}
	}
	return ""
}

// pinServers moves the processes pids to the last CPU with taskset -a -p
// (the launcher starts redis-server itself, so the servers are pinned
// after they start, all threads included).
func pinServers(ctx context.Context, pids []string, pin bool) (bool, string) {
	cpus := runtime.NumCPU()
	taskset, err := exec.LookPath("taskset")
	switch {
	case len(pids) == 0:
		return false, ""
	case !pin:
		return false, "not pinned (pinning switched off)"
	case cpus < 2:
		return false, "not pinned: 1 CPU"
	case err != nil:
		return false, "not pinned: taskset not found (util-linux)"
	}
	cpu := strconv.Itoa(cpus - 1)
	var errs []error
	for _, pid := range pids {
		if pid == "" {
			errs = append(errs, errors.New("no process_id in INFO server"))
			continue
		}
		if out, err := exec.CommandContext(ctx, taskset, "-a", "-p", "-c", cpu, pid).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("taskset %s: %v: %s", pid, err, strings.TrimSpace(string(out))))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return false, "not pinned: " + err.Error()
	}
	return true, fmt.Sprintf("%d redis-server processes pinned to CPU %s of %d (taskset -a -p -c %s); the client is not pinned", len(pids), cpu, cpus, cpu)
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
