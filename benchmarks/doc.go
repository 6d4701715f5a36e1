// Package benchmarks measures the redisx strategies side by side with
// their peers — rueidis, redigo's redis.Pool and go-redis's pool — on
// real Redis servers, across concurrency levels, and says which
// configuration to use where. It is the library behind the redisx-bench
// command (benchmarks/cmd/redisx-bench, `make bench`).
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
// (Cell.LatenessP99ms), and its verdict compares the samples' p99
// latencies, not QPS: every target is offered the same rate. Latencies
// go to one HDR histogram per worker, merged per cell. Each [Cell] reports the median QPS with its 95% confidence
// interval, p50/p90/p99/p99.9/max, errors (a cell with errors has failed
// and never wins), the connections the server saw (counted by client
// name with CLIENT LIST, summed over a cluster's masters), and the
// client's CPU time and allocations per operation.
//
// [Recommend] turns cells into verdicts: per workload and level, the
// fastest redisx target wins only when it beats the runner-up
// significantly (Mann-Whitney U, p < Alpha) and by at least Margin (5%);
// otherwise the verdict is a tie, broken toward fewer connections and
// labelled so. Peers are measured for comparison and never recommended.
// [FindCrossovers] brackets the levels where the verdict changes.
//
// With Plan.SLO, Run also searches, per workload and target, the highest
// open-loop rate at which the SLO holds, at the workload's highest level
// of workers. Every target starts from the same rate, 1% of the fastest
// median QPS any target reached on the workload; the rate doubles until
// a probe fails (halves while they fail), then bisects, geometrically,
// until the first failing rate is within 5% of the last passing one. A
// probe is Repeats samples and passes only when every sample's own
// percentile is within the bound, with no error and nothing left unsent
// (every sample, not an interval: at 6 samples the 95% interval of their
// median reaches the worst one anyway). The rate found is then re-run
// until it passed 3 probes (confirmed); when a re-run fails, the next
// lower rate that passed is confirmed instead, and the result says so.
// The report gives the bracket, max_rate (the highest rate every probe
// held) and first_failing_rate, never more, and warns when the client's
// send lateness exceeded a tenth of the bound. [CompareBaseline] compares
// a run with an earlier report, cell by cell.
//
// Your own configuration is a target ([StrategyTarget] over any strategy
// value, [URLTarget] over a redis:// URL, or any Open function) and your
// own workload is an operation over a [Client] (see the example of Run).
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
// Peers are imported only here and in this package's tests; the library
// packages never import them.
package benchmarks
