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
	"time"
)

const (
	// sentinelBinary is the program of a sentinel; on Debian it comes from
	// the redis-sentinel package.
	sentinelBinary = "redis-sentinel"
	// sentinelTimeout bounds StartSentinel and every wait of a group when
	// the caller's context allows longer.
	sentinelTimeout = 60 * time.Second
	// defaultMasterName is SentinelOptions.Master when empty.
	defaultMasterName = "mymaster"
)

// SentinelOptions configures a group started by [StartSentinel].
type SentinelOptions struct {
	// Master is the name the sentinels monitor the master under. Empty:
	// "mymaster".
	Master string
	// Replicas is the number of replicas of the master. Zero: 2.
	Replicas int
	// Sentinels is the number of sentinels; their quorum is a majority.
	// Zero: 3.
	Sentinels int
	// DownAfter is the sentinels' down-after-milliseconds: how long the
	// master may not answer before it is considered down. Zero: 1 s.
	DownAfter time.Duration
	// FailoverTimeout is the sentinels' failover-timeout. Zero: 3 s.
	FailoverTimeout time.Duration
	// Password, when set, is required by the master and the replicas
	// (requirepass, and masterauth to replicate); the sentinels are given
	// it (auth-pass).
	Password string
	// SentinelPassword, when set, is required by the sentinels
	// themselves (requirepass in sentinel mode).
	SentinelPassword string
	// Args are extra configuration directives for the master and the
	// replicas.
	Args []string
}

// SentinelGroup is a master, its replicas and the sentinels that monitor
// them, started by [StartSentinel]. Its methods are safe for concurrent
// use. Which data node is the master changes with failovers: ask
// [SentinelGroup.Master].
type SentinelGroup struct {
	name      string
	nodes     []*Server // the data nodes, the first master first
	sentinels []*Server
	password  string // the data nodes'
	downAfter time.Duration
}

