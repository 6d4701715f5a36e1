package launcher

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"
)

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
