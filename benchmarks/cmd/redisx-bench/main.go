// Command redisx-bench measures the redisx strategies beside their peers
// and says which configuration to use at which concurrency. The peers are
// rueidis, redigo's Pool, go-redis's pool and its auto-pipelining, measured
// across concurrency levels and workloads. A verdict is a significant win,
// a configuration equivalent to the best within 5% (the one of fewest
// connections), or, when the samples cannot tell, "undecided" and no
// configuration: a verdict still undecided gets more samples, up to
// -max-repeats.
//
// Usage:
//
//	redisx-bench [flags]
//
// With no address it starts its own redis-server processes on free
// loopback ports — a standalone server and a 3-master cluster, pinned to
// the last CPU with taskset when there are at least 2 — and stops them on
// exit, Ctrl-C included. It writes report.json, report.csv, report.md and
// report.html into -out (default ./results) and a summary on stdout;
// progress goes to stderr. Interrupted, it still writes what it measured
// (the report is marked partial) and exits with status 130; it exits with
// status 1 when a cell failed (errors during the measurement).
//
// Your workload: -mix, -keys, -key-dist, -value, -batch and -ttl describe
// it (in memtier_benchmark's spirit), or -profile reads it from your
// server, read-only (INFO commandstats, DBSIZE, and TYPE, PTTL, MEMORY
// USAGE and OBJECT FREQ of up to 1000 keys SCAN finds in 5 s), prints it as
// those flags to edit and run again, and runs it on -addr or the embedded
// servers; it refuses to measure the server it profiles unless -force.
// Either defines the workload "custom", run alone unless -workloads names
// others. -at N is your concurrency: the report opens with the one
// configuration for your workload (custom, or else the first workload run)
// at N goroutines — N is added to the levels when missing — with its
// verdict and a URL for your server: your user name kept, PASSWORD in place
// of your password; on the embedded servers it says which address to
// replace.
//
// Through Redis Sentinel (-sentinel), the master the sentinels name at
// the start is the server measured; redisx, rueidis and go-redis connect
// through the sentinels, redigo's pool to that master. A redis-sentinel
// -target with read_from=replica shows what reads from replicas buy.
//
// On a server of yours, every key it writes starts with "redisx-bench:"
// and is deleted at the end; it refuses a database that holds other keys
// unless -force. The password may come from REDISX_BENCH_PASSWORD instead
// of -password, to keep it off the command line.
//
// Examples:
//
//	redisx-bench -profile redis://prod:6379 -addr staging:6379 -at 200
//	redisx-bench -mix get:80,set:15,mget:5 -keys 100000 -key-dist zipf:0.99 -value 64:70,1024:25,32768:5 -batch 20 -ttl 10m -quick
//	redisx-bench -quick
//	redisx-bench -addr 10.0.0.5:6379 -levels 1,10,100 -workloads get,setget
//	redisx-bench -cluster 10.0.0.5:7000,10.0.0.6:7000 -workloads mget
//	redisx-bench -sentinel mymaster@10.0.0.5:26379,10.0.0.6:26379 -target replica='redis-sentinel://10.0.0.5:26379/mymaster?read_from=replica'
//	redisx-bench -target mine='redis://?strategy=pool&size=16' -peers=false
//	redisx-bench -target old=redis://10.0.0.5:6379 -target new=redis://10.0.0.6:6379 -only old,new
//	redisx-bench -slo p99=2ms -quick
//	redisx-bench -baseline old/report.json
//	redisx-bench -only multiplexed,pool-32,rueidis -workloads values
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redisx-go/kit/benchmarks"
	"github.com/redisx-go/kit/benchmarks/profile"
	"github.com/redisx-go/kit/benchmarks/report"
	"github.com/redisx-go/kit/benchmarks/target"
	"github.com/redisx-go/kit/benchmarks/verdict"
	"github.com/redisx-go/kit/benchmarks/workload"
	"github.com/redisx-go/kit/redisx"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C kills at once (the servers die with us)
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit statuses.
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitInterrupted = 130
)

