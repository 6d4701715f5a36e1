package topology

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redisx-go/kit/internal/launcher"
)

// TestLiveCluster runs every check against a real cluster: one cluster for
// the whole package, 3 masters with 1 replica each, shared by the subtests,
// which run in order; the failover runs last since it changes the topology.
func TestLiveCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 6-node cluster")
	}
	start := time.Now()
	c := launcher.ClusterForTest(t, launcher.ClusterOptions{Replicas: 1})
	t.Logf("cluster of %d nodes ready in %v", len(c.Nodes()), time.Since(start))

	t.Run("Shards", func(t *testing.T) { testShards(t, c) })
	t.Run("Slots", func(t *testing.T) { testSlots(t, c) })
	t.Run("KeySlot", func(t *testing.T) { testKeySlot(t, c) })
	t.Run("Routing", func(t *testing.T) { testRouting(t, c) })
	t.Run("MoveSlot", func(t *testing.T) { testMoveSlot(t, c) })
	t.Run("Failover", func(t *testing.T) { testFailover(t, c) })
}

// redigoDial connects to addr and closes the connection when t ends.
func redigoDial(t *testing.T, addr string) redis.Conn {
	t.Helper()
	conn, err := redis.Dial("tcp", addr,
		redis.DialConnectTimeout(2*time.Second),
		redis.DialReadTimeout(5*time.Second),
		redis.DialWriteTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// timeout returns a context that is done after d or when t ends.
func timeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// fetchMap asks addr for its slot map with cmd ("SHARDS" or "SLOTS").
func fetchMap(t *testing.T, addr, cmd string) ([]Shard, *Map) {
	t.Helper()
	reply, err := redigoDial(t, addr).Do("CLUSTER", cmd)
	if err != nil {
		t.Fatalf("%s: CLUSTER %s: %v", addr, cmd, err)
	}
	parse := ParseShards
	if cmd == "SLOTS" {
		parse = ParseSlots
	}
	shards, err := parse(reply)
	if err != nil {
		t.Fatalf("%s: parse CLUSTER %s: %v", addr, cmd, err)
	}
	return shards, NewMap(shards)
}

// checkHealthy checks a slot map of the test cluster: every slot served,
// 3 masters, each with 1 replica, the masters being those the launcher sees.
func checkHealthy(t *testing.T, c *launcher.Cluster, from, cmd string, shards []Shard, m *Map) {
	t.Helper()
	if !m.Covered() {
		t.Errorf("%s: CLUSTER %s: not every slot is covered: %+v", from, cmd, shards)
	}
	if len(shards) != 3 || len(m.Masters()) != 3 {
		t.Errorf("%s: CLUSTER %s: %d shards, masters %v; want 3", from, cmd, len(shards), m.Masters())
	}
	for _, sh := range shards {
		if len(sh.Replicas) != 1 {
			t.Errorf("%s: CLUSTER %s: master %s has replicas %v, want 1", from, cmd, sh.Master, sh.Replicas)
		}
	}
	masters, err := c.Masters(timeout(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, s := range masters {
		want = append(want, s.Addr())
	}
	slices.Sort(want)
	if !c.External() && !slices.Equal(m.Masters(), want) {
		t.Errorf("%s: CLUSTER %s: masters %v, launcher says %v", from, cmd, m.Masters(), want)
	}
}

func testShards(t *testing.T, c *launcher.Cluster) {
	for _, addr := range c.Addrs() {
		shards, m := fetchMap(t, addr, "SHARDS")
		checkHealthy(t, c, addr, "SHARDS", shards, m)
	}
}

func testSlots(t *testing.T, c *launcher.Cluster) {
	for _, addr := range c.Addrs() {
		shards, m := fetchMap(t, addr, "SLOTS")
		checkHealthy(t, c, addr, "SLOTS", shards, m)
		_, fromShards := fetchMap(t, addr, "SHARDS")
		for slot := range Slots {
			if m.Master(slot) != fromShards.Master(slot) {
				t.Fatalf("%s: slot %d: CLUSTER SLOTS says %s, CLUSTER SHARDS says %s",
					addr, slot, m.Master(slot), fromShards.Master(slot))
			}
		}
	}
}

// testKeySlot compares Slot with the server's CLUSTER KEYSLOT on random
// binary keys, some with hash tags.
func testKeySlot(t *testing.T, c *launcher.Cluster) {
	conn := redigoDial(t, c.Addrs()[0])
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte("{}{}ab\x00\xff\x80 ")
	keys := make([]string, 2000)
	for i := range keys {
		k := make([]byte, r.IntN(24))
		for j := range k {
			if r.IntN(2) == 0 {
				k[j] = alphabet[r.IntN(len(alphabet))]
			} else {
				k[j] = byte(r.IntN(256))
			}
		}
		keys[i] = string(k)
		if err := conn.Send("CLUSTER", "KEYSLOT", k); err != nil {
			t.Fatal(err)
		}
	}
	if err := conn.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		want, err := redis.Int(conn.Receive())
		if err != nil {
			t.Fatal(err)
		}
		if got := Slot(k); got != want {
			t.Errorf("Slot(%q) = %d, CLUSTER KEYSLOT says %d", k, got, want)
		}
	}
}

// testRouting checks that the master the map names for a key serves it
// without redirection, and that another master redirects to it.
func testRouting(t *testing.T, c *launcher.Cluster) {
	_, m := fetchMap(t, c.Addrs()[0], "SHARDS")
	for i := range 12 {
		key := fmt.Sprintf("routing:%d", i)
		owner := m.Master(Slot(key))
		conn := redigoDial(t, owner)
		if _, err := conn.Do("SET", key, i); err != nil {
			t.Fatalf("SET %s at %s: %v", key, owner, err)
		}
		if got, err := redis.Int(conn.Do("GET", key)); err != nil || got != i {
			t.Fatalf("GET %s at %s = %v, %v; want %d", key, owner, got, err, i)
		}
		other := m.Masters()[0]
		if other == owner {
			other = m.Masters()[1]
		}
		_, err := redigoDial(t, other).Do("GET", key)
		var rerr redis.Error
		if !errors.As(err, &rerr) {
			t.Fatalf("GET %s at %s: %v, want a MOVED error", key, other, err)
		}
		r, ok := ParseRedirect(rerr.Error())
		if !ok || r.Ask || r.Slot != Slot(key) || r.Addr != owner {
			t.Fatalf("GET %s at %s: %q parsed as %+v, %v; want MOVED %d %s", key, other, rerr, r, ok, Slot(key), owner)
		}
	}
}

func testMoveSlot(t *testing.T, c *launcher.Cluster) {
	if c.External() {
		t.Skip("cannot move slots of an external cluster")
	}
	ctx := timeout(t, 30*time.Second)
	const tag = "{move}"
	slot := Slot(tag)
	from, err := c.MasterOf(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	masters, err := c.Masters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var to *launcher.Server
	for _, s := range masters {
		if s != from {
			to = s
			break
		}
	}
	if to == nil {
		t.Fatalf("no master other than %s among %v", from.Addr(), masters)
	}

	// More keys than one MIGRATE batch.
	const n = 250
	src := redigoDial(t, from.Addr())
	for i := range n {
		if err := src.Send("SET", fmt.Sprintf("%s:%d", tag, i), i); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := src.Do(""); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	if err := c.MoveSlot(ctx, slot, to); err != nil {
		t.Fatal(err)
	}
	t.Logf("moved slot %d (%d keys) from %s to %s in %v", slot, n, from.Addr(), to.Addr(), time.Since(start))

	if got, err := c.MasterOf(ctx, slot); err != nil || got != to {
		t.Fatalf("MasterOf(%d) = %v, %v; want %s", slot, got, err, to.Addr())
	}
	dst := redigoDial(t, to.Addr())
	for i := range n {
		key := fmt.Sprintf("%s:%d", tag, i)
		if got, err := redis.Int(dst.Do("GET", key)); err != nil || got != i {
			t.Fatalf("GET %s at %s = %v, %v; want %d", key, to.Addr(), got, err, i)
		}
	}
	_, err = src.Do("GET", tag+":0")
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		t.Fatalf("GET at the former master %s: %v, want a MOVED error", from.Addr(), err)
	}
	if r, ok := ParseRedirect(rerr.Error()); !ok || r.Ask || r.Slot != slot || r.Addr != to.Addr() {
		t.Fatalf("GET at the former master: %q parsed as %+v, %v; want MOVED %d %s", rerr, r, ok, slot, to.Addr())
	}
	// Every node's map agrees (MoveSlot waited for that).
	for _, addr := range c.Addrs() {
		if _, m := fetchMap(t, addr, "SHARDS"); m.Master(slot) != to.Addr() || !m.Covered() {
			t.Errorf("%s: CLUSTER SHARDS maps slot %d to %q, want %s", addr, slot, m.Master(slot), to.Addr())
		}
	}
	// Moving a slot to its master is a no-op.
	if err := c.MoveSlot(ctx, slot, to); err != nil {
		t.Errorf("MoveSlot to the current master: %v", err)
	}
}

// testFailover kills a master, waits for its replica to take over, restarts
// the former master and checks that it rejoins as a replica of its successor.
func testFailover(t *testing.T, c *launcher.Cluster) {
	if c.External() {
		t.Skip("cannot kill nodes of an external cluster")
	}
	const key = "{failover}"
	slot := Slot(key)
	victim, err := c.MasterOf(timeout(t, 5*time.Second), slot)
	if err != nil {
		t.Fatal(err)
	}
	shards, m := fetchMap(t, victim.Addr(), "SHARDS")
	sh, _ := m.Shard(slot)
	if sh.Master != victim.Addr() || len(sh.Replicas) != 1 {
		t.Fatalf("shard of slot %d: %+v; want master %s with 1 replica (all: %+v)", slot, sh, victim.Addr(), shards)
	}
	replica := sh.Replicas[0]
	conn := redigoDial(t, victim.Addr())
	if _, err := conn.Do("SET", key, "survives"); err != nil {
		t.Fatal(err)
	}
	if n, err := redis.Int(conn.Do("WAIT", 1, 2000)); err != nil || n != 1 {
		t.Fatalf("WAIT 1 = %v, %v", n, err)
	}

	start := time.Now()
	if err := victim.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitOK(timeout(t, 15*time.Second)); err != nil {
		t.Fatal(err)
	}
	t.Logf("replica promoted, cluster ok %v after the kill", time.Since(start))
	promoted, err := c.MasterOf(timeout(t, 5*time.Second), slot)
	if err != nil {
		t.Fatal(err)
	}
	if promoted.Addr() != replica {
		t.Fatalf("slot %d is served by %s, want the former replica %s", slot, promoted.Addr(), replica)
	}
	if got, err := redis.String(redigoDial(t, replica).Do("GET", key)); err != nil || got != "survives" {
		t.Fatalf("GET %s at the promoted replica = %q, %v", key, got, err)
	}
	masters, err := c.Masters(timeout(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(masters) != 3 || slices.Contains(masters, victim) {
		t.Errorf("Masters() after failover = %v, want 3 without %s", masters, victim.Addr())
	}

	start = time.Now()
	ctx := timeout(t, 15*time.Second)
	if err := victim.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	// The former master rejoins as a replica of the promoted one, and every
	// node's CLUSTER SHARDS lists it as an online replica.
	var last string
	for {
		last = rejoined(t, c, victim, replica)
		if last == "" {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("former master %s did not rejoin as a replica of %s: %s", victim.Addr(), replica, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Logf("former master rejoined as a replica %v after its restart", time.Since(start))
	if err := c.WaitOK(ctx); err != nil {
		t.Fatal(err)
	}
	for _, addr := range c.Addrs() {
		shards, m := fetchMap(t, addr, "SHARDS")
		checkHealthy(t, c, addr, "SHARDS", shards, m)
	}
	// The rejoined replica got the data from its new master.
	rc := redigoDial(t, victim.Addr())
	if _, err := rc.Do("READONLY"); err != nil {
		t.Fatal(err)
	}
	if got, err := redis.String(rc.Do("GET", key)); err != nil || got != "survives" {
		t.Errorf("GET %s at the rejoined replica = %q, %v", key, got, err)
	}
}

// rejoined returns "" once victim is a replica of the node at master,
// according to victim's ROLE and to every node's CLUSTER SHARDS, or else
// what is still missing.
func rejoined(t *testing.T, c *launcher.Cluster, victim *launcher.Server, master string) string {
	t.Helper()
	conn, err := redis.Dial("tcp", victim.Addr(), redis.DialReadTimeout(time.Second))
	if err != nil {
		return err.Error()
	}
	defer conn.Close()
	role, err := redis.Values(conn.Do("ROLE"))
	if err != nil || len(role) < 3 {
		return fmt.Sprintf("ROLE: %v, %v", role, err)
	}
	kind, _ := redis.String(role[0], nil)
	port, _ := redis.Int(role[2], nil)
	if kind != "slave" || fmt.Sprintf("127.0.0.1:%d", port) != master {
		return fmt.Sprintf("ROLE: %s of port %d", kind, port)
	}
	for _, addr := range c.Addrs() {
		conn, err := redis.Dial("tcp", addr, redis.DialReadTimeout(time.Second))
		if err != nil {
			return err.Error()
		}
		reply, err := conn.Do("CLUSTER", "SHARDS")
		_ = conn.Close()
		if err != nil {
			return err.Error()
		}
		shards, err := ParseShards(reply)
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		found := false
		for _, sh := range shards {
			if sh.Master == master && slices.Contains(sh.Replicas, victim.Addr()) {
				found = true
			}
		}
		if !found {
			return fmt.Sprintf("%s: CLUSTER SHARDS does not list %s as an online replica of %s: %+v", addr, victim.Addr(), master, shards)
		}
	}
	return ""
}
