package strategytest

import (
	"bytes"
	"context"
	"errors"
	"time"

	"testing"

	"github.com/redisx-go/kit/strategy"
)

// checkBasics checks the cache operations against the Backend contract:
// a value read back is the caller's to modify; a missing key is
// ErrNotFound; an empty value is a non-nil empty slice; keys and values
// are binary-safe; Del counts the keys that existed; MGet and MSet —
// the Backend's own, or their fallbacks (strategy.Capabilities) — keep
// the keys' order and store the ttl.
func checkBasics(t *testing.T, f Fixture) {
	ctx, cancel := bounded(10 * time.Second)
	defer cancel()
	b := f.Backend
	k, missing, empty := f.Key("basics:k"), f.Key("basics:missing"), f.Key("basics:empty")
	m1, m2 := f.Key("basics:m1"), f.Key("basics:m2")

	if err := b.Set(ctx, k, []byte("value"), 0); err != nil {
		t.Fatalf("Set: %v", err)
	}
	v, err := b.Get(ctx, k)
	if err != nil || string(v) != "value" {
		t.Fatalf("Get after Set = %q, %v; want \"value\", nil", v, err)
	}
	v[0] = 'X' // the caller's: no later read may see it
	if v, err := b.Get(ctx, k); err != nil || string(v) != "value" {
		t.Errorf("Get after the caller modified an earlier result = %q, %v; want \"value\", nil", v, err)
	}
	if v, err := b.Get(ctx, missing); !errors.Is(err, strategy.ErrNotFound) {
		t.Errorf("Get of a missing key = %q, %v; want ErrNotFound", v, err)
	}
	if err := b.Set(ctx, empty, nil, 0); err != nil {
		t.Fatalf("Set of an empty value: %v", err)
	}
	if v, err := b.Get(ctx, empty); err != nil || v == nil || len(v) != 0 {
		t.Errorf("Get of an empty value = %#v, %v; want a non-nil empty slice", v, err)
	}
	key, val := f.Key("basics:\x00\xff\r\nkey"), []byte("\r\n$3\r\n\x00value\xff")
	if err := b.Set(ctx, key, val, time.Minute); err != nil {
		t.Fatalf("Set of a binary key and value: %v", err)
	}
	if v, err := b.Get(ctx, key); err != nil || !bytes.Equal(v, val) {
		t.Errorf("Get of a binary key = %q, %v; want %q", v, err, val)
	}
	if n, err := b.Del(ctx, k, key, missing); err != nil || n != 2 {
		t.Errorf("Del of 2 keys that exist and 1 that does not = %d, %v; want 2", n, err)
	}

	caps := strategy.CapabilitiesOf(b)
	kv := map[string][]byte{m1: []byte("one"), m2: []byte("two")}
	if err := caps.MSet(ctx, kv, time.Minute); err != nil {
		t.Fatalf("MSet: %v", err)
	}
	vs, err := caps.MGet(ctx, []string{m2, missing, m1})
	if err != nil || len(vs) != 3 || string(vs[0]) != "two" || vs[1] != nil || string(vs[2]) != "one" {
		t.Errorf("MGet(m2, missing, m1) = %q, %v; want [two <nil> one]", vs, err)
	}
	if caps.HasDo() {
		ms, err := caps.Do(ctx, "PTTL", m1)
		if n, ok := ms.(int64); err != nil || !ok || n <= 0 || n > time.Minute.Milliseconds() {
			t.Errorf("PTTL of a key MSet with a 1m ttl = %v, %v; want 1..60000", ms, err)
		}
	}
	f.Close()
}

// checkClosed checks that every call on a closed backend fails with an
// error wrapping ErrClosed, and that a second Close returns nil.
func checkClosed(t *testing.T, f Fixture) {
	k, j := f.Key("closed:k"), f.Key("closed:j")
	mustSet(t, f.Backend, k, "v")
	f.Close()
	if err := f.Backend.Close(); err != nil {
		t.Errorf("second Close = %v; want nil", err)
	}
	ctx := context.Background()
	b, caps := f.Backend, strategy.CapabilitiesOf(f.Backend)
	calls := map[string]func() error{
		"Get": func() error { _, err := b.Get(ctx, k); return err },
		"Set": func() error { return b.Set(ctx, k, []byte("v"), 0) },
		"Del": func() error { _, err := b.Del(ctx, k); return err },
		"MGet": func() error {
			_, err := caps.MGet(ctx, []string{k, j})
			return err
		},
		"MSet": func() error { return caps.MSet(ctx, map[string][]byte{k: []byte("v")}, 0) },
	}
	if caps.HasDo() {
		calls["Do"] = func() error { _, err := caps.Do(ctx, "GET", k); return err }
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, strategy.ErrClosed) {
			t.Errorf("%s after Close = %v; want ErrClosed", name, err)
		}
	}
}

// checkContextEnded checks that a call whose context has already ended
// returns at once, with an error wrapping the context's, and sends
// nothing that would change a key.
func checkContextEnded(t *testing.T, f Fixture) {
	b, k := f.Backend, f.Key("ended:k")
	mustSet(t, b, k, "before")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if _, err := b.Get(ctx, k); !errors.Is(err, context.Canceled) {
		t.Errorf("Get with a cancelled context = %v; want an error wrapping context.Canceled", err)
	}
	if err := b.Set(ctx, k, []byte("after"), 0); !errors.Is(err, context.Canceled) {
		t.Errorf("Set with a cancelled context = %v; want an error wrapping context.Canceled", err)
	}
	if took := time.Since(start); took > slack {
		t.Errorf("two calls with a cancelled context took %v; want them to return at once", took)
	}
	live, done := bounded(5 * time.Second)
	defer done()
	if v, err := b.Get(live, k); err != nil || string(v) != "before" {
		t.Errorf("Get after a Set with a cancelled context = %q, %v; want \"before\": the Set was sent", v, err)
	}
	f.Close()
}

// mustSet stores value under key through b, within 5 s.
func mustSet(t *testing.T, b strategy.Backend, key, value string) {
	t.Helper()
	ctx, cancel := bounded(5 * time.Second)
	defer cancel()
	if err := b.Set(ctx, key, []byte(value), time.Minute); err != nil {
		t.Fatalf("Set(%q): %v", key, err)
	}
}
