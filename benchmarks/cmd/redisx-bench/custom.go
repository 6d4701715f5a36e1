package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/redisx-go/kit/benchmarks"
	"github.com/redisx-go/kit/benchmarks/profile"
	"github.com/redisx-go/kit/benchmarks/verdict"
	"github.com/redisx-go/kit/benchmarks/workload"
	"github.com/redisx-go/kit/redisx"
)

// The user's workload on the command line: the custom flags, -profile and
// -at, and the answer's address.

// customFlags are the flags that define the custom workload.
var customFlags = []string{"mix", "keys", "key-dist", "value", "batch", "ttl"}

// hasCustom reports whether the flags define the custom workload: a
// custom flag, -profile, or -workloads naming custom.
func (o *options) hasCustom() bool {
	if o.profile != "" || slices.ContainsFunc(customFlags, func(f string) bool { return o.set[f] }) {
		return true
	}
	return slices.Contains(o.workloadNames(), workload.CustomName)
}

// workloadNames are the names -workloads lists.
func (o *options) workloadNames() []string {
	var names []string
	for _, n := range strings.Split(o.workloads, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	return names
}

// custom is the custom workload: DefaultCustom, or the profile's, with
// every custom flag given replacing its part; on the cluster when only
// -cluster names servers, or when the embedded servers run the workload of
// a profiled cluster node.
func (o *options) custom() (workload.Custom, error) {
	c := workload.DefaultCustom()
	if o.profiled != nil {
		c = o.profiled.Custom
	}
	if o.set["mix"] {
		c.Mix = o.mix
	}
	if o.set["key-dist"] {
		c.KeyDist = o.keyDist
	}
	if o.set["value"] {
		c.Value = o.value
	}
	if o.set["keys"] {
		c.Keys = o.keys
	}
	if o.set["batch"] {
		c.Batch = o.batch
	}
	if o.set["ttl"] {
		c.TTL = o.ttl
	}
	named := o.addr != "" || o.url != ""
	c.Cluster = o.cluster != "" && !named || o.cluster == "" && !named && o.profiled != nil && o.profiled.Cluster
	return c, c.Validate()
}

// quickCustomTargets are the targets of the custom workload under -quick.
var quickCustomTargets = []string{"multiplexed", "multiplexed-4", "pool-8", "pool-32", "slotgrouped", "rueidis", "go-redis"}

// addCustom puts the custom workload first in p: alone unless -workloads
// names others too.
func (o *options) addCustom(p *benchmarks.Plan, others []string) error {
	c, err := o.custom()
	if err != nil {
		return err
	}
	if len(others) == 0 {
		p.Workloads = nil
	}
	w := c.Workload()
	if o.quick {
		w.Targets = quickCustomTargets
	}
	p.Workloads = append([]benchmarks.Workload{w}, p.Workloads...)
	return nil
}

// measuredAddrs are the addresses the flags name for measurement.
func (o *options) measuredAddrs() []string {
	var addrs []string
	if o.addr != "" {
		addrs = append(addrs, o.addr)
	}
	if o.url != "" {
		if u, err := redisx.ParseURL(o.url); err == nil {
			addrs = append(addrs, u.Addrs...)
		}
	}
	for _, a := range strings.Split(o.cluster, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	return addrs
}

// profileAddr is the host:port of -profile.
func (o *options) profileAddr() (string, error) {
	raw := o.profile
	if !strings.Contains(raw, "://") {
		raw = "redis://" + raw
	}
	u, err := redisx.ParseURL(raw)
	if err != nil {
		return "", fmt.Errorf("-profile: %w", err)
	}
	return u.Addrs[0], nil
}

// sameServer reports whether the addresses a and b reach the same port
// of the same host: equal host names, or names that resolve to a common
// address ("localhost" and "127.0.0.1").
func sameServer(ctx context.Context, a, b string) bool {
	ha, pa, errA := net.SplitHostPort(a)
	hb, pb, errB := net.SplitHostPort(b)
	if errA != nil || errB != nil || pa != pb {
		return false
	}
	if strings.EqualFold(ha, hb) {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ipa, errA := net.DefaultResolver.LookupHost(ctx, ha)
	ipb, errB := net.DefaultResolver.LookupHost(ctx, hb)
	if errA != nil || errB != nil {
		return false
	}
	return slices.ContainsFunc(ipa, func(ip string) bool { return slices.Contains(ipb, ip) })
}

// runProfile profiles -profile, refusing a server that the run would
// also measure unless -force, and writes the profile and the command
// that runs its workload to stderr.
func (o *options) runProfile(ctx context.Context, args []string, stderr io.Writer) (code int) {
	addr, err := o.profileAddr()
	if err != nil {
		fmt.Fprintln(stderr, "redisx-bench:", err)
		return exitUsage
	}
	for _, m := range o.measuredAddrs() {
		if !o.force && sameServer(ctx, addr, m) {
			fmt.Fprintf(stderr, "redisx-bench: -profile %s is also a server to measure (%s): the run would write to the server it profiles; "+
				"measure another (-addr), or give -force to measure it anyway\n", addr, m)
			return exitUsage
		}
	}
	fmt.Fprintf(stderr, "profiling %s (read-only: INFO, DBSIZE, SCAN, TYPE, PTTL, MEMORY USAGE, OBJECT FREQ)\n", addr)
	p, err := profile.Read(ctx, o.profile, profile.Options{Username: o.user, Password: o.password})
	if err != nil {
		fmt.Fprintln(stderr, "redisx-bench:", err)
		if ctx.Err() != nil {
			return exitInterrupted
		}
		return exitFailed
	}
	o.profiled = p
	c, err := o.custom()
	if err != nil {
		fmt.Fprintln(stderr, "redisx-bench: the profile's workload:", err)
		return exitFailed
	}
	for _, n := range p.Notes {
		fmt.Fprintln(stderr, "  "+n)
	}
	fmt.Fprintf(stderr, "the workload of %s, as flags to edit and run again:\n  %s\n", addr, derivedCommand(args, c))
	return exitOK
}

// boolFlags are the flags that take no value.
var boolFlags = []string{"tls", "peers", "quick", "force", "pin"}

// derivedCommand is the command line args with -profile and the custom
// flags replaced by c's flags, passwords hidden.
func derivedCommand(args []string, c workload.Custom) string {
	var kept []string
	drop := append([]string{"profile"}, customFlags...)
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, hasValue := strings.TrimLeft(a, "-"), false
		if !strings.HasPrefix(a, "-") || a == "-" || a == "--" {
			kept = append(kept, args[i:]...)
			break
		}
		if n, _, ok := strings.Cut(name, "="); ok {
			name, hasValue = n, true
		}
		takesValue := !hasValue && !slices.Contains(boolFlags, name)
		if slices.Contains(drop, name) {
			if takesValue {
				i++
			}
			continue
		}
		kept = append(kept, a)
		if takesValue && i+1 < len(args) {
			i++
			kept = append(kept, args[i])
		}
	}
	return commandLine(append(strings.Fields(c.Flags()), kept...))
}

// pointAnswer points the answer of a run on the embedded servers at the
// profiled server, or says which address to replace.
func (o *options) pointAnswer(rep *verdict.Report) error {
	a := rep.Answer
	if a == nil || a.URL == "" {
		return nil // no configuration named (undecided), or none a URL expresses
	}
	measured := rep.Machine.Standalone
	if u, err := redisx.ParseURL(a.URL); err == nil {
		measured = u.Addrs[0]
		if len(u.Addrs) > 1 {
			measured += " (and the addr= seeds after it)"
		}
	}
	if p := o.profiled; p != nil {
		return benchmarks.Retarget(a, benchmarks.AnswerAddress{Addrs: []string{p.Addr}, Username: p.Username, Password: p.Password, DB: p.DB, TLS: p.TLS},
			fmt.Sprintf("measured on the harness's own server %s with the workload read from %s; the URL points at %s", measured, p.Addr, p.Addr))
	}
	a.Note = fmt.Sprintf("measured on the harness's own server: replace %s with your server's address", measured)
	return nil
}
