// Package benchmarks measures the redisx strategies side by side with
// their peers — rueidis, redigo's redis.Pool and go-redis's pool — on a
// real Redis server, across concurrency levels.
//
// Run it with `make bench`, or directly:
//
//	go test -run '^$' -bench . -benchmem -count 3 ./benchmarks/
//
// By default the benchmarks start their own redis-server on a free
// loopback port, and a 3-master cluster for the Cluster benchmarks;
// REDISX_BENCH_ADDR=host:port and REDISX_BENCH_CLUSTER=host:port,… point
// them at existing deployments instead.
//
// TestBars (REDISX_BARS=1, or `make bars`) measures the bars P1–P6 of the
// design as ratios of configurations run in alternating rounds, and fails
// when one is missed. Benchmark names follow benchstat's key=value form, e.g.
// BenchmarkGet/strategy=multiplexed-1/goroutines=1000.
//
// Peers are imported only here and in this package's tests; the library
// packages never import them.
package benchmarks
