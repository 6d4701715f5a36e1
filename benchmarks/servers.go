package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/redisx-go/kit/internal/topology"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// ErrForeignKeys is returned by Run when a server holds keys outside
// KeyPrefix and Servers.Force is not set.
var ErrForeignKeys = errors.New("benchmarks: the database holds keys outside the " + KeyPrefix + " prefix")

// monitorName is the client name of the harness's own connections.
const monitorName = "redisx-bench-monitor"

// node is the harness's own connection to one server: INFO, CLIENT LIST,
// DBSIZE, SCAN and UNLINK. Safe for concurrent use.
type node struct {
	addr string
	mu   sync.Mutex
	c    redigo.Conn
}

func dialNode(addr string, s Servers) (*node, error) {
	opts := []redigo.DialOption{
		redigo.DialConnectTimeout(5 * time.Second),
		redigo.DialReadTimeout(10 * time.Second),
		redigo.DialWriteTimeout(10 * time.Second),
		redigo.DialDatabase(s.DB),
		redigo.DialClientName(monitorName),
	}
	if s.Password != "" {
		opts = append(opts, redigo.DialUsername(s.Username), redigo.DialPassword(s.Password))
	}
	if s.TLS != nil {
		cfg := s.TLS.Clone()
		if cfg.ServerName == "" {
			cfg.ServerName, _, _ = net.SplitHostPort(addr)
		}
		opts = append(opts, redigo.DialUseTLS(true), redigo.DialTLSConfig(cfg))
	}
	c, err := redigo.Dial("tcp", addr, opts...)
	if err != nil {
		return nil, fmt.Errorf("benchmarks: connect to %s: %w", addr, err)
	}
	return &node{addr: addr, c: c}, nil
}

func (n *node) do(cmd string, args ...any) (any, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.c.Do(cmd, args...)
}

func (n *node) close() { _ = n.c.Close() }

// info returns the fields of an INFO section.
func (n *node) info(section string) (map[string]string, error) {
	text, err := redigo.String(n.do("INFO", section))
	if err != nil {
		return nil, fmt.Errorf("benchmarks: INFO %s on %s: %w", section, n.addr, err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			m[k] = v
		}
	}
	return m, nil
}

// clients counts the server's connections whose name starts with prefix.
func (n *node) clients(prefix string) (int, error) {
	list, err := redigo.String(n.do("CLIENT", "LIST"))
	if err != nil {
		return 0, fmt.Errorf("benchmarks: CLIENT LIST on %s: %w", n.addr, err)
	}
	return countClients(list, prefix), nil
}

// countClients counts the lines of a CLIENT LIST reply whose name field
// starts with prefix.
func countClients(list, prefix string) int {
	count := 0
	for _, line := range strings.Split(list, "\n") {
		for _, f := range strings.Fields(line) {
			if name, ok := strings.CutPrefix(f, "name="); ok && strings.HasPrefix(name, prefix) {
				count++
			}
		}
	}
	return count
}

// scanPrefix calls fn with every batch of keys under KeyPrefix.
func (n *node) scanPrefix(fn func(keys []string) error) error {
	cursor := "0"
	for {
		reply, err := redigo.Values(n.do("SCAN", cursor, "MATCH", KeyPrefix+"*", "COUNT", 1000))
		if err != nil {
			return fmt.Errorf("benchmarks: SCAN on %s: %w", n.addr, err)
		}
		if len(reply) != 2 {
			return fmt.Errorf("benchmarks: SCAN on %s: unexpected reply", n.addr)
		}
		keys, err := redigo.Strings(reply[1], nil)
		if err != nil {
			return fmt.Errorf("benchmarks: SCAN on %s: %w", n.addr, err)
		}
		if len(keys) > 0 {
			if err := fn(keys); err != nil {
				return err
			}
		}
		if cursor, err = redigo.String(reply[0], nil); err != nil || cursor == "0" {
			return err
		}
	}
}

// maxScanned is the largest DBSIZE foreignKeys scans: the harness writes
// about 16,000 keys, so a bigger database surely holds others.
const maxScanned = 100_000

// foreignKeys returns how many keys of the database lie outside KeyPrefix
// (at least; exactly up to maxScanned keys).
func (n *node) foreignKeys() (int64, error) {
	size, err := redigo.Int64(n.do("DBSIZE"))
	if err != nil {
		return 0, fmt.Errorf("benchmarks: DBSIZE on %s: %w", n.addr, err)
	}
	if size == 0 {
		return 0, nil
	}
	if size > maxScanned {
		return size - maxScanned, nil
	}
	var own int64
	err = n.scanPrefix(func(keys []string) error { own += int64(len(keys)); return nil })
	return max(size-own, 0), err
}

