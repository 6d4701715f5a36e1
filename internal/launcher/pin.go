package launcher

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// PinLast moves every process of servers, all its threads, to the last
// CPU with taskset -a -p, so that a client measured beside them does not
// compete with them for the other CPUs (the client is not pinned). It
// reports whether every one was pinned, and a note saying where, or why
// not: one CPU, taskset missing (util-linux), a server not started here,
// or taskset's error.
func PinLast(ctx context.Context, servers ...*Server) (pinned bool, note string) {
	cpus := runtime.NumCPU()
	taskset, err := exec.LookPath("taskset")
	switch {
	case len(servers) == 0:
		return false, "no server to pin"
	case cpus < 2:
		return false, "1 CPU"
	case err != nil:
		return false, "taskset not found (util-linux)"
	}
	cpu := strconv.Itoa(cpus - 1)
	var errs []error
	for _, s := range servers {
		if s.external {
			errs = append(errs, fmt.Errorf("%s was not started by the launcher", s.Addr()))
			continue
		}
		info, err := s.CLI(ctx, "INFO", "server")
		pid := processID(info)
		if err != nil || pid == "" {
			errs = append(errs, fmt.Errorf("%s: no process_id in INFO server (%v)", s.Addr(), err))
			continue
		}
		if out, err := exec.CommandContext(ctx, taskset, "-a", "-p", "-c", cpu, pid).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("taskset %s: %v: %s", pid, err, strings.TrimSpace(string(out))))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return false, err.Error()
	}
	what := "redis-server process"
	if len(servers) > 1 {
		what += "es"
	}
	return true, fmt.Sprintf("%d %s on CPU %s of %d (taskset -a -p -c %s); the client is not pinned", len(servers), what, cpu, cpus, cpu)
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
