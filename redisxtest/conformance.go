package redisxtest

// The conformance suite: the one behaviour suite every strategy passes,
// after testing/slogtest.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redisx-go/kit/redisx"
)

// RunConformance checks that the client redisx.New builds from opts
// behaves as every strategy of this module does — the same results for
// the same calls, binary-safe keys and values, every context honoured, no
// reply ever reaching the wrong caller under a storm of cancellations,
// returned bytes owned by the caller, one "redisx:" prefix per error,
// Close prompt and leaving no goroutine behind — against the real server
// (or cluster) that opts.Addrs names, typically one started with Start or
// StartCluster. It is how this module tests Multiplexed, Pool,
// SlotGrouped, GoRedis and Near, and how a strategy of your own (any
// strategy.Strategy in opts.Strategy) is held to the same contract, as
// testing/slogtest does for slog handlers. Its Contract/… subtests are the
// Backend contract's cases of strategy/strategytest (ContractCases), run
// here through the facade; strategytest.RunBackend runs the same cases on
// a Backend directly, beside the fault scenarios.
//
// The checks run as subtests, one after another: some count the server's
// commands, so nothing else should use the server meanwhile. They write
// keys under "conformance:". They take a few seconds.
func RunConformance(t *testing.T, opts redisx.Options) {
	t.Helper()
	s := &suite{opts: opts, oracle: oracle(opts)}
	t.Cleanup(func() { s.oracle.Close() })
	for _, tc := range []struct {
		name string
		fn   func(*testing.T)
	}{
		{"SetThenGet", s.setThenGet},
		{"BinarySafe", s.binarySafe},
		{"EmptyValueIsNotMissing", s.emptyValueIsNotMissing},
		{"TTLZeroMeansNoExpiry", s.ttlZeroMeansNoExpiry},
		{"TTLExpires", s.ttlExpires},
		{"NegativeTTLRefusedBeforeSending", s.negativeTTLRefused},
		{"MGetKeepsOrderWithHoles", s.mgetOrder},
		{"MGetOfNoKeysSendsNothing", s.mgetNoKeys},
		{"MSet", s.mset},
		{"MSetRefusesNilMap", s.msetNilMap},
		{"DelCounts", s.delCounts},
		{"ContextAlreadyDone", s.contextAlreadyDone},
		{"DeadlineMidCall", s.deadlineMidCall},
		{"GetOrLoadCollapsesMisses", s.getOrLoadCollapses},
		{"GetOrLoadWrapsLoaderError", s.getOrLoadError},
		{"DoRunsAnyCommand", s.doAnyCommand},
		{"ServerErrorKeepsConnection", s.serverError},
		{"UseAfterClose", s.useAfterClose},
		{"CloseLeavesNoGoroutine", s.closeLeavesNoGoroutine},
		{"ConcurrentCancellationNeverMisdelivers", s.cancellationStorm},
		{"ReturnedBytesAreTheCallers", s.returnedBytesAreTheCallers},
		{"DoReplyTypes", s.doReplyTypes},
		{"CloseWithBlockedCommandReturns", s.closeWithBlockedCommand},
		{"ErrorsHaveOnePrefix", s.errorsHaveOnePrefix},
		{"OversizedKeyOrArgumentRefusedBeforeSending", s.oversizedRefused},
		{"DoMultiMixedWithErrors", s.doMultiMixed},
		{"DoMultiRefusedBatchSendsNothing", s.doMultiRefusesBatch},
		{"DoMultiCancellationStormNeverMisdelivers", s.doMultiStorm},
		{"WatchIncrementsExactly", s.watchIncrementsExactly},
		{"WatchConflictAndResults", s.watchConflictAndResults},
		{"WatchLeavesConnectionClean", s.watchLeavesConnectionClean},
		{"WatchCloseReturnsPromptly", s.watchCloseReturnsPromptly},
		{"WatchRefusesMisuse", s.watchRefusesMisuse},
		{"PubSubEveryMessageAfterSubscribe", s.pubsubEveryMessage},
		{"PubSubPatternsAndShards", s.pubsubPatternsAndShards},
		{"PubSubSlowReaderDropsOldest", s.pubsubSlowReader},
	} {
		t.Run(tc.name, tc.fn)
	}
	s.contract(t)
}

