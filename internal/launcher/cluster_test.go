package launcher

import (
	"context"
	"errors"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseClusterNodes(t *testing.T) {
	const text = "" +
		"07c3 127.0.0.1:30004@31004,host-4 slave e7d1 0 1426238317239 4 connected\n" +
		"67ed 127.0.0.1:30002@31002 master - 0 1426238316232 2 connected 5461-10922 [5000->-e7d1]\n" +
		"292f :30003@31003 myself,master - 0 0 3 connected 10923-16383 17 [18-<-67ed]\n" +
		"e7d1 127.0.0.1:30001@31001 master,fail - 1426238316232 1426238316232 1 disconnected\n" +
		"\n"
	got, err := parseClusterNodes(text, "127.0.0.9")
	if err != nil {
		t.Fatal(err)
	}
	want := []clusterNode{
		{id: "07c3", addr: "127.0.0.1:30004", flags: []string{"slave"}, masterID: "e7d1"},
		{id: "67ed", addr: "127.0.0.1:30002", flags: []string{"master"}, masterID: "-", slots: [][2]int{{5461, 10922}}},
		{id: "292f", addr: "127.0.0.9:30003", flags: []string{"myself", "master"}, masterID: "-", slots: [][2]int{{10923, 16383}, {17, 17}}},
		{id: "e7d1", addr: "127.0.0.1:30001", flags: []string{"master", "fail"}, masterID: "-"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parseClusterNodes =\n%+v\nwant\n%+v", got, want)
	}
	if n := owner(got, 17); n == nil || n.id != "292f" {
		t.Errorf("owner(17) = %+v", n)
	}
	if n := owner(got, 0); n != nil {
		t.Errorf("owner(0) = %+v, want nil", n)
	}
	if n := myself(got); n == nil || n.id != "292f" {
		t.Errorf("myself = %+v", n)
	}
	if !got[3].down() || got[1].down() {
		t.Error("down() is wrong")
	}
	for _, bad := range []string{"", "a b c\n", "id noport master - 0 0 1 connected\n", "id 1.2.3.4:5@6 master - 0 0 1 connected 9-x\n", "id 1.2.3.4:5@6 master - 0 0 1 connected 1-16384\n"} {
		if v, err := parseClusterNodes(bad, "h"); err == nil {
			t.Errorf("parseClusterNodes(%q) = %+v, want an error", bad, v)
		}
	}
}

func TestStartClusterInvalidOptions(t *testing.T) {
	for _, o := range []ClusterOptions{{Masters: 2}, {Masters: -1}, {Replicas: -1}, {NodeTimeout: -time.Second}} {
		if c, err := StartCluster(t.Context(), o); err == nil {
			_ = c.Stop()
			t.Errorf("StartCluster(%+v) succeeded", o)
		}
	}
}

func TestExternalClusterParse(t *testing.T) {
	c, err := externalCluster(" 127.0.0.1:7000, :7001,,127.0.0.1:7000 ")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Addrs(), []string{"127.0.0.1:7000", "127.0.0.1:7001"}; !slices.Equal(got, want) {
		t.Errorf("Addrs = %v, want %v", got, want)
	}
	for _, bad := range []string{",", "127.0.0.1", "127.0.0.1:0", "h:x"} {
		if _, err := externalCluster(bad); err == nil {
			t.Errorf("externalCluster(%q) succeeded", bad)
		}
	}
}

// TestStartClusterCreateFails checks that a failed creation reports
// the node's refusal and the nodes' logs, and stops the nodes.
func TestStartClusterCreateFails(t *testing.T) {
	requireRedisInternal(t)
	_, err := StartCluster(t.Context(), ClusterOptions{Args: []string{"--cluster-enabled", "no"}})
	if err == nil {
		t.Fatal("StartCluster with cluster mode off succeeded")
	}
	msg := err.Error()
	for _, want := range []string{"create the cluster", "cluster support disabled", "--- end of "} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not mention %q:\n%s", want, msg)
		}
	}
	logs := regexp.MustCompile(`--- end of (\S+)/redis\.log`).FindAllStringSubmatch(msg, -1)
	if len(logs) != 3 {
		t.Errorf("error quotes %d logs, want 3", len(logs))
	}
	for _, m := range logs {
		if _, err := os.Stat(m[1]); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("node dir %s left behind: %v", m[1], err)
		}
	}
}

