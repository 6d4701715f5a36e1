package topology

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// Shard is one master of a cluster with the slots it serves and its replicas.
type Shard struct {
	// Master is the master's address, host:port.
	Master string
	// Replicas are the addresses of the master's replicas that are online.
	Replicas []string
	// Ranges are the slot ranges the master serves, inclusive at both ends
	// and sorted.
	Ranges [][2]int
}

// ParseShards parses a CLUSTER SHARDS reply (Redis 7.0 and later) into one
// [Shard] per master that serves at least one slot, ordered by first slot.
//
// The reply is expected in redigo's RESP2 types: an array of shards, each a
// map written as a flat key/value array holding "slots" (a flat array of
// start/end integer pairs) and "nodes" (an array of flat key/value arrays).
// RESP3 maps (map[string]any, map[any]any), string keys and values, and
// slots as an array of two-element arrays are accepted too.
//
// A node's host is its "endpoint" unless that is empty or "?" (the values of
// an unknown endpoint), in which case it is its "ip"; its port is "port", or
// "tls-port" when there is no plain port (a node with port 0): the address a
// plain client connects to. A TLS client needs [ParseShardsTLS] instead, as a
// cluster with tls-cluster yes lists both ports of every node whatever the
// connection the reply came over. A host that is still empty gives an
// address ":port": the caller fills in the host of the node that sent the
// reply. The master of a shard is its node with role "master", preferring one
// whose health is "online" when there are several (servers that group nodes
// by shard id may list a failed former master next to its successor); a
// failing master is kept when there is no other. Replicas whose health is not "online" ("loading", "fail")
// are left out.
//
// Shards that serve no slot are left out: Redis 7.0 lists every master,
// including a failed former master whose slots went to its replica. Shards
// listing the same master are merged. A reply that does not have this shape,
// or a shard serving slots without a master, is an error.
func ParseShards(reply any) ([]Shard, error) {
	return parseShards(reply, false)
}

// ParseShardsTLS is [ParseShards] for a client that connects with TLS: a
// node's port is its "tls-port", or "port" when it lists no TLS port (a
// cluster with tls-cluster no announces only the port its bus and
// replication use, plain or TLS).
func ParseShardsTLS(reply any) ([]Shard, error) {
	return parseShards(reply, true)
}

func parseShards(reply any, tls bool) ([]Shard, error) {
	list, err := array(reply, "CLUSTER SHARDS reply")
	if err != nil {
		return nil, err
	}
	var shards []Shard
	for i, item := range list {
		sh, err := parseShard(item, tls)
		if err != nil {
			return nil, fmt.Errorf("cluster: CLUSTER SHARDS shard %d: %w", i, err)
		}
		if len(sh.Ranges) > 0 {
			shards = append(shards, sh)
		}
	}
	return normalize(shards), nil
}

// parseShard parses one element of a CLUSTER SHARDS reply, taking the TLS
// ports when tls is set.
func parseShard(item any, tls bool) (Shard, error) {
	var (
		sh                 Shard
		nodes              []any
		hasSlots, hasNodes bool
		masterOnline       bool
	)
	err := fields(item, func(key string, val any) error {
		var err error
		switch key {
		case "slots":
			hasSlots = true
			sh.Ranges, err = parseRanges(val)
		case "nodes":
			hasNodes = true
			nodes, err = array(val, `"nodes"`)
		}
		return err
	})
	if err != nil {
		return Shard{}, err
	}
	if !hasSlots {
		return Shard{}, errors.New(`no "slots" field`)
	}
	if !hasNodes {
		return Shard{}, errors.New(`no "nodes" field`)
	}
	for j, n := range nodes {
		nd, err := parseShardNode(n, tls)
		if err != nil {
			return Shard{}, fmt.Errorf("node %d: %w", j, err)
		}
		online := nd.health == "online"
		switch nd.role {
		case "master":
			if sh.Master == "" || (online && !masterOnline) {
				sh.Master, masterOnline = nd.addr, online
			}
		case "replica", "slave":
			if online {
				sh.Replicas = append(sh.Replicas, nd.addr)
			}
		default:
			return Shard{}, fmt.Errorf("node %d: unknown role %q", j, nd.role)
		}
	}
	if sh.Master == "" && len(sh.Ranges) > 0 {
		return Shard{}, errors.New("serves slots but has no node with role master")
	}
	return sh, nil
}

// shardNode is what ParseShards needs of a node of a CLUSTER SHARDS reply.
type shardNode struct {
	addr, role, health string
}