// StartSentinel starts a master, o.Replicas replicas of it and o.Sentinels
// sentinels monitoring it, each on a free loopback port in a directory of
// its own, and waits until every sentinel agrees on the master and sees
// every replica (linked to it) and every other sentinel — so that a
// failover can start as soon as the master is found down. Data nodes are
// started with --repl-diskless-sync-delay 0 and --repl-ping-replica-period
// 1 (replicas sync at once); sentinels with the down-after and failover
// timeouts of o, parallel-syncs 2 and a sentinel.conf they may rewrite.
//
// StartSentinel is bounded by ctx and by 60 s. When it fails it stops
// every process it started, and the error quotes the end of their logs.
func StartSentinel(ctx context.Context, o SentinelOptions) (*SentinelGroup, error) {
	if err := sentinelAvailable(); err != nil {
		return nil, err
	}
	if o.Master == "" {
		o.Master = defaultMasterName
	}
	if o.Replicas == 0 {
		o.Replicas = 2
	}
	if o.Sentinels == 0 {
		o.Sentinels = 3
	}
	if o.DownAfter == 0 {
		o.DownAfter = time.Second
	}
	if o.FailoverTimeout == 0 {
		o.FailoverTimeout = 3 * time.Second
	}
	switch {
	case o.Replicas < 0 || o.Sentinels < 0:
		return nil, fmt.Errorf("launcher: invalid sentinel group: %d replicas, %d sentinels", o.Replicas, o.Sentinels)
	case o.DownAfter < time.Millisecond || o.FailoverTimeout < time.Millisecond:
		return nil, fmt.Errorf("launcher: invalid sentinel timeouts %v, %v", o.DownAfter, o.FailoverTimeout)
	case strings.ContainsAny(o.Master, " \t\r\n\"'") || strings.ContainsAny(o.Password+o.SentinelPassword, " \t\r\n\"'"):
		return nil, errors.New("launcher: master name and passwords must not hold spaces or quotes")
	}
	ctx, cancel := context.WithTimeout(ctx, sentinelTimeout)
	defer cancel()

	g := &SentinelGroup{name: o.Master, password: o.Password, downAfter: o.DownAfter}
	fail := func(err error) (*SentinelGroup, error) {
		err = fmt.Errorf("%w%s", err, g.logs()) // before Stop removes the logs
		_ = g.Stop()
		return nil, err
	}
	data := []string{"--repl-diskless-sync-delay", "0", "--repl-ping-replica-period", "1"}
	if o.Password != "" {
		data = append(data, "--masterauth", o.Password)
	}
	data = append(data, o.Args...)
	master, err := Start(ctx, Options{Password: o.Password, Args: data})
	if err != nil {
		return nil, err
	}
	g.nodes = append(g.nodes, master)
	replicas := make([]*Server, o.Replicas)
	errs := make([]error, o.Replicas)
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Go(func() {
			replicas[i], errs[i] = Start(ctx, Options{Password: o.Password, Args: append(slices.Clone(data), "--replicaof", master.host, strconv.Itoa(master.port))})
		})
	}
	wg.Wait()
	for _, r := range replicas {
		if r != nil {
			g.nodes = append(g.nodes, r)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fail(err)
	}
	conf := sentinelConf(o, master)
	sentinels := make([]*Server, o.Sentinels)
	errs = make([]error, o.Sentinels)
	for i := range sentinels {
		wg.Go(func() { sentinels[i], errs[i] = startSentinelNode(ctx, conf, o.SentinelPassword) })
	}
	wg.Wait()
	for _, s := range sentinels {
		if s != nil {
			g.sentinels = append(g.sentinels, s)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fail(err)
	}
	if _, err := g.WaitMaster(ctx, nil); err != nil {
		return fail(err)
	}
	return g, nil
}

// sentinelAvailable reports, as [Available] does, a clear error when
// redis-server, redis-cli or redis-sentinel is not on PATH.
func sentinelAvailable() error {
	if err := Available(); err != nil {
		return err
	}
	if _, err := exec.LookPath(sentinelBinary); err != nil {
		return fmt.Errorf("launcher: %s not found on PATH: install the Debian package redis-sentinel, "+
			"e.g. `sudo apt-get install -y redis-sentinel`, or run scripts/ensure-redis.sh", sentinelBinary)
	}
	return nil
}

// sentinelConf is the sentinel.conf of every sentinel of a group.
func sentinelConf(o SentinelOptions, master *Server) string {
	var b strings.Builder
	fmt.Fprintf(&b, "sentinel monitor %s %s %d %d\n", o.Master, master.host, master.port, o.Sentinels/2+1)
	fmt.Fprintf(&b, "sentinel down-after-milliseconds %s %d\n", o.Master, o.DownAfter.Milliseconds())
	fmt.Fprintf(&b, "sentinel failover-timeout %s %d\n", o.Master, o.FailoverTimeout.Milliseconds())
	fmt.Fprintf(&b, "sentinel parallel-syncs %s 2\n", o.Master)
	if o.Password != "" {
		fmt.Fprintf(&b, "sentinel auth-pass %s %s\n", o.Master, o.Password)
	}
	return b.String()
}

// startSentinelNode starts one sentinel with conf as its sentinel.conf (in
// a new directory, where it rewrites it), trying other free ports when the
// one it picked was taken.
func startSentinelNode(ctx context.Context, conf, password string) (*Server, error) {
	dir, err := os.MkdirTemp("", "redisx-sentinel-")
	if err != nil {
		return nil, fmt.Errorf("launcher: create temp dir: %w", err)
	}
	path := filepath.Join(dir, "sentinel.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("launcher: write %s: %w", path, err)
	}
	s := &Server{host: "127.0.0.1", dir: dir, ownDir: true, password: password, binary: sentinelBinary}
	for range startAttempts {
		if s.port, err = FreePort(); err != nil {
			break
		}
		s.args = []string{path,
			"--port", strconv.Itoa(s.port),
			"--bind", "127.0.0.1",
			"--dir", dir,
			"--daemonize", "no",
			"--logfile", filepath.Join(dir, logName),
			"--protected-mode", "no",
		}
		if password != "" {
			s.args = append(s.args, "--requirepass", password)
		}
		var inUse bool
		if inUse, err = s.launch(ctx); err == nil {
			return s, nil
		}
		if !inUse || ctx.Err() != nil {
			break
		}
	}
	_ = os.RemoveAll(dir)
	return nil, err
}

// Name returns the name the sentinels monitor the master under.
func (g *SentinelGroup) Name() string { return g.name }

// Nodes returns the data nodes, the first master first.
func (g *SentinelGroup) Nodes() []*Server { return slices.Clone(g.nodes) }

// Sentinels returns the sentinels.
func (g *SentinelGroup) Sentinels() []*Server { return slices.Clone(g.sentinels) }

// SentinelAddrs returns the sentinels' addresses.
func (g *SentinelGroup) SentinelAddrs() []string {
	out := make([]string, len(g.sentinels))
	for i, s := range g.sentinels {
		out[i] = s.Addr()
	}
	return out
}

// node returns the data node at addr, or nil.
func (g *SentinelGroup) node(addr string) *Server {
	for _, s := range g.nodes {
		if s.Addr() == addr {
			return s
		}
	}
	return nil
}

// Master returns the data node the first running sentinel that answers
// names as the master (SENTINEL GET-MASTER-ADDR-BY-NAME).
func (g *SentinelGroup) Master(ctx context.Context) (*Server, error) {
	var errs []error
	for _, s := range g.sentinels {
		if !s.running() {
			continue
		}
		addr, err := g.askMaster(ctx, s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if n := g.node(addr); n != nil {
			return n, nil
		}
		errs = append(errs, fmt.Errorf("%s names %s, not a node of the group", s.Addr(), addr))
	}
	if len(errs) == 0 {
		return nil, errors.New("launcher: no sentinel is running")
	}
	return nil, fmt.Errorf("launcher: master: %w", errors.Join(errs...))
}

// askMaster asks sentinel s for the master's address.
func (g *SentinelGroup) askMaster(ctx context.Context, s *Server) (string, error) {
	v, err := command(ctx, s, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", g.name)
	if err != nil {
		return "", err
	}
	hp, ok := v.([]any)
	if !ok || len(hp) != 2 {
		return "", fmt.Errorf("%s: no master named %s", s.Addr(), g.name)
	}
	host, _ := hp[0].([]byte)
	port, _ := hp[1].([]byte)
	return net.JoinHostPort(string(host), string(port)), nil
}

// KillMaster kills the current master (SIGKILL), as a crash would, and
// returns it. The sentinels fail it over after DownAfter: wait for that
// with [SentinelGroup.WaitMaster].
func (g *SentinelGroup) KillMaster(ctx context.Context) (*Server, error) {
	m, err := g.Master(ctx)
	if err != nil {
		return nil, err
	}
	return m, m.Kill()
}

// Failover asks a sentinel for a failover without agreement of the others
// (SENTINEL FAILOVER), as an operator does for maintenance, and returns
// the replica promoted once every running sentinel names it. The former
// master keeps running: the sentinels would reconfigure it as a replica
// some 8 s after the switch (they wait that long before they correct a
// master they believe a replica), and until then it is a master nobody
// writes to; Failover does it at once, as they do it — REPLICAOF and
// CLIENT KILL of its normal and Pub/Sub clients in one transaction, with
// CONFIG RESETSTAT, so that its INFO commandstats count what it served as
// a replica only — and waits as [SentinelGroup.WaitMaster] does.
func (g *SentinelGroup) Failover(ctx context.Context) (*Server, error) {
	ctx, cancel := context.WithTimeout(ctx, sentinelTimeout)
	defer cancel()
	old, err := g.Master(ctx)
	if err != nil {
		return nil, err
	}
	var asked *Server
	for _, s := range g.sentinels {
		if s.running() {
			asked = s
			break
		}
	}
	if asked == nil {
		return nil, errors.New("launcher: failover: no sentinel is running")
	}
	if _, err := command(ctx, asked, "SENTINEL", "FAILOVER", g.name); err != nil {
		return nil, fmt.Errorf("launcher: failover: %w", err)
	}
	var m *Server
	err = poll(ctx, "no master promoted", func(ctx context.Context) error {
		m, err = g.agreed(ctx, old, old)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := demote(ctx, old, m); err != nil {
		return nil, err
	}
	return g.WaitMaster(ctx, old)
}

// demote makes s a replica of m as a sentinel does (sentinelSendSlaveOf):
// REPLICAOF and CLIENT KILL of its normal and Pub/Sub clients (not this
// one: SKIPME is the default) in one transaction, so that clients holding
// connections to s are made to ask the sentinels again. CONFIG RESETSTAT
// in the same transaction zeroes its INFO commandstats at the moment it
// becomes a replica, so that a test can count what it serves as one.
func demote(ctx context.Context, s, m *Server) error {
	c, err := dial(ctx, s)
	if err != nil {
		return err
	}
	defer c.Close()
	for _, cmd := range [][]any{
		{"MULTI"},
		{"REPLICAOF", m.host, strconv.Itoa(m.port)},
		{"CLIENT", "KILL", "TYPE", "normal"},
		{"CLIENT", "KILL", "TYPE", "pubsub"},
		{"CONFIG", "RESETSTAT"},
	} {
		if err := c.Send(cmd[0].(string), cmd[1:]...); err != nil {
			return err
		}
	}
	if _, err := do(ctx, c, "EXEC"); err != nil {
		return fmt.Errorf("launcher: demote %s: %w", s.Addr(), err)
	}
	return nil
}

// RestartReplica starts s, a data node that was killed, again on its port
// as a replica of the current master, and waits until every running
// sentinel sees it replicating. (A killed master restarted as it was would
// come back as an empty master until the sentinels, some 8 s later,
// reconfigure it.)
func (g *SentinelGroup) RestartReplica(ctx context.Context, s *Server) error {
	ctx, cancel := context.WithTimeout(ctx, sentinelTimeout)
	defer cancel()
	if g.node(s.Addr()) != s {
		return errors.New("launcher: restart: not a data node of the group")
	}
	m, err := g.Master(ctx)
	if err != nil {
		return err
	}
	if m == s {
		return fmt.Errorf("launcher: restart: %s is still the master", s.Addr())
	}
	s.mu.Lock()
	args := s.args
	if i := slices.Index(args, "--replicaof"); i >= 0 {
		args = slices.Delete(slices.Clone(args), i, i+3)
	}
	s.args = append(slices.Clone(args), "--replicaof", m.host, strconv.Itoa(m.port))
	s.mu.Unlock()
	if err := s.Restart(ctx); err != nil {
		return err
	}
	_, err = g.WaitMaster(ctx, nil)
	return err
}

// WaitMaster waits until every running sentinel names the same master, a
// running data node other than not (nil: any) that reports role master,
// and lists every other running data node as a replica, not down, and
// each of those reports itself connected to that master; it returns that
// master. It is bounded by ctx and by 60 s.
func (g *SentinelGroup) WaitMaster(ctx context.Context, not *Server) (*Server, error) {
	ctx, cancel := context.WithTimeout(ctx, sentinelTimeout)
	defer cancel()
	var master *Server
	err := poll(ctx, "sentinels do not agree on a master", func(ctx context.Context) error {
		m, err := g.agreed(ctx, not, nil)
		master = m
		return err
	})
	return master, err
}

// agreed checks what WaitMaster waits for once, leaving the data node
// skip (if not nil) out of the replicas' checks.
func (g *SentinelGroup) agreed(ctx context.Context, not, skip *Server) (*Server, error) {
	var master *Server
	asked := 0
	for _, s := range g.sentinels {
		if !s.running() {
			continue
		}
		asked++
		addr, err := g.askMaster(ctx, s)
		if err != nil {
			return nil, err
		}
		m := g.node(addr)
		switch {
		case m == nil:
			return nil, fmt.Errorf("%s names %s, not a node of the group", s.Addr(), addr)
		case master != nil && m != master:
			return nil, fmt.Errorf("%s names %s, another sentinel %s", s.Addr(), addr, master.Addr())
		case m == not:
			return nil, fmt.Errorf("%s still names %s", s.Addr(), addr)
		case !m.running():
			return nil, fmt.Errorf("%s names %s, which is not running", s.Addr(), addr)
		}
		master = m
		if err := g.seesReplicas(ctx, s, m, skip); err != nil {
			return nil, err
		}
	}
	if asked == 0 {
		return nil, errors.New("no sentinel is running")
	}
	if err := checkRole(ctx, master, nil); err != nil {
		return nil, err
	}
	for _, n := range g.nodes {
		if n != master && n != skip && n.running() {
			if err := checkRole(ctx, n, master); err != nil {
				return nil, err
			}
		}
	}
	return master, nil
}

// checkRole checks that s reports itself a master (of nil) or a replica
// of of connected to it (ROLE).
func checkRole(ctx context.Context, s, of *Server) error {
	v, err := command(ctx, s, "ROLE")
	if err != nil {
		return err
	}
	r := asSlice(v)
	if of == nil {
		if len(r) == 0 || string(asBytes(r[0])) != "master" {
			return fmt.Errorf("%s does not report role master yet", s.Addr())
		}
		return nil
	}
	if len(r) < 4 || string(asBytes(r[0])) != "slave" {
		return fmt.Errorf("%s does not report role slave yet", s.Addr())
	}
	port, _ := r[2].(int64)
	if addr := net.JoinHostPort(string(asBytes(r[1])), strconv.FormatInt(port, 10)); addr != of.Addr() || string(asBytes(r[3])) != "connected" {
		return fmt.Errorf("%s replicates %s (%s), not %s yet", s.Addr(), addr, asBytes(r[3]), of.Addr())
	}
	return nil
}

// seesReplicas checks that sentinel s lists every running data node other
// than m as a replica, not down nor disconnected, and knows of the other
// sentinels. (Its view of a replica's link, master-link-status, comes from
// an INFO it refreshes every 10 s: the replicas are asked themselves.)
func (g *SentinelGroup) seesReplicas(ctx context.Context, s, m, skip *Server) error {
	v, err := command(ctx, s, "SENTINEL", "REPLICAS", g.name)
	if err != nil {
		return err
	}
	seen := map[string]map[string]string{}
	for _, r := range asSlice(v) {
		f := fields(r)
		seen[net.JoinHostPort(f["ip"], f["port"])] = f
	}
	for _, n := range g.nodes {
		if n == m || n == skip || !n.running() {
			continue
		}
		f, ok := seen[n.Addr()]
		switch {
		case !ok:
			return fmt.Errorf("%s does not list %s as a replica", s.Addr(), n.Addr())
		case f["flags"] != "slave":
			return fmt.Errorf("%s lists replica %s with flags %s", s.Addr(), n.Addr(), f["flags"])
		}
	}
	v, err = command(ctx, s, "SENTINEL", "SENTINELS", g.name)
	if err != nil {
		return err
	}
	if known := len(asSlice(v)); known < len(g.sentinels)-1 {
		return fmt.Errorf("%s knows %d other sentinels of %d", s.Addr(), known, len(g.sentinels)-1)
	}
	return nil
}

// fields reads a reply of alternating names and values into a map.
func fields(v any) map[string]string {
	kv := asSlice(v)
	f := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		f[string(asBytes(kv[i]))] = string(asBytes(kv[i+1]))
	}
	return f
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

func asBytes(v any) []byte {
	switch v := v.(type) {
	case []byte:
		return v
	case string:
		return []byte(v)
	}
	return nil
}

// Stop stops every process of the group (in parallel) and removes their
// directories. It is idempotent.
func (g *SentinelGroup) Stop() error {
	all := append(slices.Clone(g.sentinels), g.nodes...)
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	for i, s := range all {
		wg.Go(func() { errs[i] = s.Stop() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// logs returns the end of each process's log, for an error message.
func (g *SentinelGroup) logs() string {
	var b strings.Builder
	for _, s := range append(slices.Clone(g.nodes), g.sentinels...) {
		path := filepath.Join(s.dir, logName)
		if tail := lastLines(readLogTail(path, 0), clusterLogLines); tail != "" {
			fmt.Fprintf(&b, "\n--- end of %s (%s) ---\n%s", path, s.Addr(), tail)
		}
	}
	return b.String()
}
