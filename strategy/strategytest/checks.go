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
func checkBasics(t *testing.T, open Opener) {
	e := setup(t, open, strategy.Config{ReadTimeout: 3 * time.Second})
	ctx, cancel := bounded(10 * time.Second)
	defer cancel()
	b := e.c

	if err := b.Set(ctx, "basics:k", []byte("value"), 0); err != nil {
		t.Fatalf("Set: %v", err)
	}
	v, err := b.Get(ctx, "basics:k")
	if err != nil || string(v) != "value" {
		t.Fatalf("Get after Set = %q, %v; want \"value\", nil", v, err)
	}
	v[0] = 'X' // the caller's: no later read may see it
	if v, err := b.Get(ctx, "basics:k"); err != nil || string(v) != "value" {
		t.Errorf("Get after the caller modified an earlier result = %q, %v; want \"value\", nil", v, err)
	}
	if v, err := b.Get(ctx, "basics:missing"); !errors.Is(err, strategy.ErrNotFound) {
		t.Errorf("Get of a missing key = %q, %v; want ErrNotFound", v, err)
	}
	if err := b.Set(ctx, "basics:empty", nil, 0); err != nil {
		t.Fatalf("Set of an empty value: %v", err)
	}
	if v, err := b.Get(ctx, "basics:empty"); err != nil || v == nil || len(v) != 0 {
		t.Errorf("Get of an empty value = %#v, %v; want a non-nil empty slice", v, err)
	}
	key, val := "basics:\x00\xff\r\nkey", []byte("\r\n$3\r\n\x00value\xff")
	if err := b.Set(ctx, key, val, time.Minute); err != nil {
		t.Fatalf("Set of a binary key and value: %v", err)
	}
	if v, err := b.Get(ctx, key); err != nil || !bytes.Equal(v, val) {
		t.Errorf("Get of a binary key = %q, %v; want %q", v, err, val)
	}
	if n, err := b.Del(ctx, "basics:k", key, "basics:missing"); err != nil || n != 2 {
		t.Errorf("Del of 2 keys that exist and 1 that does not = %d, %v; want 2", n, err)
	}

	caps := strategy.CapabilitiesOf(b)
	kv := map[string][]byte{"basics:m1": []byte("one"), "basics:m2": []byte("two")}
	if err := caps.MSet(ctx, kv, time.Minute); err != nil {
		t.Fatalf("MSet: %v", err)
	}
	vs, err := caps.MGet(ctx, []string{"basics:m2", "basics:missing", "basics:m1"})
	if err != nil || len(vs) != 3 || string(vs[0]) != "two" || vs[1] != nil || string(vs[2]) != "one" {
		t.Errorf("MGet(m2, missing, m1) = %q, %v; want [two <nil> one]", vs, err)
	}
	if caps.HasDo() {
		ms, err := caps.Do(ctx, "PTTL", "basics:m1")
		if n, ok := ms.(int64); err != nil || !ok || n <= 0 || n > time.Minute.Milliseconds() {
			t.Errorf("PTTL of a key MSet with a 1m ttl = %v, %v; want 1..60000", ms, err)
		}
	}
	e.close()
}

// checkClosed checks that every call on a closed backend fails with an
// error wrapping ErrClosed, and that a second Close returns nil.
func checkClosed(t *testing.T, open Opener) {
	e := setup(t, open, strategy.Config{ReadTimeout: 3 * time.Second})
	e.mustSet("closed:k", "v")
	e.close()
	if err := e.c.Close(); err != nil {
		t.Errorf("second Close = %v; want nil", err)
	}
	ctx := context.Background()
	caps := e.do
	calls := map[string]func() error{
		"Get": func() error { _, err := e.c.Get(ctx, "closed:k"); return err },
		"Set": func() error { return e.c.Set(ctx, "closed:k", []byte("v"), 0) },
		"Del": func() error { _, err := e.c.Del(ctx, "closed:k"); return err },
		"MGet": func() error {
			_, err := caps.MGet(ctx, []string{"closed:k", "closed:j"})
			return err
		},
		"MSet": func() error { return caps.MSet(ctx, map[string][]byte{"closed:k": []byte("v")}, 0) },
	}
	if caps.HasDo() {
		calls["Do"] = func() error { _, err := caps.Do(ctx, "GET", "closed:k"); return err }
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
func checkContextEnded(t *testing.T, open Opener) {
	e := setup(t, open, strategy.Config{ReadTimeout: 3 * time.Second})
	e.mustSet("ended:k", "before")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if _, err := e.c.Get(ctx, "ended:k"); !errors.Is(err, context.Canceled) {
		t.Errorf("Get with a cancelled context = %v; want an error wrapping context.Canceled", err)
	}
	if err := e.c.Set(ctx, "ended:k", []byte("after"), 0); !errors.Is(err, context.Canceled) {
		t.Errorf("Set with a cancelled context = %v; want an error wrapping context.Canceled", err)
	}
	if took := time.Since(start); took > slack {
		t.Errorf("two calls with a cancelled context took %v; want them to return at once", took)
	}
	live, done := bounded(5 * time.Second)
	defer done()
	if v, err := e.c.Get(live, "ended:k"); err != nil || string(v) != "before" {
		t.Errorf("Get after a Set with a cancelled context = %q, %v; want \"before\": the Set was sent", v, err)
	}
	e.close()
}