// parseShardNode parses one node of a CLUSTER SHARDS shard. Its port is
// the TLS one when tls is set, the plain one otherwise, and the other when
// the node lists only that.
func parseShardNode(n any, tls bool) (shardNode, error) {
	var (
		nd                  shardNode
		ip, endpoint        string
		port, tlsPort       int64
		hasPort, hasTLSPort bool
	)
	err := fields(n, func(key string, val any) error {
		var ok bool
		switch key {
		case "ip":
			ip, ok = str(val)
		case "endpoint":
			endpoint, ok = str(val)
		case "port":
			port, ok = integer(val)
			hasPort = ok && port > 0
		case "tls-port":
			tlsPort, ok = integer(val)
			hasTLSPort = ok && tlsPort > 0
		case "role":
			nd.role, ok = str(val)
		case "health":
			nd.health, ok = str(val)
		default:
			return nil
		}
		if !ok {
			return fmt.Errorf("field %q: unexpected %T", key, val)
		}
		return nil
	})
	if err != nil {
		return shardNode{}, err
	}
	if nd.role == "" {
		return shardNode{}, errors.New(`no "role" field`)
	}
	switch {
	case !hasPort && !hasTLSPort:
		return shardNode{}, errors.New(`no "port" or "tls-port" field`)
	case hasTLSPort && (tls || !hasPort):
		port = tlsPort
	}
	if port > 65535 {
		return shardNode{}, fmt.Errorf("invalid port %d", port)
	}
	host := endpoint
	if host == "" || host == "?" {
		host = ip
	}
	nd.addr = net.JoinHostPort(host, strconv.FormatInt(port, 10))
	return nd, nil
}

// parseRanges parses the "slots" of a CLUSTER SHARDS shard: a flat array of
// start/end pairs, or an array of two-element arrays.
func parseRanges(v any) ([][2]int, error) {
	list, err := array(v, `"slots"`)
	if err != nil {
		return nil, err
	}
	var nums []any
	for _, e := range list {
		if pair, ok := e.([]any); ok {
			if len(pair) != 2 {
				return nil, fmt.Errorf(`"slots": range of %d elements`, len(pair))
			}
			nums = append(nums, pair...)
		} else {
			nums = append(nums, e)
		}
	}
	if len(nums)%2 != 0 {
		return nil, fmt.Errorf(`"slots": odd number of bounds (%d)`, len(nums))
	}
	ranges := make([][2]int, 0, len(nums)/2)
	for i := 0; i < len(nums); i += 2 {
		r, err := slotRange(nums[i], nums[i+1])
		if err != nil {
			return nil, fmt.Errorf(`"slots": %w`, err)
		}
		ranges = append(ranges, r)
	}
	return ranges, nil
}

// slotRange checks and returns the inclusive slot range [start, end].
func slotRange(start, end any) ([2]int, error) {
	s, ok1 := integer(start)
	e, ok2 := integer(end)
	if !ok1 || !ok2 {
		return [2]int{}, fmt.Errorf("slot range bounds %T, %T are not integers", start, end)
	}
	if s < 0 || e >= Slots || s > e {
		return [2]int{}, fmt.Errorf("invalid slot range %d-%d", s, e)
	}
	return [2]int{int(s), int(e)}, nil
}

// ParseSlots parses a CLUSTER SLOTS reply, the fallback for servers older
// than Redis 7.0, into one [Shard] per master, ordered by first slot.
//
// The reply is an array of slot ranges, each an array of start, end, the
// master node and then its replicas, a node being an array of host, port and
// optionally the node id and a map of metadata. Ranges of the same master are
// merged into one Shard, whose replicas are those listed with its first
// range. A host that is nil, empty or "?" (an unknown endpoint) gives an
// address ":port": the caller fills in the host of the node that sent the
// reply. Redis leaves failed and still-loading replicas out of this reply.
//
// On a cluster with tls-cluster yes the port of each node is that of the
// connection the reply came over — the TLS port for a TLS connection, the
// plain port otherwise (Redis 7.0 behaves so) — so one parser serves both.
func ParseSlots(reply any) ([]Shard, error) {
	list, err := array(reply, "CLUSTER SLOTS reply")
	if err != nil {
		return nil, err
	}
	var shards []Shard
	for i, item := range list {
		entry, ok := item.([]any)
		if !ok || len(entry) < 3 {
			return nil, fmt.Errorf("cluster: CLUSTER SLOTS entry %d: want an array of at least 3 elements, got %T", i, item)
		}
		r, err := slotRange(entry[0], entry[1])
		if err != nil {
			return nil, fmt.Errorf("cluster: CLUSTER SLOTS entry %d: %w", i, err)
		}
		sh := Shard{Ranges: [][2]int{r}}
		for j, n := range entry[2:] {
			addr, err := slotsNode(n)
			if err != nil {
				return nil, fmt.Errorf("cluster: CLUSTER SLOTS entry %d node %d: %w", i, j, err)
			}
			if j == 0 {
				sh.Master = addr
			} else {
				sh.Replicas = append(sh.Replicas, addr)
			}
		}
		shards = append(shards, sh)
	}
	return normalize(shards), nil
}

