//go:build race

package localcache_test

// raceEnabled: the race detector distorts allocation counts, so they are
// checked without it only.
const raceEnabled = true