// requireRedisInternal skips or fails t as ClusterForTest would when
// redis-server is not installed.
func requireRedisInternal(t *testing.T) {
	t.Helper()
	if err := Available(); err != nil {
		if os.Getenv(envSkip) == "1" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
}

// TestCluster runs a 3-master cluster without replicas through the Cluster
// helpers, as a started and as an external cluster. The failover of a master
// to its replica is tested in internal/cluster.
func TestCluster(t *testing.T) {
	if os.Getenv(envCluster) != "" {
		t.Skip("checks a started cluster")
	}
	c := ClusterForTest(t, ClusterOptions{Args: []string{"--maxmemory", "10mb"}})
	ctx := func(t *testing.T) context.Context {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		t.Cleanup(cancel)
		return ctx
	}

	t.Run("Basics", func(t *testing.T) {
		if c.External() || len(c.Nodes()) != 3 || len(c.Addrs()) != 3 {
			t.Fatalf("External %v, %d nodes, %d addrs", c.External(), len(c.Nodes()), len(c.Addrs()))
		}
		masters, err := c.Masters(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		if len(masters) != 3 {
			t.Fatalf("Masters = %v", masters)
		}
		for _, s := range masters {
			if !slices.Contains(c.Nodes(), s) {
				t.Errorf("master %s is not among Nodes", s.Addr())
			}
			out, err := s.CLI(ctx(t), "config", "get", "maxmemory")
			if err != nil || !strings.HasSuffix(out, strconv.Itoa(10<<20)) {
				t.Errorf("%s: CONFIG GET maxmemory = %q, %v", s.Addr(), out, err)
			}
		}
		// redis-cli splits the slots evenly, in the order of the masters.
		for i, slot := range []int{0, 5460, 5461, 10922, 10923, 16383} {
			s, err := c.MasterOf(ctx(t), slot)
			if err != nil {
				t.Fatal(err)
			}
			if s != masters[i/2] {
				t.Errorf("MasterOf(%d) = %s, want %s", slot, s.Addr(), masters[i/2].Addr())
			}
		}
		if _, err := c.MasterOf(ctx(t), clusterSlots); err == nil {
			t.Error("MasterOf(16384) succeeded")
		}
		if err := c.WaitOK(ctx(t)); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("MoveSlotErrors", func(t *testing.T) {
		if err := c.MoveSlot(ctx(t), -1, c.Nodes()[0]); err == nil {
			t.Error("MoveSlot(-1) succeeded")
		}
		stranger := &Server{host: "127.0.0.1", port: 1}
		if err := c.MoveSlot(ctx(t), 0, stranger); err == nil {
			t.Error("MoveSlot to a server outside the cluster succeeded")
		}
		if err := c.MoveSlot(ctx(t), 0, nil); err == nil {
			t.Error("MoveSlot to nil succeeded")
		}
	})

	t.Run("MoveSlot", func(t *testing.T) {
		from, err := c.MasterOf(ctx(t), 100)
		if err != nil {
			t.Fatal(err)
		}
		to := c.Nodes()[2]
		if err := c.MoveSlot(ctx(t), 100, to); err != nil {
			t.Fatal(err)
		}
		if got, err := c.MasterOf(ctx(t), 100); err != nil || got != to {
			t.Fatalf("MasterOf(100) after the move = %v, %v; want %s (from %s)", got, err, to.Addr(), from.Addr())
		}
		if err := c.WaitOK(ctx(t)); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("External", func(t *testing.T) {
		// One seed: the others are discovered from its CLUSTER NODES.
		t.Setenv(envCluster, c.Addrs()[1])
		e := ClusterForTest(t, ClusterOptions{Masters: 99})
		if !e.External() || !slices.Equal(e.Addrs(), c.Addrs()[1:2]) {
			t.Fatalf("External %v, Addrs %v", e.External(), e.Addrs())
		}
		masters, err := e.Masters(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		var got, want []string
		for _, s := range masters {
			got = append(got, s.Addr())
		}
		for _, s := range c.Nodes() {
			want = append(want, s.Addr())
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("external Masters = %v, want %v", got, want)
		}
		for _, slot := range []int{0, 100, 8000, 16383} {
			es, err := e.MasterOf(ctx(t), slot)
			if err != nil {
				t.Fatal(err)
			}
			cs, err := c.MasterOf(ctx(t), slot)
			if err != nil {
				t.Fatal(err)
			}
			if es.Addr() != cs.Addr() {
				t.Errorf("external MasterOf(%d) = %s, want %s", slot, es.Addr(), cs.Addr())
			}
			if err := es.Kill(); err == nil {
				t.Error("Kill of an external cluster's node succeeded")
			}
		}
		if err := e.WaitOK(ctx(t)); err != nil {
			t.Fatal(err)
		}
		if err := e.MoveSlot(ctx(t), 0, e.Nodes()[0]); err == nil {
			t.Error("MoveSlot on an external cluster succeeded")
		}
		if err := e.Nodes()[0].Restart(ctx(t)); err == nil {
			t.Error("Restart of an external cluster's node succeeded")
		}
		if err := e.Stop(); err != nil {
			t.Errorf("Stop of an external cluster: %v", err)
		}
		if out, err := c.Nodes()[1].CLI(ctx(t), "ping"); err != nil || out != "PONG" {
			t.Errorf("Stop of the external handle stopped a node: %q, %v", out, err)
		}
	})

	t.Run("KillRestart", func(t *testing.T) {
		victim, err := c.MasterOf(ctx(t), 16383)
		if err != nil {
			t.Fatal(err)
		}
		if err := victim.Kill(); err != nil {
			t.Fatal(err)
		}
		if s, err := c.MasterOf(ctx(t), 16383); err == nil {
			t.Errorf("MasterOf(16383) with its master killed = %s", s.Addr())
		}
		masters, err := c.Masters(ctx(t))
		if err != nil || len(masters) != 2 || slices.Contains(masters, victim) {
			t.Errorf("Masters with one killed = %v, %v", masters, err)
		}
		short, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		if err := c.WaitOK(short); err == nil {
			t.Error("WaitOK succeeded with a master (without replica) killed")
		} else if !strings.Contains(err.Error(), "is not running") || !strings.Contains(err.Error(), "--- end of ") {
			t.Errorf("WaitOK error does not say why, or quote the logs: %v", err)
		}
		// nodes.conf brings it back as the master of the same slots.
		if err := victim.Restart(ctx(t)); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitOK(ctx(t)); err != nil {
			t.Fatal(err)
		}
		if s, err := c.MasterOf(ctx(t), 16383); err != nil || s != victim {
			t.Errorf("MasterOf(16383) after restart = %v, %v; want %s", s, err, victim.Addr())
		}
	})

	t.Run("Stop", func(t *testing.T) {
		if err := c.Stop(); err != nil {
			t.Fatal(err)
		}
		for _, s := range c.Nodes() {
			if _, err := os.Stat(s.Dir()); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("dir %s still there after Stop: %v", s.Dir(), err)
			}
		}
		if err := c.Stop(); err != nil {
			t.Errorf("second Stop: %v", err)
		}
		if _, err := c.Masters(ctx(t)); err == nil {
			t.Error("Masters of a stopped cluster succeeded")
		}
	})
}