// options are the parsed flags.
type options struct {
	addr, cluster, user, password, url string
	sentinel                           string
	tls, peers, quick, force, pin      bool
	levels, workloads, only, slo, out  string
	base                               string
	targets                            []string
	duration, warmup                   time.Duration
	repeats, maxRepeats                int
	rate                               float64
	seed                               int64
	set                                map[string]bool // flags given explicitly

	// The custom workload (custom.go).
	mix      workload.Mix
	keyDist  workload.KeyDist
	value    workload.ValueSpec
	profile  string
	keys     int
	batch    int
	at       int
	ttl      time.Duration
	profiled *profile.Profile  // read from -profile
	raw      map[string]string // -mix, -key-dist and -value as given
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{set: map[string]bool{}, raw: map[string]string{}}
	fs := flag.NewFlagSet("redisx-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.addr, "addr", "", "standalone server host:port (none: start an embedded one)")
	fs.StringVar(&o.cluster, "cluster", "", "cluster seeds, comma-separated host:port (none: start an embedded 3-master cluster)")
	fs.StringVar(&o.sentinel, "sentinel", "", "measure through Redis Sentinel: MASTER@host:port,host:port (the master's name and the sentinels; their password, if any, in a redis-sentinel -url)")
	fs.StringVar(&o.user, "user", "", "ACL user name")
	fs.StringVar(&o.password, "password", "", "password (or REDISX_BENCH_PASSWORD)")
	fs.StringVar(&o.url, "url", "", "redis:// or rediss:// URL of the standalone server, with credentials; or a redis-sentinel:// URL of its sentinels")
	fs.BoolVar(&o.tls, "tls", false, "connect with TLS")
	fs.StringVar(&o.levels, "levels", "", "concurrency levels, e.g. 1,10,100 (default 1,10,50,100,500,1000; -quick 1,10,100)")
	fs.StringVar(&o.workloads, "workloads", "", "workloads or families, e.g. get,mget,values/get-4KiB (default all)")
	fs.Func("target", "add or replace a target: NAME=URL (repeatable); a URL with a host measures that server, e.g. old=redis://10.0.0.5:6379, "+
		"one without the run's servers, e.g. mine='redis://?strategy=pool&size=16'", func(s string) error {
		o.targets = append(o.targets, s)
		return nil
	})
	fs.StringVar(&o.only, "only", "", "measure only these targets, comma-separated names, e.g. multiplexed,pool-32,rueidis (-target ones are always kept)")
	fs.BoolVar(&o.peers, "peers", true, "measure the peers rueidis, redigo-pool-100, go-redis and goredis-autopipeline")
	fs.DurationVar(&o.duration, "duration", 0, "length of one sample (default 500ms; -quick 100ms)")
	fs.DurationVar(&o.warmup, "warmup", 0, "warm-up of each target at each level, discarded (default half a sample)")
	fs.IntVar(&o.repeats, "repeats", 6, "samples per cell (at least 5 for a verdict to be decided at the first of three looks; 6 for a 95% interval of the median)")
	fs.IntVar(&o.maxRepeats, "max-repeats", 0, "most samples per cell: the targets of a verdict still undecided get -repeats more, and again, up to this, "+
		"each look at 0.05 over the number of looks, while the samples project a decision, within a tenth of the plan's time (default "+
		"3 x -repeats, 18: three looks, which narrow an undecided pair's interval of the ratio about 1.4x at the last; -quick 2 x -repeats, "+
		"12, so that it ends within two minutes; at most -repeats: one look)")
	fs.Float64Var(&o.rate, "rate", 0, "open loop: total requests per second (default closed loop)")
	fs.StringVar(&o.slo, "slo", "", "SLO mode: find each target's highest rate under a latency bound, e.g. p99=2ms")
	fs.BoolVar(&o.quick, "quick", false, "a small plan that finishes in about a minute")
	fs.StringVar(&o.out, "out", "results", "directory of the reports")
	fs.StringVar(&o.base, "baseline", "", "report.json of an earlier run to compare with")
	fs.BoolVar(&o.force, "force", false, "run even if the database holds keys outside the redisx-bench: prefix, or is the -profile server")
	fs.Func("mix", "your workload's ops and weights: get, set, del, mget, mset, e.g. get:90,set:10 (any workload flag defines the workload custom, run alone unless -workloads names others; default get:90,set:10)", func(s string) error {
		o.raw["mix"] = s
		return nil
	})
	fs.IntVar(&o.keys, "keys", 0, "custom: the number of keys (default 10000)")
	fs.Func("key-dist", "custom: how an op picks its keys: uniform, zipf:S (e.g. zipf:0.99), gaussian or sequential (default uniform)", func(s string) error {
		o.raw["key-dist"] = s
		return nil
	})
	fs.Func("value", "custom: value sizes in bytes: 64, a range 64-4096, or weighted 64:70,1024:25,32768:5 (default 64)", func(s string) error {
		o.raw["value"] = s
		return nil
	})
	fs.IntVar(&o.batch, "batch", 0, "custom: keys per mget and mset (default 10)")
	fs.DurationVar(&o.ttl, "ttl", 0, "custom: TTL of every key written, e.g. 1m (default none)")
	fs.StringVar(&o.profile, "profile", "", "read your workload, read-only, from a server: redis://[user:pw@]host:port; prints it as the flags above, then runs it on -addr (or the embedded servers); refused if it is also measured, unless -force")
	fs.IntVar(&o.at, "at", 0, "your concurrency: the report opens with the one configuration for your workload (custom, else the first) at this level, added to its levels if missing (default: its highest level)")
	fs.Int64Var(&o.seed, "seed", 1, "seed of the shuffles of the targets' order")
	fs.BoolVar(&o.pin, "pin", true, "pin the embedded servers to the last CPU with taskset")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	var err error
	if s, ok := o.raw["mix"]; ok {
		if o.mix, err = workload.ParseMix(s); err != nil {
			return nil, err
		}
	}
	if s, ok := o.raw["key-dist"]; ok {
		if o.keyDist, err = workload.ParseKeyDist(s); err != nil {
			return nil, err
		}
	}
	if s, ok := o.raw["value"]; ok {
		if o.value, err = workload.ParseValue(s); err != nil {
			return nil, err
		}
	}
	if o.password == "" {
		o.password = os.Getenv("REDISX_BENCH_PASSWORD")
	}
	return o, nil
}

// plan builds the plan the flags ask for.
func (o *options) plan() (benchmarks.Plan, error) {
	p := benchmarks.DefaultPlan()
	if o.quick {
		p = benchmarks.QuickPlan()
	}
	if o.levels != "" {
		var levels []int
		for _, f := range strings.Split(o.levels, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				return p, fmt.Errorf("-levels %q: %q is not a positive integer", o.levels, f)
			}
			levels = append(levels, n)
		}
		p.Levels = levels
		for i := range p.Workloads {
			p.Workloads[i].Levels = nil // the user's levels apply to every workload
		}
	}
	names := slices.DeleteFunc(o.workloadNames(), func(n string) bool { return n == workload.CustomName })
	if len(names) > 0 {
		if err := p.SelectWorkloads(names); err != nil {
			return p, err
		}
	}
	if o.hasCustom() {
		if err := o.addCustom(&p, names); err != nil {
			return p, err
		}
	}
	if !o.peers {
		p.RemovePeers()
	}
	var only []string
	for _, n := range strings.Split(o.only, ",") {
		if n = strings.TrimSpace(n); n != "" {
			only = append(only, n)
		}
	}
	for _, t := range o.targets {
		name, raw, ok := strings.Cut(t, "=")
		if !ok || name == "" || raw == "" {
			return p, fmt.Errorf("-target %q: want NAME=URL", redact(t))
		}
		tg, err := target.URLTarget(name, raw)
		if err != nil {
			return p, err
		}
		p.AddTarget(tg)
		if !slices.Contains(only, name) {
			only = append(only, name)
		}
	}
	if o.only != "" {
		if err := p.SelectTargets(only); err != nil {
			return p, fmt.Errorf("-only: %w", err)
		}
	}
	if o.set["duration"] {
		p.Duration = o.duration
	}
	if o.set["warmup"] {
		p.Warmup = o.warmup
	} else if o.set["duration"] {
		p.Warmup = p.Duration / 2
	}
	p.Repeats = o.repeats
	switch {
	case o.set["max-repeats"] && o.maxRepeats >= 0:
		p.MaxRepeats = max(o.maxRepeats, p.Repeats) // at most -repeats: one look
	case o.set["max-repeats"]:
		p.MaxRepeats = o.maxRepeats // refused below
	case o.quick:
		p.MaxRepeats = 2 * p.Repeats
	default:
		p.MaxRepeats = 3 * p.Repeats
	}
	p.Rate = o.rate
	p.Seed = o.seed
	p.At = o.at
	if o.slo != "" {
		slo, err := benchmarks.ParseSLO(o.slo)
		if err != nil {
			return p, err
		}
		p.SLO = &slo
	}
	if p.Repeats < 1 || p.Duration <= 0 || p.Rate < 0 || p.MaxRepeats < 0 {
		return p, errors.New("-repeats, -max-repeats, -duration and -rate must be positive")
	}
	if p.At < 0 {
		return p, fmt.Errorf("-at %d: want a positive number of goroutines", p.At)
	}
	return p, nil
}

