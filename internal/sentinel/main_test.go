package sentinel_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"go.uber.org/goleak"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/strategy"
)

// The package's tests open the transports over Sentinel as the facade
// does, with a strategy's Open and Config.Sentinel, and call the Backend
// directly (no retry in front), on sentinel groups of their own
// (launcher.SentinelForTest).

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// config returns the settings of a Backend over g: Sentinel set to its
// master's name and its sentinels, with the facade's default timeouts
// (DialTimeout 5 s, ReadTimeout and WriteTimeout 3 s). Each call returns
// a SentinelConfig of its own.
func config(g *launcher.SentinelGroup) strategy.Config {
	return strategy.Config{
		Sentinel:    &strategy.SentinelConfig{Master: g.Name(), Addrs: g.SentinelAddrs()},
		DialTimeout: 5 * time.Second, ReadTimeout: 3 * time.Second, WriteTimeout: 3 * time.Second,
	}
}

// backend is a Backend with the optional interfaces the tests call, which
// every strategy of the module has.
type backend interface {
	strategy.Backend
	strategy.Doer
	strategy.MultiGetter
}

// open opens s with cfg and closes it when the test ends.
func open(t *testing.T, s strategy.Strategy, cfg strategy.Config) backend {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	b, err := s.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("Open %T: %v", s, err)
	}
	t.Cleanup(func() { b.Close() })
	bb, ok := b.(backend)
	if !ok {
		t.Fatalf("%T's Backend %T has no Do or MGet", s, b)
	}
	return bb
}

// masterAddr returns the address of g's master, as the first sentinel
// that answers names it.
func masterAddr(t *testing.T, g *launcher.SentinelGroup) string {
	t.Helper()
	m, err := g.Master(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return m.Addr()
}

// gets returns the GETs the server at addr has served since its
// statistics were last reset (INFO commandstats).
func gets(t *testing.T, addr string) int64 {
	t.Helper()
	c, err := redis.Dial("tcp", addr, redis.DialReadTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	info, err := redis.String(c.Do("INFO", "commandstats"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_get:calls="); ok {
			n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
			return n
		}
	}
	return 0
}