// slotsNode returns the address of a node of a CLUSTER SLOTS entry.
func slotsNode(n any) (string, error) {
	node, ok := n.([]any)
	if !ok || len(node) < 2 {
		return "", fmt.Errorf("want an array of at least 2 elements, got %T", n)
	}
	var host string
	if node[0] != nil {
		if host, ok = str(node[0]); !ok {
			return "", fmt.Errorf("host: unexpected %T", node[0])
		}
	}
	if host == "?" {
		host = ""
	}
	port, ok := integer(node[1])
	if !ok || port <= 0 || port > 65535 {
		return "", fmt.Errorf("invalid port %v", node[1])
	}
	return net.JoinHostPort(host, strconv.FormatInt(port, 10)), nil
}

// normalize merges shards with the same master (keeping the replicas of the
// first), sorts each shard's ranges and orders the shards by first slot.
func normalize(shards []Shard) []Shard {
	out := make([]Shard, 0, len(shards))
	index := make(map[string]int, len(shards))
	for _, sh := range shards {
		if i, ok := index[sh.Master]; ok {
			out[i].Ranges = append(out[i].Ranges, sh.Ranges...)
			continue
		}
		index[sh.Master] = len(out)
		out = append(out, sh)
	}
	for i := range out {
		slices.SortFunc(out[i].Ranges, func(a, b [2]int) int { return a[0] - b[0] })
	}
	slices.SortStableFunc(out, func(a, b Shard) int { return firstSlot(a) - firstSlot(b) })
	return out
}

// firstSlot returns the lowest slot of sh's sorted ranges, or Slots if none.
func firstSlot(sh Shard) int {
	if len(sh.Ranges) == 0 {
		return Slots
	}
	return sh.Ranges[0][0]
}

// array returns v as an array, or an error naming what.
func array(v any, what string) ([]any, error) {
	switch v := v.(type) {
	case []any:
		return v, nil
	case error:
		return nil, fmt.Errorf("cluster: %s is an error: %w", what, v)
	default:
		return nil, fmt.Errorf("cluster: %s is %T, want an array", what, v)
	}
}

