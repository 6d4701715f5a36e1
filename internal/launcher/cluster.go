package launcher

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

const (
	// envCluster names the seed nodes ("host:port,host:port...") of an
	// external cluster that ClusterForTest returns instead of starting one.
	envCluster = "REDISX_TEST_CLUSTER"

	// clusterSlots is the number of hash slots of a Redis Cluster.
	clusterSlots = 16384
	// defaultMasters is ClusterOptions.Masters when zero; it is also the
	// least redis-cli --cluster create accepts, kept as StartCluster's least.
	defaultMasters = 3
	// defaultNodeTimeout is ClusterOptions.NodeTimeout when zero.
	defaultNodeTimeout = 2 * time.Second
	// clusterTimeout bounds StartCluster, WaitOK and MoveSlot when the
	// caller's context allows longer (or has no deadline).
	clusterTimeout = 60 * time.Second
	// commandTimeout bounds one command sent to a node.
	commandTimeout = 5 * time.Second
	// migrateBatch is how many keys MoveSlot moves with one MIGRATE.
	migrateBatch = 100
	// migrateTimeout is the MIGRATE timeout, in milliseconds.
	migrateTimeout = 5000
	// clusterLogLines is how many lines of each node's log a cluster error
	// quotes at most.
	clusterLogLines = 8
	// maxPollInterval caps the interval between two checks of a wait loop.
	maxPollInterval = 200 * time.Millisecond
)

// ClusterOptions configures a cluster started by [StartCluster].
type ClusterOptions struct {
	// Masters is the number of masters, at least 3 (redis-cli's minimum);
	// zero means 3.
	Masters int
	// Replicas is the number of replicas of each master; zero means none.
	Replicas int
	// NodeTimeout is the cluster-node-timeout: how long a node may be
	// unreachable before it is considered failing and, for a master, its
	// replica takes over. Zero means 2 s.
	NodeTimeout time.Duration
	// Args are extra configuration directives for every node, passed after
	// the launcher's own. They must not set a password (the cluster is
	// created without one) nor override --cluster-enabled,
	// --cluster-config-file or --cluster-port.
	Args []string
	// TLS, if set, makes every node listen for TLS on a port of its own
	// next to its plain one ([Options.TLS]), and speak TLS on the cluster
	// bus and for replication (--tls-cluster yes, --tls-replication yes).
	// The cluster then announces the TLS ports: CLUSTER SHARDS lists both
	// ("port" and "tls-port"), and CLUSTER SLOTS, CLUSTER NODES and
	// redirections give TLS clients the TLS port and plain clients the
	// plain one. [Cluster.TLSAddrs] are the seeds for TLS clients.
	TLS *TLS
}

// Cluster is a Redis Cluster started by [StartCluster], or an external one
// returned by [ClusterForTest]. Its methods are safe for concurrent use.
//
// Its nodes are [*Server] values: [Server.Kill] simulates the crash of a
// node, and [Server.Restart] brings it back on the same port and in the same
// directory, where its nodes.conf makes it rejoin the cluster (a master
// whose replica was promoted meanwhile comes back as a replica). Data is not
// persisted: a restarted node gets its data from its master, if any.
type Cluster struct {
	nodes    []*Server
	masters  int // as started; 0 for an external cluster
	replicas int
	external bool

	mu     sync.Mutex
	byAddr map[string]*Server // nodes and, for an external cluster, nodes discovered since
}

// clusterNode is one line of a CLUSTER NODES reply.
type clusterNode struct {
	id       string
	addr     string // host:port, without the bus port
	flags    []string
	masterID string // "-" for a master
	slots    [][2]int
}

// has reports whether the node has flag.
func (n *clusterNode) has(flag string) bool { return slices.Contains(n.flags, flag) }

// down reports whether the node is failing, or not (yet) usable.
func (n *clusterNode) down() bool {
	return n.has("fail") || n.has("fail?") || n.has("noaddr") || n.has("handshake")
}

// serves reports whether the node claims slot.
func (n *clusterNode) serves(slot int) bool {
	for _, r := range n.slots {
		if slot >= r[0] && slot <= r[1] {
			return true
		}
	}
	return false
}