type suite struct {
	opts   redisx.Options
	oracle goredis.UniversalClient
	seq    atomic.Int64
}

// oracle is an independent client used to look at the server's state: a
// go-redis cluster client when the first address is a cluster node.
func oracle(o redisx.Options) goredis.UniversalClient {
	addr := "127.0.0.1:6379"
	if len(o.Addrs) > 0 {
		addr = o.Addrs[0]
	}
	plain := goredis.NewClient(&goredis.Options{
		Addr: addr, Username: o.Username, Password: o.Password, DB: o.DB, TLSConfig: o.TLS,
		Protocol: 2, DisableIdentity: true,
	})
	info, err := plain.Info(context.Background(), "cluster").Result()
	if err != nil || !strings.Contains(info, "cluster_enabled:1") {
		return plain
	}
	plain.Close()
	return goredis.NewClusterClient(&goredis.ClusterOptions{
		Addrs: o.Addrs, Username: o.Username, Password: o.Password, TLSConfig: o.TLS,
		Protocol: 2, DisableIdentity: true,
	})
}

// eachServer runs fn on every server the oracle knows: every master of a
// cluster, or the one server.
func (s *suite) eachServer(ctx context.Context, fn func(ctx context.Context, c *goredis.Client) error) error {
	if cc, ok := s.oracle.(*goredis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, fn)
	}
	return fn(ctx, s.oracle.(*goredis.Client))
}