// deletePrefix deletes every key under KeyPrefix, one UNLINK per key in a
// pipeline (keys of a cluster node lie in different slots).
func (n *node) deletePrefix() (int64, error) {
	var deleted int64
	err := n.scanPrefix(func(keys []string) error {
		n.mu.Lock()
		defer n.mu.Unlock()
		for _, k := range keys {
			if err := n.c.Send("UNLINK", k); err != nil {
				return err
			}
		}
		if err := n.c.Flush(); err != nil {
			return err
		}
		for range keys {
			d, err := redigo.Int64(n.c.Receive())
			if err != nil {
				return fmt.Errorf("benchmarks: UNLINK on %s: %w", n.addr, err)
			}
			deleted += d
		}
		return nil
	})
	return deleted, err
}

// deployment is a standalone server or a cluster as the harness sees it:
// its servers (the cluster's masters) and a client to seed data with.
type deployment struct {
	cluster bool
	addrs   []string // the seeds targets connect to
	nodes   []*node  // the standalone server, or every master
	seeder  *redisx.Client
	version string  // redis_version
	pid     []int   // process_id of each node
	servers Servers // how to reach it: credentials, TLS, database
}

// openDeployment connects to a standalone server (cluster false, one
// address) or to a cluster's masters, found through the first seed.
func openDeployment(ctx context.Context, addrs []string, isCluster bool, s Servers) (*deployment, error) {
	d := &deployment{cluster: isCluster, addrs: addrs, servers: s}
	fail := func(err error) (*deployment, error) { d.close(); return nil, err }
	masters := addrs[:1]
	if isCluster {
		var err error
		if masters, err = clusterMasters(addrs[0], s); err != nil {
			return fail(err)
		}
	}
	for _, a := range masters {
		n, err := dialNode(a, s)
		if err != nil {
			return fail(err)
		}
		d.nodes = append(d.nodes, n)
		info, err := n.info("server")
		if err != nil {
			return fail(err)
		}
		d.version = info["redis_version"]
		var pid int
		fmt.Sscan(info["process_id"], &pid)
		d.pid = append(d.pid, pid)
	}
	seeder, err := redisx.New(ctx, Env{Addrs: addrs, Username: s.Username, Password: s.Password, TLS: s.TLS, DB: s.DB, ClientName: monitorName}.Options(strategy.Multiplexed{}))
	if err != nil {
		return fail(fmt.Errorf("benchmarks: connect to %s: %w", strings.Join(addrs, ","), err))
	}
	d.seeder = seeder
	return d, nil
}

// clusterMasters returns the addresses of the masters serving slots, as
// the seed's slot map names them (topology.Discover: CLUSTER SHARDS, or
// CLUSTER SLOTS before Redis 7; TLS ports over TLS).
func clusterMasters(seed string, s Servers) ([]string, error) {
	n, err := dialNode(seed, s)
	if err != nil {
		return nil, err
	}
	defer n.close()
	do := func(_ context.Context, args ...any) (any, error) { return n.do(args[0].(string), args[1:]...) }
	shards, err := topology.Discover(context.Background(), do, seed, s.TLS != nil)
	if err != nil {
		return nil, fmt.Errorf("benchmarks: cluster masters from %s: %w", seed, err)
	}
	masters := topology.NewMap(shards).Masters()
	if len(masters) == 0 {
		return nil, fmt.Errorf("benchmarks: %s: no master serves slots", seed)
	}
	return masters, nil
}

// clients counts the connections named with prefix on every node.
func (d *deployment) clients(prefix string) (int, error) {
	total := 0
	for _, n := range d.nodes {
		c, err := n.clients(prefix)
		if err != nil {
			return 0, err
		}
		total += c
	}
	return total, nil
}

// checkForeign fails with ErrForeignKeys when a node holds keys outside
// KeyPrefix.
func (d *deployment) checkForeign() error {
	for _, n := range d.nodes {
		k, err := n.foreignKeys()
		if err != nil {
			return err
		}
		if k > 0 {
			return fmt.Errorf("%w: %s has %d other keys; run with -force (Servers.Force) to benchmark it anyway", ErrForeignKeys, n.addr, k)
		}
	}
	return nil
}

// cleanup deletes the harness's keys on every node.
func (d *deployment) cleanup() (int64, error) {
	var total int64
	var errs []error
	for _, n := range d.nodes {
		k, err := n.deletePrefix()
		total += k
		errs = append(errs, err)
	}
	return total, errors.Join(errs...)
}

func (d *deployment) close() {
	if d.seeder != nil {
		_ = d.seeder.Close()
	}
	for _, n := range d.nodes {
		n.close()
	}
}