// StartCluster starts a Redis Cluster of o.Masters masters with o.Replicas
// replicas each, and waits until it is ready.
//
// Each node is started with [Start] in its own directory, with
// --cluster-enabled yes, --cluster-config-file nodes.conf, the node timeout,
// a free cluster bus port (--cluster-port), and settings that make tests
// quick: --cluster-replica-validity-factor 0 (a replica may always take over
// from its failed master), --repl-diskless-sync-delay 0 and
// --repl-ping-replica-period 1 (replicas sync at once, and their replication
// offset moves on, so Redis lists them as available rather than loading).
// Then the first Masters nodes become masters, sharing the slots as
// `redis-cli --cluster create` would, the others their replicas in turn,
// and StartCluster waits until every node reports cluster_state:ok (a
// master does not before 2 s after its start: CLUSTER_WRITABLE_DELAY),
// knows every node, and its CLUSTER SLOTS covers all 16384 slots with
// Masters masters each listing Replicas replicas.
//
// StartCluster is bounded by ctx and by 60 s. When it fails it stops every
// node it started, and the error quotes the end of each node's log.
func StartCluster(ctx context.Context, o ClusterOptions) (*Cluster, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	masters, timeout := o.Masters, o.NodeTimeout
	if masters == 0 {
		masters = defaultMasters
	}
	if timeout == 0 {
		timeout = defaultNodeTimeout
	}
	switch {
	case masters < defaultMasters:
		return nil, fmt.Errorf("launcher: a cluster needs at least %d masters, not %d", defaultMasters, masters)
	case o.Replicas < 0:
		return nil, fmt.Errorf("launcher: invalid number of replicas %d", o.Replicas)
	case timeout < time.Millisecond:
		return nil, fmt.Errorf("launcher: invalid node timeout %v", o.NodeTimeout)
	}
	ctx, cancel := context.WithTimeout(ctx, clusterTimeout)
	defer cancel()

	args := []string{
		"--cluster-enabled", "yes",
		"--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", strconv.FormatInt(timeout.Milliseconds(), 10),
		"--cluster-replica-validity-factor", "0",
		"--repl-diskless-sync-delay", "0",
		"--repl-ping-replica-period", "1",
	}
	if o.TLS != nil {
		args = append(args, "--tls-cluster", "yes", "--tls-replication", "yes")
	}
	nodes, err := startNodes(ctx, masters*(1+o.Replicas), Options{TLS: o.TLS, Args: args}, o.Args)
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		nodes:    nodes,
		masters:  masters,
		replicas: o.Replicas,
		byAddr:   make(map[string]*Server, len(nodes)),
	}
	for _, s := range nodes {
		c.byAddr[s.Addr()] = s
	}
	fail := func(err error) (*Cluster, error) {
		err = fmt.Errorf("%w%s", err, c.logs()) // before Stop removes the logs
		_ = c.Stop()
		return nil, err
	}
	if err := c.create(ctx); err != nil {
		return fail(err)
	}
	if err := poll(ctx, "cluster not ready", c.checkReady); err != nil {
		return fail(err)
	}
	return c, nil
}

