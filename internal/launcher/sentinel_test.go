package launcher_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/launcher"
)

// TestSentinelGroup starts 1 master, 2 replicas and 3 sentinels, then
// fails the master over twice — a crash, then a manual failover — with
// the crashed master brought back as a replica in between.
func TestSentinelGroup(t *testing.T) {
	wait := func(t *testing.T) context.Context {
		c, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		t.Cleanup(cancel)
		return c
	}
	g := launcher.SentinelForTest(t, launcher.SentinelOptions{Password: "data-secret", SentinelPassword: "sentinel-secret"})
	if len(g.Nodes()) != 3 || len(g.Sentinels()) != 3 || len(g.SentinelAddrs()) != 3 || g.Name() != "mymaster" {
		t.Fatalf("%d nodes, %d sentinels, name %q", len(g.Nodes()), len(g.Sentinels()), g.Name())
	}
	first, err := g.Master(wait(t))
	if err != nil {
		t.Fatal(err)
	}
	if first != g.Nodes()[0] {
		t.Fatalf("Master = %s, want the first node %s", first.Addr(), g.Nodes()[0].Addr())
	}
	// The sentinels require their password, the data nodes theirs.
	if out, err := g.Sentinels()[0].CLI(wait(t), "SENTINEL", "MASTERS"); err != nil || !strings.Contains(out, "mymaster") {
		t.Fatalf("SENTINEL MASTERS = %q, %v", out, err)
	}
	if _, err := first.CLI(wait(t), "SET", "k", "v"); err != nil {
		t.Fatal(err)
	}

	killed, err := g.KillMaster(wait(t))
	if err != nil || killed != first {
		t.Fatalf("KillMaster = %v, %v", killed, err)
	}
	start := time.Now()
	second, err := g.WaitMaster(wait(t), killed)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("failover after a crash: %s -> %s in %v", killed.Addr(), second.Addr(), time.Since(start).Round(time.Millisecond))
	if out, err := second.CLI(wait(t), "GET", "k"); err != nil || out != "v" {
		t.Errorf("GET k on the new master = %q, %v", out, err)
	}
	if err := g.RestartReplica(wait(t), killed); err != nil {
		t.Fatal(err)
	}
	if out, err := killed.CLI(wait(t), "ROLE"); err != nil || !strings.HasPrefix(out, "slave") {
		t.Errorf("ROLE of the restarted master = %q, %v; want slave", out, err)
	}

	start = time.Now()
	third, err := g.Failover(wait(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("manual failover: %s -> %s in %v", second.Addr(), third.Addr(), time.Since(start).Round(time.Millisecond))
	if third == second {
		t.Fatalf("Failover kept %s", third.Addr())
	}
	if out, err := second.CLI(wait(t), "ROLE"); err != nil || !strings.HasPrefix(out, "slave") {
		t.Errorf("ROLE of the former master = %q, %v; want slave", out, err)
	}
}

func TestStartSentinelInvalidOptions(t *testing.T) {
	for _, o := range []launcher.SentinelOptions{{Replicas: -1}, {Sentinels: -1}, {DownAfter: -time.Second}, {Master: "a b"}} {
		if g, err := launcher.StartSentinel(t.Context(), o); err == nil {
			_ = g.Stop()
			t.Errorf("StartSentinel(%+v) succeeded", o)
		}
	}
}