func (s *suite) client(t *testing.T) *redisx.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := redisx.New(ctx, s.opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// key returns a key unique to this run of the suite.
func (s *suite) key(t *testing.T, name string) string {
	return fmt.Sprintf("conformance:%s:%d:%s", t.Name(), s.seq.Add(1), name)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func (s *suite) setThenGet(t *testing.T) {
	c, ctx := s.client(t), ctxT(t)
	k := s.key(t, "k")
	if err := c.Set(ctx, k, []byte("v1"), 0); err != nil {
		t.Fatalf("Set: %v", err)
	}
	if v, err := c.Get(ctx, k); err != nil || string(v) != "v1" {
		t.Fatalf("Get(%q) = %q, %v; want %q, nil", k, v, err, "v1")
	}
	if err := c.Set(ctx, k, []byte("v2"), time.Minute); err != nil {
		t.Fatalf("Set again: %v", err)
	}
	if v, err := c.Get(ctx, k); err != nil || string(v) != "v2" {
		t.Fatalf("Get(%q) = %q, %v; want %q, nil", k, v, err, "v2")
	}
	if got := s.oracle.Get(ctx, k).Val(); got != "v2" {
		t.Fatalf("server holds %q under %q, want %q", got, k, "v2")
	}
	_, err := c.Get(ctx, s.key(t, "missing"))
	if !errors.Is(err, redisx.ErrNotFound) {
		t.Fatalf("Get(missing) error = %v, want ErrNotFound", err)
	}
}

func (s *suite) binarySafe(t *testing.T) {
	c, ctx := s.client(t), ctxT(t)
	big := make([]byte, 1<<20)
	for i := range big {
		big[i] = byte(i * 7)
	}
	values := [][]byte{
		[]byte("\x00"), []byte("a\r\nb"), []byte("\r\n"), []byte{0xff, 0xfe, 0x00, 0x80},
		[]byte("$3\r\nGET\r\n"), []byte("-ERR not an error\r\n"), big,
	}
	for i, v := range values {
		k := s.key(t, fmt.Sprintf("bin\x00\r\n\xff%d", i))
		if err := c.Set(ctx, k, v, time.Minute); err != nil {
			t.Fatalf("Set(%q): %v", k, err)
		}
		got, err := c.Get(ctx, k)
		if err != nil || string(got) != string(v) {
			t.Fatalf("Get(%q) = %d bytes, %v; want the %d bytes set", k, len(got), err, len(v))
		}
		if o := s.oracle.Get(ctx, k).Val(); o != string(v) {
			t.Fatalf("server holds %d bytes under %q, want %d", len(o), k, len(v))
		}
	}
}

func (s *suite) emptyValueIsNotMissing(t *testing.T) {
	c, ctx := s.client(t), ctxT(t)
	k, missing := s.key(t, "empty"), s.key(t, "missing")
	if err := c.Set(ctx, k, []byte{}, 0); err != nil {
		t.Fatalf("Set: %v", err)
	}
	v, err := c.Get(ctx, k)
	if err != nil || v == nil || len(v) != 0 {
		t.Fatalf("Get(empty) = %#v, %v; want []byte{}, nil", v, err)
	}
	if err := c.Set(ctx, s.key(t, "nil"), nil, 0); err != nil {
		t.Fatalf("Set(nil value): %v", err)
	}
	vs, err := c.MGet(ctx, k, missing)
	if err != nil || len(vs) != 2 || vs[0] == nil || len(vs[0]) != 0 || vs[1] != nil {
		t.Fatalf("MGet(empty, missing) = %#v, %v; want [[] nil]", vs, err)
	}
}

func (s *suite) ttlZeroMeansNoExpiry(t *testing.T) {
	c, ctx := s.client(t), ctxT(t)
	k := s.key(t, "k")
	if err := c.Set(ctx, k, []byte("v"), time.Minute); err != nil {
		t.Fatalf("Set: %v", err)
	}
	if d := s.oracle.PTTL(ctx, k).Val(); d <= 0 || d > time.Minute {
		t.Fatalf("PTTL after Set(ttl=1m) = %v, want in (0, 1m]", d)
	}
	if err := c.Set(ctx, k, []byte("v"), 0); err != nil {
		t.Fatalf("Set: %v", err)
	}
	if d := s.oracle.PTTL(ctx, k).Val(); d != -1 {
		t.Fatalf("PTTL after Set(ttl=0) = %v, want -1 (no expiry)", d)
	}
}

func (s *suite) ttlExpires(t *testing.T) {
	c, ctx := s.client(t), ctxT(t)
	k := s.key(t, "k")
	if err := c.Set(ctx, k, []byte("v"), 30*time.Millisecond); err != nil {
		t.Fatalf("Set: %v", err)
	}
	if err := c.MSet(ctx, map[string][]byte{k + "m": []byte("v")}, 30*time.Millisecond); err != nil {
		t.Fatalf("MSet: %v", err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		_, err1 := c.Get(ctx, k)
		_, err2 := c.Get(ctx, k+"m")
		if errors.Is(err1, redisx.ErrNotFound) && errors.Is(err2, redisx.ErrNotFound) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("keys set with ttl 30ms still readable after 3s: %v, %v", err1, err2)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (s *suite) negativeTTLRefused(t *testing.T) {
	c, ctx := s.client(t), ctxT(t)
	k := s.key(t, "k")
	if err := c.Set(ctx, k, []byte("v"), -time.Second); !errors.Is(err, redisx.ErrInvalidArgument) {
		t.Fatalf("Set(ttl=-1s) error = %v, want ErrInvalidArgument", err)
	}
	if err := c.MSet(ctx, map[string][]byte{k: []byte("v")}, -time.Second); !errors.Is(err, redisx.ErrInvalidArgument) {
		t.Fatalf("MSet(ttl=-1s) error = %v, want ErrInvalidArgument", err)
	}
	if _, err := c.GetOrLoad(ctx, k, -time.Second, func(context.Context) ([]byte, error) { return nil, nil }); !errors.Is(err, redisx.ErrInvalidArgument) {
		t.Fatalf("GetOrLoad(ttl=-1s) error = %v, want ErrInvalidArgument", err)
	}
	if n := s.oracle.Exists(ctx, k).Val(); n != 0 {
		t.Fatalf("key %q exists after refused writes", k)
	}
}

func (s *suite) mgetOrder(t *testing.T) {
	c, ctx := s.client(t), ctxT(t)
	keys := make([]string, 20)
	for i := range keys {
		keys[i] = s.key(t, strconv.Itoa(i))
		if i%3 != 1 {
			if err := c.Set(ctx, keys[i], []byte("v"+strconv.Itoa(i)), time.Minute); err != nil {
				t.Fatalf("Set: %v", err)
			}
		}
	}
	vs, err := c.MGet(ctx, keys...)
	if err != nil || len(vs) != len(keys) {
		t.Fatalf("MGet = %d values, %v; want %d", len(vs), err, len(keys))
	}
	for i, v := range vs {
		want := "v" + strconv.Itoa(i)
		if i%3 == 1 {
			if v != nil {
				t.Fatalf("MGet()[%d] = %q, want nil (missing key)", i, v)
			}
		} else if string(v) != want {
			t.Fatalf("MGet()[%d] = %q, want %q", i, v, want)
		}
	}
}

// commandCalls sums the calls of cmd over every server.
func (s *suite) commandCalls(ctx context.Context, t *testing.T, cmd string) int64 {
	return s.infoSum(ctx, t, "commandstats", "cmdstat_"+cmd+":calls=")
}

// infoSum sums, over every server, the number that follows prefix at the
// start of a line of INFO section ("blocked_clients:" in clients).
func (s *suite) infoSum(ctx context.Context, t *testing.T, section, prefix string) int64 {
	var total atomic.Int64
	err := s.eachServer(ctx, func(ctx context.Context, c *goredis.Client) error {
		info, err := c.Info(ctx, section).Result()
		for _, line := range strings.Split(info, "\n") {
			if rest, ok := strings.CutPrefix(line, prefix); ok {
				digits := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
				if digits < 0 {
					digits = len(rest)
				}
				n, _ := strconv.ParseInt(rest[:digits], 10, 64)
				total.Add(n)
			}
		}
		return err
	})
	if err != nil {
		t.Fatalf("INFO %s: %v", section, err)
	}
	return total.Load()
}

func (s *suite) mgetNoKeys(t *testing.T) {
	c, ctx := s.client(t), ctxT(t)
	before := s.commandCalls(ctx, t, "mget")
	vs, err := c.MGet(ctx)
	if err != nil || vs == nil || len(vs) != 0 {
		t.Fatalf("MGet() = %#v, %v; want [][]byte{}, nil", vs, err)
	}
	if n, err := c.Del(ctx); n != 0 || err != nil {
		t.Fatalf("Del() = %d, %v; want 0, nil", n, err)
	}
	if after := s.commandCalls(ctx, t, "mget"); after != before {
		t.Fatalf("MGET calls on the server went from %d to %d for MGet of no keys", before, after)
	}
}

func (s *suite) mset(t *testing.T) {
	c, ctx := s.client(t), ctxT(t)
	for _, ttl := range []time.Duration{0, time.Minute} {
		kv := map[string][]byte{}
		for i := 0; i < 10; i++ {
			kv[s.key(t, strconv.Itoa(i))] = []byte(fmt.Sprint("v", i, ttl))
		}
		if err := c.MSet(ctx, kv, ttl); err != nil {
			t.Fatalf("MSet(ttl=%v): %v", ttl, err)
		}
		for k, v := range kv {
			got, err := c.Get(ctx, k)
			if err != nil || string(got) != string(v) {
				t.Fatalf("Get(%q) = %q, %v; want %q", k, got, err, v)
			}
			d := s.oracle.PTTL(ctx, k).Val()
			if (ttl == 0 && d != -1) || (ttl > 0 && (d <= 0 || d > ttl)) {
				t.Fatalf("PTTL(%q) = %v after MSet(ttl=%v)", k, d, ttl)
			}
		}
	}
	if err := c.MSet(ctx, map[string][]byte{}, 0); err != nil {
		t.Fatalf("MSet(empty map) = %v, want nil", err)
	}
}

func (s *suite) msetNilMap(t *testing.T) {
	c, ctx := s.client(t), ctxT(t)
	if err := c.MSet(ctx, nil, 0); !errors.Is(err, redisx.ErrInvalidArgument) {
		t.Fatalf("MSet(nil) error = %v, want ErrInvalidArgument", err)
	}
}

func (s *suite) delCounts(t *testing.T) {
	c, ctx := s.client(t), ctxT(t)
	a, b, missing := s.key(t, "a"), s.key(t, "b"), s.key(t, "missing")
	for _, k := range []string{a, b} {
		if err := c.Set(ctx, k, []byte("v"), time.Minute); err != nil {
			t.Fatalf("Set: %v", err)
		}
	}
	if n, err := c.Del(ctx, a, missing); n != 1 || err != nil {
		t.Fatalf("Del(a, missing) = %d, %v; want 1, nil", n, err)
	}
	if n, err := c.Del(ctx, a, b); n != 1 || err != nil {
		t.Fatalf("Del(a, b) = %d, %v; want 1, nil", n, err)
	}
	if _, err := c.Get(ctx, b); !errors.Is(err, redisx.ErrNotFound) {
		t.Fatalf("Get(deleted) error = %v, want ErrNotFound", err)
	}
}

func (s *suite) contextAlreadyDone(t *testing.T) {
	c := s.client(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	k := s.key(t, "k")
	checks := map[string]error{}
	_, checks["Get"] = c.Get(ctx, k)
	checks["Set"] = c.Set(ctx, k, []byte("v"), 0)
	_, checks["MGet"] = c.MGet(ctx, k, k)
	checks["MSet"] = c.MSet(ctx, map[string][]byte{k: []byte("v")}, 0)
	_, checks["Del"] = c.Del(ctx, k)
	_, checks["GetOrLoad"] = c.GetOrLoad(ctx, k, 0, func(context.Context) ([]byte, error) { return []byte("v"), nil })
	_, checks["Do"] = c.Do(ctx, "SET", k, "v")
	_, checks["Do blocking"] = c.Do(ctx, "BLPOP", k, 1)
	for name, err := range checks {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: error = %v, want context.Canceled", name, err)
		}
	}
	if n := s.oracle.Exists(context.Background(), k).Val(); n != 0 {
		t.Fatalf("a call with a cancelled context wrote %q", k)
	}
}

// deadlineMidCall pauses the server's clients so that a call is in flight
// when its deadline passes, then checks the connection still answers
// correctly: the late reply must not reach the next caller.
func (s *suite) deadlineMidCall(t *testing.T) {
	c, ctx := s.client(t), ctxT(t)
	k := s.key(t, "k")
	if err := c.Set(ctx, k, []byte("before"), time.Minute); err != nil {
		t.Fatalf("Set: %v", err)
	}
	if err := s.eachServer(ctx, func(ctx context.Context, c *goredis.Client) error {
		return c.Do(ctx, "CLIENT", "PAUSE", 400, "ALL").Err()
	}); err != nil {
		t.Fatalf("CLIENT PAUSE: %v", err)
	}
	start := time.Now()
	dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err := c.Get(dctx, k)
	cancel()
	elapsed := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get during CLIENT PAUSE with a 50ms deadline: error = %v, want DeadlineExceeded", err)
	}
	if elapsed > 300*time.Millisecond {
		t.Fatalf("Get with a 50ms deadline returned after %v", elapsed)
	}
	k2 := s.key(t, "k2")
	if err := c.Set(ctx, k2, []byte("after"), time.Minute); err != nil {
		t.Fatalf("Set after pause: %v", err)
	}
	for _, kv := range [][2]string{{k, "before"}, {k2, "after"}} {
		if v, err := c.Get(ctx, kv[0]); err != nil || string(v) != kv[1] {
			t.Fatalf("Get(%q) after a timed-out call = %q, %v; want %q", kv[0], v, err, kv[1])
		}
	}
}

func (s *suite) getOrLoadCollapses(t *testing.T) {
	c, ctx := s.client(t), ctxT(t)
	k := s.key(t, "k")
	var loads atomic.Int64
	release := make(chan struct{})
	load := func(context.Context) ([]byte, error) {
		loads.Add(1)
		<-release
		return []byte("loaded"), nil
	}
	const callers = 50
	getsBefore := s.commandCalls(ctx, t, "get")
	errs := make(chan error, callers)
	for i := 0; i < callers; i++ {
		go func() {
			v, err := c.GetOrLoad(ctx, k, time.Minute, load)
			if err == nil && string(v) != "loaded" {
				err = fmt.Errorf("GetOrLoad = %q, want %q", v, "loaded")
			}
			errs <- err
		}()
	}
	// Let every caller miss on the server before the load finishes, so
	// that the misses are concurrent (a caller whose GET comes after the
	// store is a hit, which proves nothing). A near-cache shares
	// concurrent misses of a key too, so fewer GETs than callers may ever
	// reach the server: then the count holding still for 200 ms stands
	// for "everyone missed". However late a caller that missed reaches
	// the load, it shares it: the loader runs once.
	last, still := int64(-1), time.Now()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		gets := s.commandCalls(ctx, t, "get") - getsBefore
		if gets != last {
			last, still = gets, time.Now()
		}
		if loads.Load() > 0 && (gets >= callers || time.Since(still) > 200*time.Millisecond) {
			break
		}
	}
	time.Sleep(50 * time.Millisecond)
	close(release)
	for i := 0; i < callers; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := loads.Load(); n != 1 {
		t.Fatalf("%d concurrent misses ran the loader %d times, want 1", callers, n)
	}
	if got := s.oracle.Get(ctx, k).Val(); got != "loaded" {
		t.Fatalf("server holds %q after GetOrLoad, want %q", got, "loaded")
	}
	v, err := c.GetOrLoad(ctx, k, time.Minute, func(context.Context) ([]byte, error) {
		return nil, errors.New("must not be called on a hit")
	})
	if err != nil || string(v) != "loaded" {
		t.Fatalf("GetOrLoad on a hit = %q, %v", v, err)
	}
}

func (s *suite) getOrLoadError(t *testing.T) {
	c, ctx := s.client(t), ctxT(t)
	k := s.key(t, "k")
	cause := errors.New("source down")
	_, err := c.GetOrLoad(ctx, k, time.Minute, func(context.Context) ([]byte, error) { return nil, cause })
	if !errors.Is(err, redisx.ErrLoad) || !errors.Is(err, cause) {
		t.Fatalf("GetOrLoad error = %v, want one wrapping ErrLoad and the loader's error", err)
	}
	if n := s.oracle.Exists(ctx, k).Val(); n != 0 {
		t.Fatalf("a failed load stored %q", k)
	}
}

func (s *suite) doAnyCommand(t *testing.T) {
	c, ctx := s.client(t), ctxT(t)
	k := s.key(t, "counter")
	for i := int64(1); i <= 3; i++ {
		n, err := redis.Int64(c.Do(ctx, "INCR", k))
		if err != nil || n != i {
			t.Fatalf("Do(INCR) = %d, %v; want %d", n, err, i)
		}
	}
	if _, err := c.Do(ctx, "SUBSCRIBE", "ch"); !errors.Is(err, redisx.ErrUnsupported) {
		t.Fatalf("Do(SUBSCRIBE) error = %v, want ErrUnsupported", err)
	}
	if _, err := c.Do(ctx); !errors.Is(err, redisx.ErrInvalidArgument) {
		t.Fatalf("Do() error = %v, want ErrInvalidArgument", err)
	}
	if _, err := c.Do(ctx, "SET", k, struct{}{}); !errors.Is(err, redisx.ErrInvalidArgument) {
		t.Fatalf("Do(SET, struct{}) error = %v, want ErrInvalidArgument", err)
	}
	// A blocking command must not hold up other callers.
	list := s.key(t, "list")
	done := make(chan error, 1)
	go func() {
		v, err := redis.Strings(c.Do(ctx, "BLPOP", list, 5))
		if err == nil && (len(v) != 2 || v[1] != "x") {
			err = fmt.Errorf("BLPOP = %q, want [%s x]", v, list)
		}
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	if _, err := c.Do(ctx, "RPUSH", list, "x"); err != nil {
		t.Fatalf("RPUSH while BLPOP waits: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("RPUSH took %v while a BLPOP was blocked", d)
	}
	if err := <-done; err != nil {
		t.Fatalf("BLPOP: %v", err)
	}
}

func (s *suite) serverError(t *testing.T) {
	c, ctx := s.client(t), ctxT(t)
	k := s.key(t, "k")
	if err := c.Set(ctx, k, []byte("not a number"), time.Minute); err != nil {
		t.Fatalf("Set: %v", err)
	}
	_, err := c.Do(ctx, "INCR", k)
	var re redis.Error
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "not an integer") {
		t.Fatalf("Do(INCR on a string) error = %v, want a redis.Error", err)
	}
	if v, err := c.Get(ctx, k); err != nil || string(v) != "not a number" {
		t.Fatalf("Get after a server error = %q, %v", v, err)
	}
}