// startNodes starts n cluster nodes in parallel with o (its Args, then a
// free cluster bus port, then extra). On failure it stops those it
// started.
func startNodes(ctx context.Context, n int, o Options, extra []string) ([]*Server, error) {
	nodes := make([]*Server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() { nodes[i], errs[i] = startNode(ctx, o, extra) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, s := range nodes {
			if s != nil {
				_ = s.Stop()
			}
		}
		return nil, err
	}
	return nodes, nil
}

// startNode starts one cluster node, trying another bus port when the one
// it picked was taken.
func startNode(ctx context.Context, o Options, extra []string) (*Server, error) {
	var err error
	for range startAttempts {
		var bus int
		if bus, err = FreePort(); err != nil {
			return nil, err
		}
		a := append(slices.Clone(o.Args), "--cluster-port", strconv.Itoa(bus))
		var s *Server
		if s, err = Start(ctx, Options{TLS: o.TLS, Args: append(a, extra...)}); err == nil {
			s.busPort = bus
			return s, nil
		}
		if !strings.Contains(err.Error(), "Address already in use") || ctx.Err() != nil {
			break
		}
	}
	return nil, err
}

// create makes the nodes one cluster, as redis-cli --cluster create does
// but without its waits of a second (it took 2 s for 6 nodes): the first
// c.masters nodes share the slots in ranges as redis-cli draws them, the
// nodes get configuration epochs 1, 2, …, every node meets every other,
// and once each knows every other, the others replicate the masters in
// turn.
func (c *Cluster) create(ctx context.Context) error {
	fail := func(err error) error { return fmt.Errorf("launcher: create the cluster: %w", err) }
	perMaster := float64(clusterSlots) / float64(c.masters)
	first := 0
	for i, m := range c.nodes[:c.masters] {
		last := int(math.Round(float64(i)*perMaster + perMaster - 1))
		if i == c.masters-1 {
			last = clusterSlots - 1
		}
		slots := make([]any, 0, last-first+1)
		for slot := first; slot <= last; slot++ {
			slots = append(slots, slot)
		}
		if _, err := command(ctx, m, "CLUSTER", slices.Concat([]any{"ADDSLOTS"}, slots)...); err != nil {
			return fail(err)
		}
		first = last + 1
	}
	ids := make([]string, len(c.nodes))
	for i, s := range c.nodes {
		if _, err := command(ctx, s, "CLUSTER", "SET-CONFIG-EPOCH", i+1); err != nil {
			return fail(err)
		}
		id, err := redis.String(command(ctx, s, "CLUSTER", "MYID"))
		if err != nil {
			return fail(err)
		}
		ids[i] = id
	}
	// Every node meets every other: gossip alone would take seconds to
	// introduce them (a node pings a random other once a second).
	for i, a := range c.nodes {
		for _, b := range c.nodes[i+1:] {
			if _, err := command(ctx, a, "CLUSTER", "MEET", b.host, b.port, b.busPort); err != nil {
				return fail(err)
			}
		}
	}
	if err := poll(ctx, "cluster nodes do not all know each other", c.checkJoined); err != nil {
		return err
	}
	for k, s := range c.nodes[c.masters:] {
		if _, err := command(ctx, s, "CLUSTER", "REPLICATE", ids[k%c.masters]); err != nil {
			return fail(err)
		}
	}
	return nil
}

// checkJoined checks that every node knows every other, past the
// handshake.
func (c *Cluster) checkJoined(ctx context.Context) error {
	for _, s := range c.nodes {
		view, err := c.view(ctx, s)
		if err != nil {
			return err
		}
		if len(view) != len(c.nodes) {
			return fmt.Errorf("%s knows %d nodes, want %d", s.Addr(), len(view), len(c.nodes))
		}
		for _, n := range view {
			if n.down() {
				return fmt.Errorf("%s sees %s as %v", s.Addr(), n.addr, n.flags)
			}
		}
	}
	return nil
}

// checkReady checks, on every node, what StartCluster waits for.
func (c *Cluster) checkReady(ctx context.Context) error {
	for _, s := range c.nodes {
		info, err := clusterInfo(ctx, s)
		if err != nil {
			return err
		}
		if info["cluster_state"] != "ok" {
			return fmt.Errorf("%s: cluster_state:%s", s.Addr(), info["cluster_state"])
		}
		if known := info["cluster_known_nodes"]; known != strconv.Itoa(len(c.nodes)) {
			return fmt.Errorf("%s: knows %s nodes, want %d", s.Addr(), known, len(c.nodes))
		}
		reply, err := command(ctx, s, "CLUSTER", "SLOTS")
		if err != nil {
			return err
		}
		if err := checkSlots(reply, c.masters, c.replicas); err != nil {
			return fmt.Errorf("%s: CLUSTER SLOTS: %w", s.Addr(), err)
		}
	}
	return nil
}

// checkSlots checks that a CLUSTER SLOTS reply covers every slot, with
// masters distinct masters, each range listing replicas replicas.
func checkSlots(reply any, masters, replicas int) error {
	entries, err := redis.Values(reply, nil)
	if err != nil {
		return err
	}
	covered := 0
	seen := make(map[string]bool)
	for _, e := range entries {
		entry, err := redis.Values(e, nil)
		if err != nil || len(entry) < 3 {
			return fmt.Errorf("malformed entry %v", e)
		}
		start, err1 := redis.Int(entry[0], nil)
		end, err2 := redis.Int(entry[1], nil)
		master, err3 := redis.Values(entry[2], nil)
		if err1 != nil || err2 != nil || err3 != nil || len(master) < 2 {
			return fmt.Errorf("malformed entry %v", e)
		}
		host, err1 := redis.String(master[0], nil)
		port, err2 := redis.Int(master[1], nil)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("malformed master %v", master)
		}
		seen[net.JoinHostPort(host, strconv.Itoa(port))] = true
		covered += end - start + 1
		if n := len(entry) - 3; n != replicas {
			return fmt.Errorf("slots %d-%d list %d replicas, want %d", start, end, n, replicas)
		}
	}
	if covered != clusterSlots {
		return fmt.Errorf("%d of %d slots covered", covered, clusterSlots)
	}
	if len(seen) != masters {
		return fmt.Errorf("%d masters, want %d", len(seen), masters)
	}
	return nil
}