// servers returns the servers the flags name; none means embedded.
func (o *options) servers() (benchmarks.Servers, bool, error) {
	s := benchmarks.Servers{Standalone: o.addr, Username: o.user, Password: o.password, Force: o.force}
	if o.url != "" {
		u, err := redisx.ParseURL(o.url)
		if err != nil {
			return s, false, fmt.Errorf("-url: %w", err)
		}
		switch {
		case u.Sentinel != nil:
			s.Sentinel = u.Sentinel
		case s.Standalone == "":
			s.Standalone = u.Addrs[0]
		}
		if s.Password == "" {
			s.Username, s.Password = u.Username, u.Password
		}
		s.DB, s.TLS = u.DB, u.TLS
	}
	for _, a := range strings.Split(o.cluster, ",") {
		if a = strings.TrimSpace(a); a != "" {
			s.Cluster = append(s.Cluster, a)
		}
	}
	if o.sentinel != "" {
		so, err := parseSentinelFlag(o.sentinel)
		if err != nil {
			return s, false, err
		}
		if s.Sentinel != nil { // the -url's credentials for the sentinels
			so.Username, so.Password = s.Sentinel.Username, s.Sentinel.Password
		}
		s.Sentinel = so
	}
	if s.Sentinel != nil && (s.Standalone != "" || s.Cluster != nil) {
		return s, false, errors.New("-sentinel (or a redis-sentinel -url) names the server: -addr and -cluster do not go with it")
	}
	if o.tls && s.TLS == nil {
		s.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	embedded := s.Standalone == "" && s.Cluster == nil && s.Sentinel == nil
	return s, embedded, nil
}

// parseSentinelFlag reads -sentinel MASTER@host:port,host:port.
func parseSentinelFlag(v string) (*redisx.SentinelOptions, error) {
	master, list, ok := strings.Cut(v, "@")
	if !ok || master == "" || list == "" {
		return nil, fmt.Errorf("-sentinel %q: want MASTER@host:port[,host:port...]", v)
	}
	so := &redisx.SentinelOptions{Master: master}
	for _, a := range strings.Split(list, ",") {
		a = strings.TrimSpace(a)
		if _, _, err := net.SplitHostPort(a); err != nil {
			return nil, fmt.Errorf("-sentinel %q: %q is not host:port", v, a)
		}
		so.Addrs = append(so.Addrs, a)
	}
	return so, nil
}

// ownServersOnly reports whether every target of p measures servers of
// its own (-target URLs with a host): the embedded servers would go
// unused.
func ownServersOnly(p benchmarks.Plan) bool {
	for _, t := range p.Targets {
		if t.Servers == nil {
			return false
		}
	}
	return len(p.Targets) > 0
}

// usage opens -h.
const usage = `redisx-bench measures redisx strategies and their peers side by side and says
which configuration to use, at which concurrency.

Usage:
	redisx-bench [flags]

Your workload, read from your server (read-only), measured on a staging server, answered at
200 goroutines:
	redisx-bench -profile redis://prod:6379 -addr staging:6379 -at 200
or described with flags:
	redisx-bench -mix get:80,set:15,mget:5 -keys 100000 -key-dist zipf:0.99 -value 64:70,1024:25,32768:5 -batch 20 -ttl 10m

Flags:
`

// run is the whole command; main only wires the signals and the exit.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintln(stderr, "redisx-bench:", err)
		return exitUsage
	}
	if o.profile != "" {
		if code := o.runProfile(ctx, args, stderr); code != exitOK {
			return code
		}
	}
	plan, err := o.plan()
	if err != nil {
		fmt.Fprintln(stderr, "redisx-bench:", err)
		return exitUsage
	}
	// Refused now, not after a run of many minutes whose reports it
	// could not keep.
	if err := report.PrepareDir(o.out); err != nil {
		fmt.Fprintln(stderr, "redisx-bench: -out:", err)
		return exitUsage
	}
	servers, embedded, err := o.servers()
	if err != nil {
		fmt.Fprintln(stderr, "redisx-bench:", err)
		return exitUsage
	}
	var base *verdict.Report
	if o.base != "" {
		if base, err = benchmarks.LoadReport(o.base); err != nil {
			fmt.Fprintln(stderr, "redisx-bench:", err)
			return exitFailed
		}
	}

	var emb *benchmarks.Embedded
	if embedded && !ownServersOnly(plan) {
		if err := benchmarks.EmbeddedAvailable(); err != nil {
			fmt.Fprintln(stderr, "redisx-bench: no address given, and the embedded servers cannot start:", err)
			return exitFailed
		}
		standalone, cluster := false, false
		for _, w := range plan.Workloads {
			cluster = cluster || w.Cluster
			standalone = standalone || !w.Cluster
		}
		fmt.Fprintf(stderr, "starting embedded redis-server processes (standalone: %v, 3-master cluster: %v)\n", standalone, cluster)
		emb, err = benchmarks.StartEmbedded(ctx, standalone, cluster, o.pin)
		if err != nil {
			fmt.Fprintln(stderr, "redisx-bench:", err)
			if ctx.Err() != nil {
				return exitInterrupted
			}
			return exitFailed
		}
		defer func() {
			if err := emb.Stop(); err != nil {
				fmt.Fprintln(stderr, "redisx-bench: stop embedded servers:", err)
			}
		}()
		emb.Servers.Force = o.force
		servers = emb.Servers
		if emb.PinNote != "" {
			fmt.Fprintln(stderr, emb.PinNote)
		}
	}

	rep, runErr := benchmarks.Run(ctx, plan, servers, stderr)
	interrupted := runErr != nil && ctx.Err() != nil
	if runErr != nil && !interrupted && (rep == nil || len(rep.Cells) == 0) {
		fmt.Fprintln(stderr, "redisx-bench:", runErr)
		return exitFailed
	}
	rep.Command = commandLine(args)
	if emb != nil {
		rep.Machine.Embedded, rep.Machine.Pinned, rep.Machine.PinNote = true, emb.Pinned, emb.PinNote
		if err := o.pointAnswer(rep); err != nil {
			fmt.Fprintln(stderr, "redisx-bench: the answer's URL:", err)
		}
	}
	if base != nil {
		rep.Baseline = verdict.CompareBaseline(base, rep, plan.Alpha, plan.Margin)
		rep.Baseline.File = o.base
		if !rep.Baseline.Compatible {
			fmt.Fprintf(stderr, "redisx-bench: WARNING: the baseline %s was not measured like with like: %s\n",
				o.base, strings.Join(rep.Baseline.Mismatches, "; "))
		}
		if len(rep.Baseline.Cells) == 0 {
			fmt.Fprintf(stderr, "redisx-bench: the baseline %s has no cell in common with this run: nothing compared\n", o.base)
		}
	}
	// A report that cannot be written (the directory went away during
	// the run) still gets its summary printed: the measurements are not
	// lost with the files.
	writeErr := report.WriteReports(o.out, rep)
	if writeErr != nil {
		fmt.Fprintln(stderr, "redisx-bench: write reports:", writeErr)
	}
	if err := report.WriteSummary(stdout, rep); err != nil {
		fmt.Fprintln(stderr, "redisx-bench: write summary:", err)
		return exitFailed
	}
	if writeErr != nil {
		return exitFailed
	}
	fmt.Fprintf(stderr, "reports in %s (%v)\n", o.out, rep.Finished.Sub(rep.Started).Round(time.Second))
	switch {
	case interrupted:
		fmt.Fprintln(stderr, "redisx-bench: interrupted; the report is partial")
		return exitInterrupted
	case runErr != nil:
		fmt.Fprintln(stderr, "redisx-bench:", runErr)
		return exitFailed
	}
	failed := 0
	for _, c := range rep.Cells {
		if c.Failed {
			failed++
			fmt.Fprintf(stderr, "failed: %s %s at %d goroutines: %d errors, first: %s\n", c.Workload, c.Target, c.Concurrency, c.Errors, c.FirstError)
		}
	}
	if failed > 0 {
		fmt.Fprintf(stderr, "redisx-bench: %d cells failed\n", failed)
		return exitFailed
	}
	return exitOK
}

