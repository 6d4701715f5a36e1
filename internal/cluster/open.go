package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/redisx-go/kit/backend"
	"github.com/redisx-go/kit/internal/topology"
	"github.com/redisx-go/kit/internal/transport"
)

// Open connects to the first seed that answers and finds out
// whether it is a standalone server (the node is returned as is) or a
// cluster member (a cluster backend over one node per master is).
// Several seeds name a cluster: a standalone server among them is
// refused. A seed that refuses the credentials or a setting (the DB) ends
// Open with its error alone.
func Open(ctx context.Context, cfg backend.Config, t transport.Transport) (transport.Backend, error) {
	if len(cfg.Addrs) == 0 {
		return nil, fmt.Errorf("%w: no address", backend.ErrInvalidArgument)
	}
	// The seed is probed without ReadFrom, whose READONLY a standalone
	// server refuses.
	probe := cfg
	probe.ReadFrom = backend.ReadPrimary
	var errs []error
	for _, addr := range cfg.Addrs {
		n, err := t.OpenNode(ctx, probe, addr)
		if refused(err) {
			// The credentials or a setting (the DB): every seed of a
			// cluster would refuse them alike.
			return nil, err
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		shards, err := topology.Discover(ctx, n.Do, addr, cfg.TLS != nil)
		switch {
		case errors.Is(err, topology.ErrNotCluster) && len(cfg.Addrs) > 1:
			// Every call would go to this server, the others unused.
			n.Close()
			return nil, fmt.Errorf("%w: %s is a standalone server (cluster support disabled), but %d addresses were given: "+
				"several addresses are the seeds of one Redis Cluster; give a standalone server's address alone",
				backend.ErrInvalidArgument, addr, len(cfg.Addrs))
		case errors.Is(err, topology.ErrNotCluster) && cfg.ReadFrom != backend.ReadPrimary:
			n.Close()
			return nil, fmt.Errorf("%w: ReadFrom other than ReadPrimary on a standalone server: replicas are found through Sentinel or a Redis Cluster", backend.ErrInvalidArgument)
		case errors.Is(err, topology.ErrNotCluster):
			return n, nil
		case err != nil:
			n.Close()
			errs = append(errs, err)
			continue
		}
		if cfg.DB != 0 {
			n.Close()
			return nil, fmt.Errorf("%w: DB %d on a cluster, which has database 0 only", backend.ErrInvalidArgument, cfg.DB)
		}
		if cfg.ReadFrom != backend.ReadPrimary {
			// Its nodes' connections are READONLY, so that those to
			// replicas serve reads: the seed's too.
			n.Close()
			if n, err = t.OpenNode(ctx, cfg, addr); refused(err) {
				return nil, err
			} else if err != nil {
				errs = append(errs, err)
				continue
			}
		}
		return newRouter(cfg, t, n, shards)
	}
	if len(errs) == 1 {
		return nil, errs[0]
	}
	return nil, errors.Join(errs...)
}

// refused reports whether err is a server's refusal of the
// configuration (ErrInvalidArgument) or of the credentials (ErrAuth),
// which no other node nor another attempt would accept.
func refused(err error) bool {
	return errors.Is(err, backend.ErrInvalidArgument) || errors.Is(err, backend.ErrAuth)
}