// fields calls fn with each key and value of a map: a flat key/value array
// (RESP2), a map[string]any or a map[any]any (RESP3). It stops at the first
// error fn returns.
func fields(v any, fn func(key string, val any) error) error {
	switch m := v.(type) {
	case []any:
		if len(m)%2 != 0 {
			return fmt.Errorf("map as array of odd length %d", len(m))
		}
		for i := 0; i < len(m); i += 2 {
			key, ok := str(m[i])
			if !ok {
				return fmt.Errorf("map key is %T, want a string", m[i])
			}
			if err := fn(key, m[i+1]); err != nil {
				return err
			}
		}
	case map[string]any:
		for key, val := range m {
			if err := fn(key, val); err != nil {
				return err
			}
		}
	case map[any]any:
		for k, val := range m {
			key, ok := str(k)
			if !ok {
				return fmt.Errorf("map key is %T, want a string", k)
			}
			if err := fn(key, val); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("%T is not a map", v)
	}
	return nil
}

// str returns v as a string if it is a bulk ([]byte) or simple string.
func str(v any) (string, bool) {
	switch v := v.(type) {
	case []byte:
		return string(v), true
	case string:
		return v, true
	default:
		return "", false
	}
}

// integer returns v as an int64 if it is an integer, or a string holding one.
func integer(v any) (int64, bool) {
	switch v := v.(type) {
	case int64:
		return v, true
	case int:
		return int64(v), true
	case []byte:
		n, err := strconv.ParseInt(string(v), 10, 64)
		return n, err == nil
	case string:
		n, err := strconv.ParseInt(v, 10, 64)
		return n, err == nil
	default:
		return 0, false
	}
}

// Map is an immutable slot map: which shard serves each slot. Its methods
// are safe for concurrent use, and a nil *Map has no slot assigned.
type Map struct {
	shards   []Shard
	owner    [Slots]uint16 // 0: unassigned; i+1: shards[i]
	assigned int
	masters  []string // distinct masters serving at least one slot, sorted
}

// NewMap builds a Map from shards, copying them, so the caller may reuse the
// slice. A slot listed by several shards goes to the last one; ranges are
// clipped to the valid slots 0..Slots-1.
func NewMap(shards []Shard) *Map {
	m := &Map{shards: make([]Shard, len(shards))}
	for i, sh := range shards {
		m.shards[i] = Shard{
			Master:   sh.Master,
			Replicas: slices.Clone(sh.Replicas),
			Ranges:   slices.Clone(sh.Ranges),
		}
		for _, r := range sh.Ranges {
			for slot := max(r[0], 0); slot <= min(r[1], Slots-1); slot++ {
				m.owner[slot] = uint16(i + 1)
			}
		}
	}
	serving := make([]bool, len(shards))
	for _, o := range m.owner {
		if o != 0 {
			m.assigned++
			serving[o-1] = true
		}
	}
	for i, ok := range serving {
		if ok {
			m.masters = append(m.masters, m.shards[i].Master)
		}
	}
	slices.Sort(m.masters)
	m.masters = slices.Compact(m.masters)
	return m
}

// Shard returns the shard serving slot, and false if the slot is unassigned
// or out of range. The returned slices belong to the map: do not modify them.
func (m *Map) Shard(slot int) (Shard, bool) {
	if m == nil || slot < 0 || slot >= Slots || m.owner[slot] == 0 {
		return Shard{}, false
	}
	return m.shards[m.owner[slot]-1], true
}

// Master returns the address of the master serving slot, or "" if the slot
// is unassigned or out of range.
func (m *Map) Master(slot int) string {
	if m == nil || slot < 0 || slot >= Slots || m.owner[slot] == 0 {
		return ""
	}
	return m.shards[m.owner[slot]-1].Master
}

// Masters returns the distinct addresses of the masters serving at least one
// slot, sorted. The slice is a copy.
func (m *Map) Masters() []string {
	if m == nil {
		return nil
	}
	return slices.Clone(m.masters)
}

// Covered reports whether every slot is assigned to a master.
func (m *Map) Covered() bool {
	return m != nil && m.assigned == Slots
}

// Redirect is a MOVED or ASK redirection parsed by [ParseRedirect].
type Redirect struct {
	// Ask is true for ASK (send ASKING, then the command, to Addr, once, and
	// keep the slot map), false for MOVED (the slot now lives at Addr).
	Ask bool
	// Slot is the slot of the redirected key.
	Slot int
	// Addr is the address to go to, host:port (an IPv6 host in brackets).
	// An empty host (":6381") means the host of the node that sent the
	// redirection, which the caller must fill in.
	Addr string
}

// ParseRedirect parses the message of a MOVED or ASK error reply, such as
// "MOVED 3999 127.0.0.1:6381" or "ASK 3999 127.0.0.1:6381", without the
// leading '-'. It reports false for any other message, including a slot out
// of range or a missing or invalid port. An empty host, as in
// "MOVED 3999 :6381" (sent when the cluster's preferred endpoint type is
// unknown-endpoint), is kept empty: Addr is ":6381" and the caller fills in
// the host of the node that replied. An IPv6 host, which Redis sends without
// brackets ("MOVED 3999 ::1:6381"), is returned in brackets ("[::1]:6381"),
// ready for net.Dial.
func ParseRedirect(msg string) (Redirect, bool) {
	kind, rest, ok := strings.Cut(strings.TrimSpace(msg), " ")
	if !ok {
		return Redirect{}, false
	}
	var r Redirect
	switch kind {
	case "MOVED":
	case "ASK":
		r.Ask = true
	default:
		return Redirect{}, false
	}
	slot, addr, ok := strings.Cut(rest, " ")
	if !ok || strings.ContainsAny(addr, " \t\r\n") {
		return Redirect{}, false
	}
	n, err := strconv.Atoi(slot)
	if err != nil || n < 0 || n >= Slots {
		return Redirect{}, false
	}
	r.Slot = n
	colon := strings.LastIndexByte(addr, ':')
	if colon < 0 {
		return Redirect{}, false
	}
	host, port := addr[:colon], addr[colon+1:]
	if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
		return Redirect{}, false
	}
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		r.Addr = addr
	} else if strings.IndexByte(host, ':') >= 0 {
		r.Addr = net.JoinHostPort(host, port)
	} else {
		r.Addr = addr
	}
	return r, true
}
