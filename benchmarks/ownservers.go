package benchmarks

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Targets that measure servers of their own (Target.Servers: a -target
// URL with a host): each gets a deployment of its own, treated as the
// run's are — checked for foreign keys, seeded by each workload's Setup,
// its connections counted and its keys deleted there — so that two
// servers can be compared side by side in one run.

// openOwnServers opens the deployment of every target of the plan that
// has servers of its own; targets on the same servers share one, and
// servers that are the run's own are the run's deployment.
func (r *runner) openOwnServers(ctx context.Context) error {
	for _, t := range r.plan.Targets {
		if t.Servers == nil {
			continue
		}
		s := *t.Servers
		s.Force = r.servers.Force
		if err := resolveSentinel(ctx, &s); err != nil {
			return fmt.Errorf("benchmarks: target %s: %w", t.Name, err)
		}
		addrs, isCluster := s.Cluster, s.Cluster != nil
		if !isCluster {
			if s.Standalone == "" {
				return fmt.Errorf("benchmarks: target %s: its Servers name no address", t.Name)
			}
			addrs = []string{s.Standalone}
			var err error
			if isCluster, err = isClusterNode(s.Standalone, s); err != nil {
				return fmt.Errorf("benchmarks: target %s: %w", t.Name, err)
			}
		}
		if d := r.sameServers(addrs, isCluster); d != nil {
			r.own[t.Name] = d
			continue
		}
		d, err := openDeployment(ctx, addrs, isCluster, s)
		if err != nil {
			return fmt.Errorf("benchmarks: target %s: %w", t.Name, err)
		}
		r.own[t.Name] = d
		if !s.Force {
			if err := d.checkForeign(); err != nil {
				return err
			}
		}
		fmt.Fprintf(r.out, "target %s measures its own servers: %s\n", t.Name, strings.Join(addrs, ","))
	}
	return nil
}

// sameServers returns the deployment already open on addrs, nil if none.
func (r *runner) sameServers(addrs []string, isCluster bool) *deployment {
	for _, d := range r.allDeployments() {
		if d.cluster == isCluster && slices.Equal(d.addrs, addrs) {
			return d
		}
	}
	return nil
}

// isClusterNode reports whether the server at addr runs in cluster mode.
func isClusterNode(addr string, s Servers) (bool, error) {
	n, err := dialNode(addr, s)
	if err != nil {
		return false, err
	}
	defer n.close()
	info, err := n.info("cluster")
	if err != nil {
		return false, err
	}
	return info["cluster_enabled"] == "1", nil
}

// allDeployments returns every deployment open, the run's and the
// targets' own, each once.
func (r *runner) allDeployments() []*deployment {
	var out []*deployment
	for _, cluster := range []bool{false, true} {
		if d := r.deps[cluster]; d != nil {
			out = append(out, d)
		}
	}
	for _, t := range r.plan.Targets {
		if d := r.own[t.Name]; d != nil && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// deploymentOf is the deployment t measures: its own, or d (the run's
// deployment for the workload at hand).
func (r *runner) deploymentOf(t Target, d *deployment) *deployment {
	if own := r.own[t.Name]; own != nil {
		return own
	}
	return d
}

// targetsOf returns the targets that run w: those of the plan that apply
// to it, on the run's servers when the run has those w needs, or on
// their own when those are of w's kind (cluster or standalone).
func (r *runner) targetsOf(w Workload) []Target {
	var ts []Target
	for _, t := range r.plan.targetsOf(w) {
		if t.Servers != nil {
			if d := r.own[t.Name]; d != nil && d.cluster == w.Cluster {
				ts = append(ts, t)
			}
			continue
		}
		if w.Cluster && r.servers.Cluster != nil || !w.Cluster && r.servers.Standalone != "" {
			ts = append(ts, t)
		}
	}
	return ts
}

// setUp runs w's Setup on every deployment that the targets ts measure
// (once each), and records its error on the targets of a deployment it
// failed on.
func (r *runner) setUp(ctx context.Context, w Workload, ts []opened) {
	if w.Setup == nil {
		return
	}
	done := map[*deployment]error{}
	for i := range ts {
		d := ts[i].d
		if d == nil {
			continue
		}
		err, ok := done[d]
		if !ok {
			sctx, cancel := context.WithTimeout(ctx, time.Minute)
			err = w.Setup(sctx, d.seeder)
			cancel()
			if err != nil {
				err = fmt.Errorf("setup of %s on %s: %w", w.Name, strings.Join(d.addrs, ","), err)
				fmt.Fprintln(r.out, err)
			}
			done[d] = err
		}
		ts[i].setup = err
	}
}

// ownAddrs records, by target name, the servers of the targets that
// measured their own.
func (r *runner) ownAddrs() map[string][]string {
	var out map[string][]string
	for _, t := range r.plan.Targets {
		if d := r.own[t.Name]; d != nil {
			if out == nil {
				out = map[string][]string{}
			}
			out[t.Name] = d.addrs
		}
	}
	return out
}

// ownKind reports whether a target measures servers of its own of that
// kind (a cluster or not).
func (r *runner) ownKind(cluster bool) bool {
	for _, d := range r.own {
		if d.cluster == cluster {
			return true
		}
	}
	return false
}
