package benchmarks_test

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redisx-go/kit/benchmarks/verdict"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// Bar N1: what a fleet of near-caches costs the server, by tracking mode.

const (
	fleetSize   = 20     // near-cache clients of the fleet
	fleetKeys   = 100    // keys each one caches, its own
	fleetWrites = 20_000 // keys another client writes, none of them read by the fleet
	fleetWriter = 32     // the writer's goroutines
)

// n1 is bar N1: 20 Near clients each cache keys of their own while
// another client writes 20,000 keys none of them read. With TrackKeys
// the server's output per write must be at most 5% of what 20
// TrackBroadcast clients cost in the same run, and the writer's SET rate
// with the fleet attached is compared with its rate without one. The
// fleet, the writer and a server of the bar's own run on the same
// machine; rounds alternate between no fleet, TrackKeys and
// TrackBroadcast. Beside the bar: the server's per-key state of
// TrackKeys (tracking_total_keys, memory), and the misses that its
// tracking-table-max-keys costs (see trackingTableCost).
func (br *bars) n1(t *testing.T) {
	ctx := t.Context()
	srv, err := launcher.Start(ctx, launcher.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	type config struct {
		name  string
		fleet bool
		mode  localcache.Tracking
	}
	configs := []config{{"no fleet", false, 0}, {"TrackKeys fleet", true, localcache.TrackKeys}, {"TrackBroadcast fleet", true, localcache.TrackBroadcast}}
	bytes := map[string][]float64{}
	rates := map[string][]float64{}
	var tracked int64
	for r := range br.rounds {
		for _, c := range configs {
			m := runFleet(t, srv, fmt.Sprintf("n1:%d:%s", r, strings.ReplaceAll(c.name, " ", "-")), c.fleet, c.mode)
			bytes[c.name] = append(bytes[c.name], m.bytesPerWrite)
			rates[c.name] = append(rates[c.name], m.setRate)
			if c.mode == localcache.TrackKeys && c.fleet {
				tracked = m.trackedKeys
			}
		}
	}
	med := func(xs []float64) float64 { return verdict.Median(xs) }
	for _, c := range configs {
		t.Logf("%-21s server output per write median %7.1f B (rounds %s), writer %8.0f SET/s (rounds %s)",
			c.name, med(bytes[c.name]), fmtNs(bytes[c.name]), med(rates[c.name]), fmtQPS(rates[c.name]))
	}
	keys, bcast, none := med(bytes["TrackKeys fleet"]), med(bytes["TrackBroadcast fleet"]), med(bytes["no fleet"])
	t.Logf("TrackKeys fleet: the server's tracking table grew by %d keys (tracking_total_keys) for %d × %d cached", tracked, fleetSize, fleetKeys)
	verdict := map[bool]string{true: "met", false: "MISSED"}
	share := keys / bcast
	br.report = append(br.report, fmt.Sprintf("N1  %-58s %.1f%% (bar <= 5%%) %s", "server output per write, TrackKeys / TrackBroadcast fleet", 100*share, verdict[share <= 0.05]))
	if share > 0.05 {
		t.Errorf("N1: server output per write with a TrackKeys fleet %.1f B = %.1f%% of a TrackBroadcast fleet's %.1f B, want <= 5%%", keys, 100*share, bcast)
	}
	br.aside("N1", keys/none, "server output per write, TrackKeys fleet / no fleet")
	br.bar(t, "N1", med(rates["TrackKeys fleet"])/med(rates["no fleet"]), 0.8, "writer's SET rate, TrackKeys fleet attached / none")
	br.aside("N1", med(rates["TrackBroadcast fleet"])/med(rates["no fleet"]), "writer's SET rate, TrackBroadcast fleet attached / none")
	trackingTableCost(t, br)
}

// fleetRun is one round of one configuration of N1.
type fleetRun struct {
	bytesPerWrite float64 // the server's output bytes per write of the writer
	setRate       float64 // the writer's SETs per second
	trackedKeys   int64   // what tracking_total_keys grew by as the fleet cached its keys
}

// runFleet opens the fleet (when fleet is set), has each client cache
// fleetKeys keys of its own, then has another client write fleetWrites
// keys under prefix from fleetWriter goroutines, and measures the
// server's output bytes (INFO stats total_net_output_bytes) over the
// writes, and their rate.
func runFleet(t *testing.T, srv *launcher.Server, prefix string, fleet bool, mode localcache.Tracking) fleetRun {
	t.Helper()
	ctx := t.Context()
	writer, err := redisx.New(ctx, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: strategy.Multiplexed{}})
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	tracked := infoInt(t, srv, "stats", "tracking_total_keys")
	var clients []*redisx.Client
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	if fleet {
		for i := range fleetSize {
			c, err := redisx.New(ctx, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: localcache.Near{MaxBytes: 4 << 20, Tracking: mode}})
			if err != nil {
				t.Fatal(err)
			}
			clients = append(clients, c)
			for j := range fleetKeys {
				key := fmt.Sprintf("%s:own:%d:%d", prefix, i, j)
				if err := writer.Set(ctx, key, []byte("v"), 0); err != nil {
					t.Fatal(err)
				}
				for range 3 { // the first read stores it, the next ones hit
					if _, err := c.Get(ctx, key); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	var run fleetRun
	run.trackedKeys = infoInt(t, srv, "stats", "tracking_total_keys") - tracked
	before := infoInt(t, srv, "stats", "total_net_output_bytes")
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range fleetWriter {
		wg.Go(func() {
			for {
				k := next.Add(1)
				if k > fleetWrites {
					return
				}
				if err := writer.Set(ctx, prefix+":w:"+strconv.FormatInt(k, 10), []byte("v"), 0); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	run.setRate = fleetWrites / time.Since(start).Seconds()
	time.Sleep(100 * time.Millisecond) // the last invalidations leave the server
	run.bytesPerWrite = float64(infoInt(t, srv, "stats", "total_net_output_bytes")-before) / fleetWrites
	var hits int64
	for _, c := range clients {
		hits += c.Stats().LocalHits
	}
	if fleet && hits < fleetSize*fleetKeys {
		t.Errorf("%s: %d local hits for %d × %d keys read thrice; want the fleet's keys cached", prefix, hits, fleetSize, fleetKeys)
	}
	return run
}

// infoInt reads an integer field of INFO section.
func infoInt(t *testing.T, srv *launcher.Server, section, field string) int64 {
	t.Helper()
	out, err := srv.CLI(t.Context(), "INFO", section)
	if err != nil {
		t.Fatalf("INFO %s: %v", section, err)
	}
	for line := range strings.Lines(out) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("INFO %s %s: %q", section, field, v)
			}
			return n
		}
	}
	t.Fatalf("no %s in INFO %s", field, section)
	return 0
}

// trackingTableCost measures what TrackKeys costs the server per key
// read — tracking_total_keys and used_memory, for one client caching
// 50,000 keys — and the misses of a tracking table too small for the
// keys read: with tracking-table-max-keys at a tenth of them, the server
// evicts keys from its table by invalidating them, so a second pass over
// the keys is mostly misses.
func trackingTableCost(t *testing.T, br *bars) {
	const keys = 50_000
	ctx := t.Context()
	srv, err := launcher.Start(ctx, launcher.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	writer, err := redisx.New(ctx, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: strategy.Multiplexed{}})
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	name := func(i int) string { return "table:" + strconv.Itoa(i) }
	for _, max := range []int{0, keys / 10} {
		// FLUSHALL empties the tracking table too: each limit starts
		// from none.
		for _, cmd := range [][]string{{"FLUSHALL"}, {"CONFIG", "SET", "tracking-table-max-keys", strconv.Itoa(max)}} {
			if _, err := srv.CLI(ctx, cmd...); err != nil {
				t.Fatal(err)
			}
		}
		for i := range keys {
			if err := writer.Set(ctx, name(i), []byte("v"), 0); err != nil {
				t.Fatal(err)
			}
		}
		mem := infoInt(t, srv, "memory", "used_memory")
		c, err := redisx.New(ctx, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: localcache.Near{MaxBytes: 64 << 20}})
		if err != nil {
			t.Fatal(err)
		}
		for i := range keys {
			if _, err := c.Get(ctx, name(i)); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(200 * time.Millisecond) // the evictions' invalidations arrive
		tracked, grown := infoInt(t, srv, "stats", "tracking_total_keys"), infoInt(t, srv, "memory", "used_memory")-mem
		before := c.Stats()
		for i := range keys {
			if _, err := c.Get(ctx, name(i)); err != nil {
				t.Fatal(err)
			}
		}
		after := c.Stats()
		c.Close()
		time.Sleep(200 * time.Millisecond)
		left := infoInt(t, srv, "stats", "tracking_total_keys")
		hitRatio := float64(after.LocalHits-before.LocalHits) / keys
		limit := "unbounded"
		if max > 0 {
			limit = strconv.Itoa(max)
		}
		t.Logf("tracking-table-max-keys %s: %d keys read, %d tracked by the server, used_memory +%d B (%.0f B per key tracked); second pass %.1f%% local hits; %d keys still in the table after the client closed",
			limit, keys, tracked, grown, float64(grown)/float64(max64(tracked, 1)), 100*hitRatio, left)
		br.report = append(br.report, fmt.Sprintf("N1  %-58s %.1f%% (context, not a bar)", "second-pass hits, 50,000 keys, tracking-table-max-keys "+limit, 100*hitRatio))
	}
}

func max64(a, b int64) int64 { return max(a, b) }