// commandLine is the command as run, with passwords replaced.
func commandLine(args []string) string {
	out := []string{"redisx-bench"}
	hide := false
	for _, a := range args {
		switch {
		case hide:
			a, hide = "xxxxx", false
		case a == "-password" || a == "--password":
			hide = true
		case strings.HasPrefix(a, "-password=") || strings.HasPrefix(a, "--password="):
			a = a[:strings.Index(a, "=")+1] + "xxxxx"
		default:
			a = redact(a)
		}
		out = append(out, shellQuote(a))
	}
	return strings.Join(out, " ")
}

// shellQuote returns a as a POSIX shell reads it back: as it is when it
// holds only characters no shell treats specially, else in single quotes
// (a single quote inside ends the quotes, is escaped, and reopens them),
// so that the command line of a report can be pasted into a shell: a
// URL's ? and & would otherwise be a glob and a background job.
func shellQuote(a string) string {
	if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-") == "" {
		return a
	}
	return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
}

// sentinelPassword is a redis-sentinel URL's password of the sentinels.
var sentinelPassword = regexp.MustCompile(`([?&]sentinel_password=)[^&#]*`)

// redact hides the password of a URL inside s ("-url=redis://u:pw@h",
// "mine=redis://:pw@h"), and a sentinel_password parameter's; a lone user
// info is a password too.
func redact(s string) string {
	s = sentinelPassword.ReplaceAllString(s, "${1}xxxxx")
	i := strings.Index(s, "://")
	if i < 0 {
		return s
	}
	rest := s[i+3:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndex(rest[:end], "@")
	if at < 0 {
		return s
	}
	user, _, hasPassword := strings.Cut(rest[:at], ":")
	if !hasPassword {
		user = ""
	}
	return s[:i+3] + user + ":xxxxx" + rest[at:]
}
