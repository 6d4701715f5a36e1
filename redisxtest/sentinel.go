package redisxtest

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/redisx"
)

// Sentinel is a Redis deployment managed by Redis Sentinel: a master,
// Options.Replicas replicas of it and Options.Sentinels sentinels (a
// majority of them the quorum) on free loopback ports, with timeouts
// short enough for tests — the master is found down after 1 s
// (down-after-milliseconds 1000) and a failover is given 3 s
// (failover-timeout 3000), so one completes within some 2 to 4 s. Its
// methods are safe for concurrent use.
type Sentinel struct {
	g    *launcher.SentinelGroup
	opts Options

	mu     sync.Mutex
	killed []*launcher.Server // data nodes killed and not restarted
}

// sentinelWait bounds each wait of a Sentinel's methods.
const sentinelWait = 30 * time.Second

// NewSentinel starts a master, its replicas and sentinels, and waits,
// within ctx, until every sentinel names the master and sees every
// replica and every other sentinel. Options.Password, when set, is
// required by the master and the replicas (the sentinels are told it);
// Options.Args apply to them. Options.Username and Options.TLS are not
// supported. The caller must Close it.
func NewSentinel(ctx context.Context, o Options) (*Sentinel, error) {
	switch {
	case o.Username != "":
		return nil, errors.New("redisxtest: StartSentinel with Username: not supported, use Password")
	case o.TLS:
		return nil, errors.New("redisxtest: StartSentinel with TLS: not supported")
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	g, err := launcher.StartSentinel(ctx, launcher.SentinelOptions{
		Replicas:  o.Replicas,
		Sentinels: o.Sentinels,
		Password:  o.Password,
		Args:      append([]string(nil), o.Args...),
	})
	if err != nil {
		return nil, wrap(err)
	}
	return &Sentinel{g: g, opts: o}, nil
}

// StartSentinel starts a sentinel group for t, as NewSentinel does, and
// stops it when t ends. It skips t when redis-server or redis-sentinel is
// not installed.
func StartSentinel(t testing.TB, o Options) *Sentinel {
	t.Helper()
	skipWithoutRedis(t)
	if _, err := exec.LookPath("redis-sentinel"); err != nil {
		t.Skipf("redisxtest: redis-sentinel is not installed, so this test cannot run: "+
			"install it (Debian/Ubuntu: sudo apt-get install -y redis-sentinel): %v", err)
	}
	s, err := NewSentinel(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Options returns client options for the group: Sentinel set to the
// master's name and every sentinel, and the data nodes' password.
func (s *Sentinel) Options() redisx.Options {
	return redisx.Options{
		Sentinel: &redisx.SentinelOptions{Master: s.g.Name(), Addrs: s.g.SentinelAddrs()},
		Password: s.opts.Password,
	}
}

// MasterName returns the name the sentinels monitor the master under.
func (s *Sentinel) MasterName() string { return s.g.Name() }

// Addrs returns the sentinels' addresses.
func (s *Sentinel) Addrs() []string { return s.g.SentinelAddrs() }

// Nodes returns the addresses of the master and the replicas, the first
// master first.
func (s *Sentinel) Nodes() []string {
	var out []string
	for _, n := range s.g.Nodes() {
		out = append(out, n.Addr())
	}
	return out
}

func waitCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), sentinelWait)
}

// Master returns the address of the master, as the first sentinel that
// answers names it.
func (s *Sentinel) Master() (string, error) {
	ctx, cancel := waitCtx()
	defer cancel()
	m, err := s.g.Master(ctx)
	if err != nil {
		return "", wrap(err)
	}
	return m.Addr(), nil
}

// KillMaster kills the master abruptly (SIGKILL), as a crash would, and
// returns its address. The sentinels find it down after 1 s and promote a
// replica: WaitFailover waits for that.
func (s *Sentinel) KillMaster() (string, error) {
	ctx, cancel := waitCtx()
	defer cancel()
	m, err := s.g.KillMaster(ctx)
	if err != nil {
		return "", wrap(err)
	}
	s.mu.Lock()
	s.killed = append(s.killed, m)
	s.mu.Unlock()
	return m.Addr(), nil
}

// WaitFailover waits, within ctx and at most 30 s, until every running
// sentinel names the same master other than from, that master reports
// itself one and every other running node replicates it; it returns the
// new master's address.
func (s *Sentinel) WaitFailover(ctx context.Context, from string) (string, error) {
	var not *launcher.Server
	for _, n := range s.g.Nodes() {
		if n.Addr() == from {
			not = n
		}
	}
	ctx, cancel := context.WithTimeout(ctx, sentinelWait)
	defer cancel()
	m, err := s.g.WaitMaster(ctx, not)
	if err != nil {
		return "", wrap(err)
	}
	return m.Addr(), nil
}

// Failover fails the master over to a replica as an operator would
// (SENTINEL FAILOVER): the former master keeps running, as a replica of
// the new one, whose address Failover returns once every sentinel names
// it. The former master is reconfigured at once, as the sentinels would
// reconfigure it some 8 s later (REPLICAOF, CLIENT KILL of its clients),
// and its statistics reset then (CONFIG RESETSTAT): its INFO commandstats
// count only what it served as a replica.
func (s *Sentinel) Failover(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, sentinelWait)
	defer cancel()
	m, err := s.g.Failover(ctx)
	if err != nil {
		return "", wrap(err)
	}
	return m.Addr(), nil
}

// RestartKilled starts every node KillMaster or Kill killed again, on its
// address, as a replica of the current master, and waits until the
// sentinels see it replicating.
func (s *Sentinel) RestartKilled(ctx context.Context) error {
	s.mu.Lock()
	killed := s.killed
	s.killed = nil
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, sentinelWait)
	defer cancel()
	for i, n := range killed {
		if err := s.g.RestartReplica(ctx, n); err != nil {
			s.mu.Lock()
			s.killed = append(s.killed, killed[i:]...)
			s.mu.Unlock()
			return wrap(err)
		}
	}
	return nil
}

// Kill kills the replica or the sentinel at addr abruptly (SIGKILL). A
// replica comes back with RestartKilled; a sentinel stays down.
func (s *Sentinel) Kill(addr string) error {
	for _, n := range s.g.Sentinels() {
		if n.Addr() == addr {
			return wrap(n.Kill())
		}
	}
	for _, n := range s.g.Nodes() {
		if n.Addr() != addr {
			continue
		}
		if m, err := s.Master(); err == nil && m == addr {
			return fmt.Errorf("redisxtest: %s is the master: use KillMaster", addr)
		}
		if err := n.Kill(); err != nil {
			return wrap(err)
		}
		s.mu.Lock()
		if !slices.Contains(s.killed, n) {
			s.killed = append(s.killed, n)
		}
		s.mu.Unlock()
		return nil
	}
	return fmt.Errorf("redisxtest: %s is not a node of the group", addr)
}

// Close stops every process of the group and removes their files. It is
// idempotent.
func (s *Sentinel) Close() error { return wrap(s.g.Stop()) }
