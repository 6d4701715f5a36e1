package localcache_test

import (
	"fmt"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/strategy"
)

// What a command sent through Near's Do invalidates, against a real
// server: the keys it writes whatever the Go type that carries them, and
// everything when the keys it writes cannot be told.

// doVariants returns nearVariants(base) and base in front of GoRedis,
// whose client cleanup closes.
func doVariants(t *testing.T, addr string, base localcache.Near) []nearVariant {
	rdb := goredis.NewClient(&goredis.Options{Addr: addr, DisableIdentity: true})
	t.Cleanup(func() { rdb.Close() })
	gr := base
	gr.Inner = strategy.GoRedis{Client: rdb}
	return append(nearVariants(base), nearVariant{"go-redis", gr})
}

// TestNearDoInvalidatesKeysOfEveryArgumentType: a SET through Do whose
// key is an int8, uint8, int16, uint16, float64, float32 or bool writes
// the key the server reads (its text: "-8", "2.5", "1"), and a Get of
// that text right after returns the new value, not the one cached before.
func TestNearDoInvalidatesKeysOfEveryArgumentType(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	keys := []struct {
		arg  any
		text string
	}{
		{int8(-8), "-8"},
		{uint8(208), "208"},
		{int16(-1600), "-1600"},
		{uint16(16000), "16000"},
		{2.5, "2.5"},
		{1e21, "1e+21"},
		{float32(0.1), "0.1"},
		{true, "1"},
		{false, "0"},
	}
	const trials = 10
	for _, v := range doVariants(t, srv.Addr(), localcache.Near{}) {
		t.Run(v.name, func(t *testing.T) {
			h := openHarness(t, []string{srv.Addr()}, v.s, false)
			ctx := testCtx(t, 60*time.Second)
			for _, k := range keys {
				stale := 0
				for i := range trials {
					old := fmt.Appendf(nil, "old-%d", i)
					h.otherSetSeen(ctx, k.text, string(old))
					h.warm(ctx, k.text, old)
					want := fmt.Appendf(nil, "new-%d", i)
					if _, err := h.c.Do(ctx, "SET", k.arg, want); err != nil {
						t.Fatalf("Do(SET %T(%v) %q): %v", k.arg, k.arg, want, err)
					}
					if got, err := h.c.Get(ctx, k.text); !same(got, err, want) {
						if stale++; stale == 1 {
							t.Errorf("Get(%q) right after Do(SET %T(%v) %q) = %s; want %q", k.text, k.arg, k.arg, want, show(got, err), want)
						}
					}
				}
				if stale > 0 {
					t.Errorf("%T key: %d of %d reads right after Do(SET) were stale", k.arg, stale, trials)
				}
			}
		})
	}
}