// ClusterForTest returns a Redis Cluster for tb.
//
// When REDISX_TEST_CLUSTER is set to comma-separated seed addresses
// ("host:port,host:port"), it returns an external cluster made of those
// seeds: [Cluster.External] reports true, its nodes' Kill and Restart and
// its MoveSlot return errors, its Stop does nothing, and o is ignored.
// Tests that kill nodes or move slots should skip on an external cluster.
// Otherwise it starts a cluster with [StartCluster] and stops it with
// tb.Cleanup.
//
// When redis-server or redis-cli is missing, ClusterForTest calls tb.Skip
// with the [Available] message if REDISX_SKIP_NO_REDIS=1, and tb.Fatal
// otherwise. It calls tb.Skip when o.TLS is set and redis-server was built
// without TLS, and tb.Fatal when the cluster cannot be started.
func ClusterForTest(tb testing.TB, o ClusterOptions) *Cluster {
	tb.Helper()
	if seeds := os.Getenv(envCluster); seeds != "" {
		c, err := externalCluster(seeds)
		if err != nil {
			tb.Fatal(err)
		}
		return c
	}
	if err := Available(); err != nil {
		if os.Getenv(envSkip) == "1" {
			tb.Skip(err)
		}
		tb.Fatal(err)
	}
	c, err := StartCluster(context.Background(), o)
	if err != nil {
		if o.TLS != nil && withoutTLS(err) {
			tb.Skipf("redis-server was built without TLS support: %v", err)
		}
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := c.Stop(); err != nil {
			tb.Error(err)
		}
	})
	return c
}

// externalCluster returns the external cluster whose seed nodes are listed,
// comma-separated, in seeds.
func externalCluster(seeds string) (*Cluster, error) {
	c := &Cluster{external: true, byAddr: make(map[string]*Server)}
	for _, addr := range strings.Split(seeds, ",") {
		addr = strings.TrimSpace(addr)
		if addr == "" {
			continue
		}
		s, err := externalNode(addr)
		if err != nil {
			return nil, fmt.Errorf("launcher: %s=%q: %w", envCluster, seeds, err)
		}
		if c.byAddr[s.Addr()] == nil {
			c.nodes = append(c.nodes, s)
			c.byAddr[s.Addr()] = s
		}
	}
	if len(c.nodes) == 0 {
		return nil, fmt.Errorf("launcher: %s=%q: no address", envCluster, seeds)
	}
	return c, nil
}

// externalNode returns an external Server for the node at addr.
func externalNode(addr string) (*Server, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port <= 0 || port > 65535 {
		return nil, fmt.Errorf("%q: invalid port", addr)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return &Server{addr: net.JoinHostPort(host, portStr), host: host, port: port, external: true}, nil
}

// External reports whether the cluster is an external one named by
// REDISX_TEST_CLUSTER, whose nodes cannot be killed nor its slots moved.
func (c *Cluster) External() bool { return c.external }

// Addrs returns every node's address, host:port: for a started cluster, the
// masters it was created with first; for an external one, the seeds.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, s := range c.nodes {
		addrs[i] = s.Addr()
	}
	return addrs
}

// TLSAddrs returns every node's TLS address ([Server.TLSAddr]), in the
// order of [Cluster.Addrs]; nil for a cluster started without
// [ClusterOptions.TLS] and for an external one.
func (c *Cluster) TLSAddrs() []string {
	var addrs []string
	for _, s := range c.nodes {
		if a := s.TLSAddr(); a != "" {
			addrs = append(addrs, a)
		}
	}
	return addrs
}

// Nodes returns every node, in the order of [Cluster.Addrs]. Which of them
// are masters changes with failovers: see [Cluster.Masters].
func (c *Cluster) Nodes() []*Server {
	return slices.Clone(c.nodes)
}

// Stop stops every node (in parallel) and removes their directories. It is
// idempotent, and a no-op for an external cluster.
func (c *Cluster) Stop() error {
	if c.external {
		return nil
	}
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i, s := range c.nodes {
		wg.Go(func() { errs[i] = s.Stop() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// lookup returns the node at addr; for an external cluster, a node not met
// before becomes a new external Server. It returns nil for an unknown
// address of a started cluster.
