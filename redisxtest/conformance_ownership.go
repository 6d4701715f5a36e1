package redisxtest

import (
	"bytes"
	"maps"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// The checks of this file are about what a call hands back: bytes the
// caller may keep and modify, and Do replies of the same Go types on
// every strategy.

// returnedBytesAreTheCallers modifies every value Get and MGet return and
// reads again: a strategy that keeps values (a near-cache) must have
// handed out copies. The reads repeat for a while so that a near-cache
// serves some of them locally.
func (s *suite) returnedBytesAreTheCallers(t *testing.T) {
	c, ctx := s.client(t), ctxT(t)
	a, b := s.key(t, "a"), s.key(t, "b")
	if err := c.MSet(ctx, map[string][]byte{a: []byte("hello"), b: []byte("world")}, time.Minute); err != nil {
		t.Fatalf("MSet: %v", err)
	}
	for i := range 30 {
		v, err := c.Get(ctx, a)
		if err != nil || string(v) != "hello" {
			t.Fatalf("Get(%q), read %d after modifying what earlier reads returned = %q, %v; want %q, nil", a, i, v, err, "hello")
		}
		v[0] = 'J'
		vs, err := c.MGet(ctx, a, b)
		if err != nil || len(vs) != 2 || string(vs[0]) != "hello" || string(vs[1]) != "world" {
			t.Fatalf("MGet(a, b), read %d after modifying what earlier reads returned = %q, %v; want [hello world], nil", i, vs, err)
		}
		vs[0][0], vs[1][0] = 'J', 'J'
		// Appending to one value must not write into another.
		vs[0] = append(vs[0], "XXXXXXXXXXXXXXXX"...)
		if string(vs[1]) != "Jorld" {
			t.Fatalf("appending to MGet's first value changed its second to %q", vs[1])
		}
		time.Sleep(time.Millisecond)
	}
}

// doReplyTypes checks that Do replies use redigo's types whatever the
// strategy (and whatever protocol its connections speak), so that
// redigo's helpers convert them.
func (s *suite) doReplyTypes(t *testing.T) {
	c, ctx := s.client(t), ctxT(t)
	h, k, n, list, missing := s.key(t, "h"), s.key(t, "k"), s.key(t, "n"), s.key(t, "list"), s.key(t, "missing")

	if v, err := c.Do(ctx, "SET", k, "v"); err != nil || v != "OK" {
		t.Errorf("Do(SET) = %#v, %v; want the status string \"OK\"", v, err)
	}
	if v, err := c.Do(ctx, "GET", k); err != nil || !bytesEqual(v, "v") {
		t.Errorf("Do(GET) = %#v (%T), %v; want []byte(\"v\")", v, v, err)
	}
	if v, err := c.Do(ctx, "GET", missing); err != nil || v != nil {
		t.Errorf("Do(GET missing) = %#v, %v; want nil, nil", v, err)
	}
	if v, err := c.Do(ctx, "INCR", n); err != nil || v != int64(1) {
		t.Errorf("Do(INCR) = %#v (%T), %v; want int64(1)", v, v, err)
	}
	if _, err := c.Do(ctx, "HSET", h, "f1", "v1", "f2", "v2"); err != nil {
		t.Fatalf("Do(HSET): %v", err)
	}
	m, err := redis.StringMap(c.Do(ctx, "HGETALL", h))
	if want := map[string]string{"f1": "v1", "f2": "v2"}; err != nil || !maps.Equal(m, want) {
		t.Errorf("redis.StringMap(Do(HGETALL)) = %v, %v; want %v", m, err, want)
	}
	if _, err := c.Do(ctx, "RPUSH", list, "a", "b"); err != nil {
		t.Fatalf("Do(RPUSH): %v", err)
	}
	v, err := c.Do(ctx, "LRANGE", list, 0, -1)
	vs, ok := v.([]any)
	if err != nil || !ok || len(vs) != 2 || !bytesEqual(vs[0], "a") || !bytesEqual(vs[1], "b") {
		t.Errorf("Do(LRANGE) = %#v, %v; want []any{[]byte(\"a\"), []byte(\"b\")}", v, err)
	}
}

func bytesEqual(v any, want string) bool {
	b, ok := v.([]byte)
	return ok && bytes.Equal(b, []byte(want))
}
