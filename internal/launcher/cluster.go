package launcher

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
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
	// least redis-cli --cluster create accepts.
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
	// the launcher's own. They must not set a password (redis-cli --cluster
	// create is run without one) nor override --cluster-enabled,
	// --cluster-config-file or --cluster-port.
	Args []string
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
// Then `redis-cli --cluster create ... --cluster-replicas N --cluster-yes`
// makes the first Masters nodes masters and the others replicas, and
// StartCluster waits until every node reports cluster_state:ok, knows every
// node, and its CLUSTER SLOTS covers all 16384 slots with Masters masters
// each listing Replicas replicas.
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
	nodes, err := startNodes(ctx, masters*(1+o.Replicas), args, o.Args)
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

// startNodes starts n cluster nodes in parallel with args, a free cluster
// bus port and then extra. On failure it stops those it started.
func startNodes(ctx context.Context, n int, args, extra []string) ([]*Server, error) {
	nodes := make([]*Server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() { nodes[i], errs[i] = startNode(ctx, args, extra) })
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
func startNode(ctx context.Context, args, extra []string) (*Server, error) {
	var err error
	for range startAttempts {
		var bus int
		if bus, err = FreePort(); err != nil {
			return nil, err
		}
		a := append(slices.Clone(args), "--cluster-port", strconv.Itoa(bus))
		var s *Server
		if s, err = Start(ctx, Options{Args: append(a, extra...)}); err == nil {
			return s, nil
		}
		if !strings.Contains(err.Error(), "Address already in use") || ctx.Err() != nil {
			break
		}
	}
	return nil, err
}

// create runs redis-cli --cluster create over the nodes.
func (c *Cluster) create(ctx context.Context) error {
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", strconv.Itoa(c.replicas), "--cluster-yes")
	cmd := exec.CommandContext(ctx, cliBinary, args...)
	cmd.Stdin = nil
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	text := stripANSI(string(out))
	if err == nil && strings.Contains(text, "[ERR]") {
		err = errors.New("it reported an error")
	}
	if err != nil {
		return fmt.Errorf("launcher: redis-cli --cluster create: %w\n--- redis-cli output ---\n%s",
			err, lastLines(text, logTailLines))
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
// otherwise. It calls tb.Fatal when the cluster cannot be started.
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

// Nodes returns every node, in the order of [Cluster.Addrs]. Which of them
// are masters changes with failovers: see [Cluster.Masters].
func (c *Cluster) Nodes() []*Server {
	return slices.Clone(c.nodes)
}

// Masters returns the nodes that are masters now, according to the CLUSTER
// NODES reply of the first live node that answers, ordered by the first slot
// they serve. Masters that are failing, or not running, are left out.
func (c *Cluster) Masters(ctx context.Context) ([]*Server, error) {
	view, err := c.anyView(ctx)
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(view, func(a, b clusterNode) int { return firstSlot(a) - firstSlot(b) })
	var out []*Server
	for i := range view {
		n := &view[i]
		if !n.has("master") || n.down() {
			continue
		}
		if s := c.lookup(n.addr); s != nil && s.running() {
			out = append(out, s)
		}
	}
	return out, nil
}

// firstSlot returns the lowest slot n claims, or clusterSlots if none.
func firstSlot(n clusterNode) int {
	low := clusterSlots
	for _, r := range n.slots {
		low = min(low, r[0])
	}
	return low
}

// MasterOf returns the master serving slot, according to the CLUSTER NODES
// reply of the first live node that answers. It is an error if the slot is
// unassigned or its master is failing or not running.
func (c *Cluster) MasterOf(ctx context.Context, slot int) (*Server, error) {
	if slot < 0 || slot >= clusterSlots {
		return nil, fmt.Errorf("launcher: invalid slot %d", slot)
	}
	view, err := c.anyView(ctx)
	if err != nil {
		return nil, err
	}
	n := owner(view, slot)
	if n == nil {
		return nil, fmt.Errorf("launcher: slot %d is not assigned", slot)
	}
	s := c.lookup(n.addr)
	if n.down() || s == nil || !s.running() {
		return nil, fmt.Errorf("launcher: slot %d: its master %s is down", slot, n.addr)
	}
	return s, nil
}

// owner returns the master of view claiming slot, preferring one that is
// not down, or nil.
func owner(view []clusterNode, slot int) *clusterNode {
	var found *clusterNode
	for i := range view {
		n := &view[i]
		if n.has("master") && n.serves(slot) && (found == nil || found.down()) {
			found = n
		}
	}
	return found
}

// WaitOK waits until every live node reports cluster_state:ok and, in its
// CLUSTER NODES reply, every slot is served by a master that is neither
// failing nor stopped, the same master for every live node. Live nodes are
// the running ones for a started cluster; for an external cluster, the nodes
// that the first answering seed does not see failing. WaitOK is bounded by
// ctx and by 60 s; its error quotes the end of each node's log.
func (c *Cluster) WaitOK(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, clusterTimeout)
	defer cancel()
	if err := poll(ctx, "cluster not ok", c.checkOK); err != nil {
		return fmt.Errorf("%w%s", err, c.logs())
	}
	return nil
}

// checkOK checks, once, what WaitOK waits for.
func (c *Cluster) checkOK(ctx context.Context) error {
	live, err := c.live(ctx)
	if err != nil {
		return err
	}
	var ref []string
	var refAddr string
	for _, s := range live {
		info, err := clusterInfo(ctx, s)
		if err != nil {
			return err
		}
		if info["cluster_state"] != "ok" {
			return fmt.Errorf("%s: cluster_state:%s", s.Addr(), info["cluster_state"])
		}
		view, err := c.view(ctx, s)
		if err != nil {
			return err
		}
		owners := make([]string, clusterSlots)
		for i := range view {
			n := &view[i]
			if !n.has("master") || len(n.slots) == 0 {
				continue
			}
			if n.down() {
				return fmt.Errorf("%s: master %s, serving slots, is failing (%s)", s.Addr(), n.addr, strings.Join(n.flags, ","))
			}
			if srv := c.lookup(n.addr); srv == nil || !srv.running() {
				return fmt.Errorf("%s: master %s, serving slots, is not running", s.Addr(), n.addr)
			}
			for _, r := range n.slots {
				for slot := r[0]; slot <= r[1]; slot++ {
					if owners[slot] != "" {
						return fmt.Errorf("%s: slot %d claimed by %s and %s", s.Addr(), slot, owners[slot], n.addr)
					}
					owners[slot] = n.addr
				}
			}
		}
		for slot, o := range owners {
			switch {
			case o == "":
				return fmt.Errorf("%s: slot %d is not served", s.Addr(), slot)
			case ref != nil && o != ref[slot]:
				return fmt.Errorf("slot %d: %s says %s serves it, %s says %s", slot, refAddr, ref[slot], s.Addr(), o)
			}
		}
		if ref == nil {
			ref, refAddr = owners, s.Addr()
		}
	}
	return nil
}

// MoveSlot migrates slot, with its keys, to the master to while the cluster
// is serving, as redis-cli --cluster reshard does: CLUSTER SETSLOT IMPORTING
// on to, MIGRATING on the current master, MIGRATE of every key (listed with
// CLUSTER GETKEYSINSLOT, in batches of 100), then SETSLOT NODE on to, on the
// former master and on every other live master. It then waits until every
// running node maps the slot to to. Moving a slot to its current master does
// nothing. MoveSlot fails on an external cluster, and if to is not a master;
// a failure half-way leaves the slot migrating. It is bounded by ctx and by
// 60 s.
func (c *Cluster) MoveSlot(ctx context.Context, slot int, to *Server) error {
	if c.external {
		return errors.New("launcher: cannot move slots of an external cluster")
	}
	if slot < 0 || slot >= clusterSlots {
		return fmt.Errorf("launcher: invalid slot %d", slot)
	}
	if to == nil || c.lookup(to.Addr()) != to {
		return errors.New("launcher: move slot: target is not a node of this cluster")
	}
	ctx, cancel := context.WithTimeout(ctx, clusterTimeout)
	defer cancel()

	toView, err := c.view(ctx, to)
	if err != nil {
		return fmt.Errorf("launcher: move slot %d: %w", slot, err)
	}
	self := myself(toView)
	if self == nil || !self.has("master") {
		return fmt.Errorf("launcher: move slot %d: %s is not a master", slot, to.Addr())
	}
	src := owner(toView, slot)
	if src == nil {
		return fmt.Errorf("launcher: move slot %d: slot is not assigned", slot)
	}
	if src.id == self.id {
		return nil
	}
	from := c.lookup(src.addr)
	if from == nil || !from.running() {
		return fmt.Errorf("launcher: move slot %d: its master %s is not running", slot, src.addr)
	}
	fromView, err := c.view(ctx, from)
	if err != nil {
		return fmt.Errorf("launcher: move slot %d: %w", slot, err)
	}
	if me := myself(fromView); me == nil || me.id != src.id || !me.serves(slot) {
		return fmt.Errorf("launcher: move slot %d: %s and %s disagree on its master; call WaitOK first",
			slot, to.Addr(), from.Addr())
	}

	steps := []struct {
		s    *Server
		args []any
	}{
		{to, []any{"SETSLOT", slot, "IMPORTING", src.id}},
		{from, []any{"SETSLOT", slot, "MIGRATING", self.id}},
	}
	for _, st := range steps {
		if _, err := command(ctx, st.s, "CLUSTER", st.args...); err != nil {
			return fmt.Errorf("launcher: move slot %d: %w", slot, err)
		}
	}
	if err := migrateKeys(ctx, from, to, slot); err != nil {
		return fmt.Errorf("launcher: move slot %d: %w", slot, err)
	}
	targets := []*Server{to, from}
	for i := range toView {
		n := &toView[i]
		if !n.has("master") || n.down() || n.id == self.id || n.id == src.id {
			continue
		}
		if s := c.lookup(n.addr); s != nil && s.running() {
			targets = append(targets, s)
		}
	}
	for _, s := range targets {
		if _, err := command(ctx, s, "CLUSTER", "SETSLOT", slot, "NODE", self.id); err != nil {
			return fmt.Errorf("launcher: move slot %d: %w", slot, err)
		}
	}
	return poll(ctx, fmt.Sprintf("slot %d not moved everywhere", slot), func(ctx context.Context) error {
		live, err := c.live(ctx)
		if err != nil {
			return err
		}
		for _, s := range live {
			view, err := c.view(ctx, s)
			if err != nil {
				return err
			}
			if n := owner(view, slot); n == nil || n.addr != to.Addr() {
				return fmt.Errorf("%s does not map slot %d to %s yet", s.Addr(), slot, to.Addr())
			}
		}
		return nil
	})
}

// migrateKeys moves every key of slot from from to to with MIGRATE.
func migrateKeys(ctx context.Context, from, to *Server, slot int) error {
	conn, err := dial(ctx, from)
	if err != nil {
		return err
	}
	defer conn.Close()
	for {
		keys, err := redis.Values(do(ctx, conn, "CLUSTER", "GETKEYSINSLOT", slot, migrateBatch))
		if err != nil {
			return fmt.Errorf("%s: CLUSTER GETKEYSINSLOT: %w", from.Addr(), err)
		}
		if len(keys) == 0 {
			return nil
		}
		args := []any{to.host, to.port, "", 0, migrateTimeout}
		if to.password != "" {
			args = append(args, "AUTH", to.password)
		}
		args = append(append(args, "KEYS"), keys...)
		if _, err := do(ctx, conn, "MIGRATE", args...); err != nil {
			return fmt.Errorf("%s: MIGRATE to %s: %w", from.Addr(), to.Addr(), err)
		}
	}
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
func (c *Cluster) lookup(addr string) *Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.byAddr[addr]; s != nil || !c.external {
		return s
	}
	s, err := externalNode(addr)
	if err != nil {
		return nil
	}
	c.byAddr[addr] = s
	return s
}

// live returns the nodes WaitOK checks: the running nodes of a started
// cluster; for an external one, the nodes that the first answering seed
// does not see failing.
func (c *Cluster) live(ctx context.Context) ([]*Server, error) {
	if !c.external {
		var out []*Server
		for _, s := range c.nodes {
			if s.running() {
				out = append(out, s)
			}
		}
		if len(out) == 0 {
			return nil, errors.New("no node is running")
		}
		return out, nil
	}
	view, err := c.anyView(ctx)
	if err != nil {
		return nil, err
	}
	var out []*Server
	for i := range view {
		if n := &view[i]; !n.down() {
			if s := c.lookup(n.addr); s != nil {
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// anyView returns the CLUSTER NODES reply of the first node that is running
// and answers.
func (c *Cluster) anyView(ctx context.Context) ([]clusterNode, error) {
	var errs []error
	for _, s := range c.nodes {
		if !s.running() {
			continue
		}
		view, err := c.view(ctx, s)
		if err == nil {
			return view, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil, errors.New("launcher: no cluster node is running")
	}
	return nil, fmt.Errorf("launcher: no cluster node answers: %w", errors.Join(errs...))
}

// view returns s's CLUSTER NODES reply, parsed.
func (c *Cluster) view(ctx context.Context, s *Server) ([]clusterNode, error) {
	text, err := redis.String(command(ctx, s, "CLUSTER", "NODES"))
	if err != nil {
		return nil, err
	}
	view, err := parseClusterNodes(text, s.host)
	if err != nil {
		return nil, fmt.Errorf("%s: CLUSTER NODES: %w", s.Addr(), err)
	}
	return view, nil
}

// myself returns the node of view flagged myself, or nil.
func myself(view []clusterNode) *clusterNode {
	for i := range view {
		if view[i].has("myself") {
			return &view[i]
		}
	}
	return nil
}

// parseClusterNodes parses a CLUSTER NODES reply. An address without a host
// gets selfHost, the host of the node that replied.
func parseClusterNodes(text, selfHost string) ([]clusterNode, error) {
	var view []clusterNode
	for line := range strings.Lines(text) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 8 {
			return nil, fmt.Errorf("malformed line %q", strings.TrimSpace(line))
		}
		addr, _, _ := strings.Cut(f[1], "@") // ip:port@cport[,hostname]
		colon := strings.LastIndexByte(addr, ':')
		if colon < 0 {
			return nil, fmt.Errorf("malformed address in line %q", strings.TrimSpace(line))
		}
		host, port := addr[:colon], addr[colon+1:]
		if host == "" {
			host = selfHost
		}
		n := clusterNode{
			id:       f[0],
			addr:     net.JoinHostPort(host, port),
			flags:    strings.Split(f[2], ","),
			masterID: f[3],
		}
		for _, s := range f[8:] {
			if strings.HasPrefix(s, "[") { // [slot->-id] or [slot-<-id]: migrating or importing
				continue
			}
			lo, hi, isRange := strings.Cut(s, "-")
			if !isRange {
				hi = lo
			}
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if err1 != nil || err2 != nil || a < 0 || b >= clusterSlots || a > b {
				return nil, fmt.Errorf("malformed slots %q in line %q", s, strings.TrimSpace(line))
			}
			n.slots = append(n.slots, [2]int{a, b})
		}
		view = append(view, n)
	}
	if len(view) == 0 {
		return nil, errors.New("empty reply")
	}
	return view, nil
}

// clusterInfo returns s's CLUSTER INFO fields.
func clusterInfo(ctx context.Context, s *Server) (map[string]string, error) {
	text, err := redis.String(command(ctx, s, "CLUSTER", "INFO"))
	if err != nil {
		return nil, err
	}
	info := make(map[string]string)
	for line := range strings.Lines(text) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			info[k] = v
		}
	}
	return info, nil
}

// running reports whether the server's process is running; an external
// server is taken to be.
func (s *Server) running() bool {
	if s.external {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc != nil && !s.proc.exited()
}

// command sends one command to s on a new connection.
func command(ctx context.Context, s *Server, cmd string, args ...any) (any, error) {
	conn, err := dial(ctx, s)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	reply, err := do(ctx, conn, cmd, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %s %v: %w", s.Addr(), cmd, args, err)
	}
	return reply, nil
}

// dial connects to s, authenticating if it has a password.
func dial(ctx context.Context, s *Server) (redis.Conn, error) {
	opts := []redis.DialOption{redis.DialConnectTimeout(time.Second)}
	if s.password != "" {
		opts = append(opts, redis.DialPassword(s.password))
	}
	conn, err := redis.DialContext(ctx, "tcp", s.Addr(), opts...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Addr(), err)
	}
	return conn, nil
}

// do sends one command on conn, waiting for the reply until ctx's deadline
// (and at most commandTimeout).
func do(ctx context.Context, conn redis.Conn, cmd string, args ...any) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	timeout := commandTimeout
	if d, ok := ctx.Deadline(); ok {
		if timeout = min(timeout, time.Until(d)); timeout <= 0 {
			return nil, context.DeadlineExceeded
		}
	}
	return redis.DoWithTimeout(conn, timeout, cmd, args...)
}

// poll calls check until it succeeds or ctx is done, backing off from 20 ms
// to 200 ms between calls. The error names what and the last check's error.
func poll(ctx context.Context, what string, check func(context.Context) error) error {
	delay := 20 * time.Millisecond
	for {
		err := check(ctx)
		if err == nil {
			return nil
		}
		timer := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("launcher: %s: %w (last check: %v)", what, ctx.Err(), err)
		case <-timer.C:
		}
		delay = min(2*delay, maxPollInterval)
	}
}

// logs returns the end of each started node's log, for an error message.
func (c *Cluster) logs() string {
	var b strings.Builder
	for _, s := range c.nodes {
		if s.external {
			continue
		}
		path := filepath.Join(s.dir, logName)
		if tail := lastLines(readLogTail(path, 0), clusterLogLines); tail != "" {
			fmt.Fprintf(&b, "\n--- end of %s (%s) ---\n%s", path, s.Addr(), tail)
		}
	}
	return b.String()
}

// lastLines returns at most the last n lines of text.
func lastLines(text string, n int) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// stripANSI removes the ANSI escape sequences (colours) redis-cli writes.
func stripANSI(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
