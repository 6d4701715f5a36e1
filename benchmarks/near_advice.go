package benchmarks

import (
	"fmt"

	"github.com/redisx-go/kit/benchmarks/target"
	"github.com/redisx-go/kit/benchmarks/verdict"
	"github.com/redisx-go/kit/benchmarks/workload"
	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
)

// nearAdvice is what a recommendation of a near-cache target must say
// beside its speed (verdict.Recommendation.Near): its tracking mode, the memory
// it held in cell c and may hold, and the staleness another client's
// write can show — an invalidation's delay, or the TTL with TrackNone.
// Empty when the target is not a near-cache its URL describes.
func nearAdvice(t Target, c *verdict.Cell) string {
	if t.URL == "" {
		return ""
	}
	o, err := redisx.ParseURL(t.URL)
	if err != nil {
		return ""
	}
	n, ok := o.Strategy.(localcache.Near)
	if !ok {
		return ""
	}
	maxBytes, ttl := n.MaxBytes, n.TTL
	if maxBytes == 0 {
		maxBytes = 64 << 20
	}
	if ttl == 0 {
		ttl = target.NearTTL
	}
	memory := fmt.Sprintf("it may hold up to %s (MaxBytes)", workload.FormatBytes(maxBytes))
	perWrite := ""
	if c != nil {
		memory = fmt.Sprintf("it held %s of the %s it may hold (MaxBytes) at the end of a sample", humanBytes(c.LocalBytes), workload.FormatBytes(maxBytes))
		if c.InvalidationsPerWrite > 0 {
			perWrite = fmt.Sprintf(" (here %.2f per write)", c.InvalidationsPerWrite)
		}
	}
	switch n.Tracking {
	case localcache.TrackNone:
		return fmt.Sprintf("a near-cache without tracking (TrackNone): another client's write may be served stale for up to its TTL, %v — choose it only if that staleness is acceptable; this process reads its own writes at once; %s", ttl, memory)
	case localcache.TrackBroadcast:
		return fmt.Sprintf("a near-cache with broadcast tracking (TrackBroadcast): another client's write is served stale until its invalidation arrives, milliseconds; every write to a key under its prefixes reaches every process, read there or not%s — in a fleet, per-key tracking (the default) costs the server far less; %s", perWrite, memory)
	}
	return fmt.Sprintf("a near-cache with per-key tracking (TrackKeys, the default): another client's write is served stale until its invalidation arrives, milliseconds; the server is told only of writes to keys this process read%s, and keeps them in a table (about 100 B a key); %s", perWrite, memory)
}

// humanBytes writes n bytes as "1.2 MiB", "512 KiB" or "300 B".
func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// cellOf returns the cell of r of target at workload and level, or nil.
func cellOf(r *Report, workload, target string, level int) *verdict.Cell {
	for i, c := range r.Cells {
		if c.Workload == workload && c.Target == target && c.Concurrency == level {
			return &r.Cells[i]
		}
	}
	return nil
}
