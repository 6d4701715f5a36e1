// Package benchmarks measures the redisx strategies side by side with
// their peers — rueidis, redigo's redis.Pool and go-redis's pool — on a
// real Redis server, across concurrency levels.
//
// Run it with `make bench`, or directly:
//
//	go test -run '^$' -bench . -benchmem -count 3 ./benchmarks/
//
// By default the benchmarks start their own redis-server on a free
// loopback port; REDISX_BENCH_ADDR=host:port points them at an existing
// server instead. Benchmark names follow benchstat's key=value form, e.g.
// BenchmarkGet/strategy=multiplexed-1/goroutines=1000.
//
// Peers are imported only here and in this package's tests; the library
// packages never import them.
package benchmarks
