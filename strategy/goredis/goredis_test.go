package goredis_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	redisv9 "github.com/redis/go-redis/v9"
	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/strategy"
	"github.com/redisx-go/kit/strategy/goredis"
)

// openGoRedis opens the GoRedis backend over a new go-redis client of
// addr speaking protocol (2 or 3); cleanup closes both.
func openGoRedis(t *testing.T, addr string, protocol int) strategy.Backend {
	t.Helper()
	rdb := redisv9.NewClient(&redisv9.Options{Addr: addr, Protocol: protocol, DisableIdentity: true})
	b, err := goredis.Strategy{Client: rdb, CloseClient: true}.Open(context.Background(), strategy.Config{})
	if err != nil {
		rdb.Close()
		t.Fatalf("GoRedis.Open: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func wrongType(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.HasPrefix(string(re), "WRONGTYPE")
}

// TestGoRedisReadErrorsStayErrors: a GET that fails with a server error
// (WRONGTYPE on a list key) among GETs that find a value or a missing key
// fails MGetWithTTL and GetWithTTL; it is never reported as a missing key.
func TestGoRedisReadErrorsStayErrors(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b := openGoRedis(t, srv.Addr(), 3)
	tg := b.(strategy.TTLGetter)
	if err := b.Set(ctx, "goredis:str", []byte("v"), 0); err != nil {
		t.Fatalf("Set: %v", err)
	}
	if _, err := b.(strategy.Doer).Do(ctx, "RPUSH", "goredis:list", "x"); err != nil {
		t.Fatalf("RPUSH: %v", err)
	}

	// The missing key comes first: go-redis's Exec error is then
	// redis.Nil, which hid the WRONGTYPE behind it.
	for _, keys := range [][]string{
		{"goredis:missing", "goredis:str", "goredis:list"},
		{"goredis:list", "goredis:missing"},
	} {
		vs, ttls, err := tg.MGetWithTTL(ctx, keys)
		if !wrongType(err) || vs != nil || ttls != nil {
			t.Errorf("MGetWithTTL(%q) = %q, %v, %v; want nil, nil and a WRONGTYPE redis.Error", keys, vs, ttls, err)
		}
	}
	if v, _, err := tg.GetWithTTL(ctx, "goredis:list"); !wrongType(err) {
		t.Errorf("GetWithTTL(list key) = %q, %v; want a WRONGTYPE redis.Error", v, err)
	}
	if _, _, err := tg.GetWithTTL(ctx, "goredis:missing"); !errors.Is(err, strategy.ErrNotFound) {
		t.Errorf("GetWithTTL(missing) error = %v, want ErrNotFound", err)
	}
	vs, ttls, err := tg.MGetWithTTL(ctx, []string{"goredis:missing", "goredis:str"})
	if err != nil || len(vs) != 2 || vs[0] != nil || string(vs[1]) != "v" || ttls[1] != strategy.NoTTL {
		t.Errorf("MGetWithTTL(missing, str) = %q, %v, %v; want [nil v], [_ NoTTL], nil", vs, ttls, err)
	}
}

// TestGoRedisDoReplyTypesMatchMultiplexed: every RESP3 reply type (DEBUG
// PROTOCOL sends each) reaches a Do caller of GoRedis, over RESP3 and
// RESP2, as the same Go value as through Multiplexed.
func TestGoRedisDoReplyTypesMatchMultiplexed(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{Args: []string{"--enable-debug-command", "local"}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	mux, err := strategy.Multiplexed{}.Open(ctx, strategy.Config{Addrs: []string{srv.Addr()}})
	if err != nil {
		t.Fatalf("Multiplexed.Open: %v", err)
	}
	defer mux.Close()
	want := func(args ...any) any {
		t.Helper()
		v, err := mux.(strategy.Doer).Do(ctx, args...)
		if err != nil {
			t.Fatalf("Multiplexed Do(%v): %v", args, err)
		}
		return v
	}
	if _, err := mux.(strategy.Doer).Do(ctx, "ZADD", "goredis:z", "1.5", "m"); err != nil {
		t.Fatalf("ZADD: %v", err)
	}
	cmds := [][]any{
		{"SET", "goredis:k", "OK"}, {"GET", "goredis:k"}, {"PING"}, {"PING", "hi"}, {"TYPE", "goredis:k"},
		{"ZSCORE", "goredis:z", "m"}, {"ZRANGE", "goredis:z", 0, -1, "WITHSCORES"},
		{"EVAL", "return {1, redis.error_reply('ERR inside')}", 0},
	}
	for _, typ := range []string{"string", "integer", "double", "bignum", "null", "array", "set", "map", "true", "false", "verbatim"} {
		cmds = append(cmds, []any{"DEBUG", "PROTOCOL", typ})
	}
	for _, protocol := range []int{2, 3} {
		b := openGoRedis(t, srv.Addr(), protocol).(strategy.Doer)
		for _, args := range cmds {
			if protocol == 3 && args[0] == "ZRANGE" {
				continue // RESP3 changes its shape: [[member score]…] (see GoRedis's doc)
			}
			got, err := b.Do(ctx, args...)
			if w := want(args...); err != nil || !reflect.DeepEqual(got, w) {
				t.Errorf("RESP%d: GoRedis Do(%v) = %#v, %v; Multiplexed returns %#v", protocol, args, got, err, w)
			}
		}
	}
}
