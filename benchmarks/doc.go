// Package benchmarks measures the redisx strategies beside their peers to
// say which configuration to use at which concurrency. The peers are
// rueidis, redigo's redis.Pool, go-redis's pool and its auto-pipelining;
// every measure is taken on real Redis servers, across concurrency levels.
// It is the library behind the redisx-bench command
// (benchmarks/cmd/redisx-bench, `make bench`).
//
// # The harness
//
// A [Plan] is concurrency levels × [Target]s × [Workload]s. [Run]
// measures every workload at each level on every target that applies:
// a warm-up of each target (discarded), then Repeats rounds of one sample
// per target, in an order shuffled per round with a seeded source, so
// that drift of a shared machine falls on every target alike. Closed loop
// by default; with Plan.Rate, open loop at a fixed rate: one worker at a
// time paces the sends — it sleeps on a kernel timer until 200 µs before
// a request's time (Go's timers wake about 1 ms late), spins the rest,
// yielding the CPU, and sends the request itself — and every latency is
// measured from the request's intended send time (no coordinated
// omission). An open-loop cell reports the client's own send lateness
// (verdict.Cell.LatenessP99ms), and its verdict compares the samples' p99
// latencies, not QPS: every target is offered the same rate. Latencies
// go to one HDR histogram per worker, merged per cell. Each
// [verdict.Cell] reports the median QPS with its 95% confidence interval
// and its samples, p50/p90/p99/p99.9/max, errors (a cell with
// errors has failed and never wins), the connections the server held
// (counted by client name with CLIENT LIST after each sample, never
// during one, summed over a cluster's masters), and the client's CPU time
// and allocations per operation.
//
// [verdict.Recommend] turns cells into verdicts, each with one of three
// outcomes decided on the interval of the ratio of two targets'
// throughputs (the Hodges–Lehmann interval: the Mann–Whitney rank test
// inverted). A win
// (significant): the fastest redisx target beats every other with p <
// alpha and the lower end of the interval reaches 1 + Margin (5%): a
// margin the samples support, not one of the medians alone. Equivalent:
// no win, and every target it does not beat lies within the margin of it
// — the interval inside ±5%, two one-sided tests — and only then does a
// tie-break choose among them, toward fewer connections, passing over a
// target that another is significantly faster than (offered instead as
// a quantified alternative). Undecided: neither; no target is named, and
// the verdict says which targets the samples could not tell apart and
// about how many samples would. So no verdict names a target that
// another target of its cell is significantly faster than.
//
// Run samples an undecided verdict again: its contenders get Repeats
// more samples, up to Plan.MaxRepeats (18 by default), and each round
// ends with a look that stops when it decides. Every look tests at Alpha
// over the number of looks (a Bonferroni split, so that looking again
// does not inflate the false decisions), and a verdict more samples are
// unlikely to decide is left undecided at once, which keeps the time for
// the verdicts that can be. With fewer than [verdict.MinRepeats] samples
// nothing can be significant, and Run warns. Peers are measured for
// comparison and never recommended. [verdict.FindCrossovers] brackets the
// levels between two significant verdicts that name different targets:
// equivalent and undecided verdicts never cross.
// [verdict.CompareBaseline] compares a run with an earlier report, cell by
// cell: it says when the two were not measured like with like (machine, loop,
// durations, repeats, workloads, or peers whose speed changed: the
// machine's did), and a change is significant when its
// p-value, corrected for the number of cells by Benjamini–Hochberg, is
// under Alpha and its interval lies beyond the margin.
//
// With Plan.SLO, Run also searches, per workload and target, the highest
// open-loop rate at which the SLO holds, at the workload's highest level
// of workers. Every target starts from the same rate, 1% of the fastest
// median QPS any target reached on the workload (but no lower than the
// rate at which a probe's first sample lasts 2 s: 500/s for a p99, the
// lowest rate probed); the rate doubles until
// a probe fails (halves while they fail), then bisects, geometrically,
// until the first failing rate is within 5% of the last passing one. A
// probe is decided on the pooled latencies of its operations, sized by
// count: a first sample of 10 operations expected over the percentile
// (1,000 for a p99), lasting at least the sample duration, and up to 3
// more, each doubling the operations pooled. After each, a
// distribution-free confidence interval for the percentile (order
// statistics, their ranks from Binomial(n, p); 95% over the probe,
// Bonferroni over its 4 looks) decides: the probe holds when the
// interval's upper end is within the bound, fails when its lower end is
// over it, and, still undecided after the fourth, does not hold. An error
// or a request left unsent fails it at once. The rate found is then re-run
// until it held in 4 probes (confirmed); when a re-run does not hold, the
// next lower rate that held is confirmed instead, and the result says so.
// The report gives the bracket, max_rate (the highest rate every probe
// held) and first_failing_rate (the lowest that did not), never more,
// each probe's percentile, interval and operations, and warns when the
// client's send lateness exceeded a tenth of the bound.
//
// Your own configuration is a target ([target.StrategyTarget] over any
// strategy value, [target.URLTarget] over a redis:// URL — which, with a
// host, measures that server, so that two servers compare in one run — or
// any Open function) and your own workload is an operation over a
// [Client] (see the example of Run), or a [workload.Custom].
//
// # Your workload, and one answer
//
// A [workload.Custom] describes a workload in memtier_benchmark's terms —
// a [workload.Mix] of get, set, del, mget and mset, a key space, a
// [workload.KeyDist] (uniform, zipf:S, gaussian, sequential), value sizes
// ([workload.ValueSpec]: one, a range, or sizes by weight), the keys of an
// MGET or MSET and a TTL — and [workload.Custom.Workload] makes it the
// workload "custom": every key is stored before the run with a size of
// its own (a GET checks it; a miss after a del or an expiry is no error),
// and key names are hashed as a service's are, so that a cluster spreads
// them over its slots and a batch spans several. profile.Read reads one
// from a server, read-only: the mix from INFO commandstats, the key space
// from DBSIZE, value sizes and the TTL from MEMORY USAGE and PTTL of a
// SCAN sample, the skew from the LFU counters where the server's policy
// keeps them; its Profile's Notes say what was estimated, ignored or
// assumed, and [workload.Custom.Flags] writes it as the flags of
// redisx-bench.
//
// [Report].Answer names one configuration: the verdict of the plan's first
// workload (put the user's first) at Plan.At, its highest level by default
// (At is added to its levels when they miss it), with a URL for the user's
// server that keeps the user name and holds [verdict.PasswordPlaceholder]
// for the password. Report.Workloads says what each workload was. The
// reports open with the answer.
//
// On a server of yours, every key written starts with [KeyPrefix] and is
// deleted at the end, and Run refuses a database holding other keys
// unless Servers.Force. [StartEmbedded] starts a standalone server and a
// 3-master cluster on loopback instead.
//
// # The go test suite
//
// The package's benchmarks (`make bench-go`) and TestBars (REDISX_BARS=1,
// or `make bars`, the bars P1–P6 of the design as ratios of
// configurations run in alternating rounds) start their own redis-server
// on a free loopback port, and a 3-master cluster for the Cluster
// benchmarks; REDISX_BENCH_ADDR=host:port and
// REDISX_BENCH_CLUSTER=host:port,… point them at existing deployments
// instead. Benchmark names follow benchstat's key=value form, e.g.
// BenchmarkGet/strategy=multiplexed-1/goroutines=1000.
//
// # Its packages
//
// This package plans and runs; each other job has a package of its own,
// none of which imports this one: [load] offers an operation to workers,
// closed or open loop; [workload] is what they do; [target] opens the
// configurations measured, the peers among them (rueidis and go-redis are
// imported there alone; the library packages never import them);
// [verdict] holds the report's data and decides, with no I/O; profile
// reads a server's traffic as a custom workload; report renders a
// report.
package benchmarks
