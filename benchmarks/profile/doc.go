// Package profile reads a server's traffic, read-only, as a custom
// workload: the -profile flag of redisx-bench.
//
// [Read] takes the mix from INFO commandstats, the key space from DBSIZE,
// value sizes and the TTL from MEMORY USAGE and PTTL of a SCAN sample,
// and the skew from the LFU counters where the server's policy keeps
// them; the [Profile]'s Notes say what was estimated, ignored or assumed,
// and its Custom (a workload.Custom) is what the harness runs.
package profile
