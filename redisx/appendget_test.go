package redisx_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// TestAppendGetAppendsToDst runs AppendGet against a real server through
// each strategy: a hit appends to dst (in place when dst has room), a
// miss and an empty value leave dst as it was, and the result is the
// caller's: changing it changes nothing the next read sees.
func TestAppendGetAppendsToDst(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	for _, s := range []strategy.Strategy{strategy.Multiplexed{}, strategy.Pool{Size: 2}, localcache.Near{}} {
		t.Run(fmt.Sprintf("%T", s), func(t *testing.T) {
			ctx := t.Context()
			c, err := redisx.New(ctx, redisx.Options{Addrs: []string{srv.Addr()}, Strategy: s})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			key, empty, missing := fmt.Sprintf("append:%T", s), fmt.Sprintf("append:%T:empty", s), fmt.Sprintf("append:%T:missing", s)
			if _, err := c.Del(ctx, missing); err != nil {
				t.Fatal(err)
			}
			if err := c.MSet(ctx, map[string][]byte{key: []byte("value"), empty: {}}, time.Minute); err != nil {
				t.Fatal(err)
			}

			// Twice: the second read may be a near-cache hit.
			for range 2 {
				buf := make([]byte, 0, 64)
				buf = append(buf, "prefix:"...)
				got, err := c.AppendGet(ctx, buf, key)
				if err != nil || string(got) != "prefix:value" {
					t.Fatalf("AppendGet(%q, %q) = %q, %v; want %q, nil", buf, key, got, err, "prefix:value")
				}
				if &got[0] != &buf[0] {
					t.Errorf("AppendGet into a dst with room moved it to a new array")
				}
				got[len("prefix:")] = 'X' // the caller's to modify
				if v, err := c.Get(ctx, key); err != nil || string(v) != "value" {
					t.Fatalf("Get(%q) after modifying AppendGet's result = %q, %v; want %q", key, v, err, "value")
				}
			}

			dst := []byte("keep")
			got, err := c.AppendGet(ctx, dst, missing)
			if !errors.Is(err, redisx.ErrNotFound) || string(got) != "keep" || len(got) != len(dst) {
				t.Errorf("AppendGet(%q, missing) = %q, %v; want %q, ErrNotFound", dst, got, err, "keep")
			}
			got, err = c.AppendGet(ctx, dst, empty)
			if err != nil || string(got) != "keep" {
				t.Errorf("AppendGet(%q, empty value) = %q, %v; want %q, nil", dst, got, err, "keep")
			}
			got, err = c.AppendGet(ctx, nil, key)
			if err != nil || string(got) != "value" {
				t.Errorf("AppendGet(nil, %q) = %q, %v; want %q, nil", key, got, err, "value")
			}
		})
	}
}

func TestAppendGetUsesBackendAppender(t *testing.T) {
	ctx := context.Background()
	f := newFakeAppend()
	c := redisx.NewFromBackend(f)
	defer c.Close()
	if err := c.Set(ctx, "k", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	got, err := c.AppendGet(ctx, []byte("a"), "k")
	if err != nil || string(got) != "av" {
		t.Fatalf("AppendGet = %q, %v; want %q, nil", got, err, "av")
	}
	if n, g := f.appendCount(), f.getCount(); n != 1 || g != 0 {
		t.Errorf("backend saw %d AppendGet and %d Get calls; want 1 and 0", n, g)
	}
}

func TestAppendGetFallsBackToGet(t *testing.T) {
	ctx := context.Background()
	c, f := newFakeClient(t)
	if err := c.Set(ctx, "k", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	got, err := c.AppendGet(ctx, []byte("a"), "k")
	if err != nil || string(got) != "av" {
		t.Fatalf("AppendGet = %q, %v; want %q, nil", got, err, "av")
	}
	if g := f.getCount(); g != 1 {
		t.Errorf("backend saw %d Get calls; want 1", g)
	}
	f.setGetErr(fmt.Errorf("%w: fake reset", redisx.ErrConnection))
	dst := []byte("a")
	if got, err := c.AppendGet(ctx, dst, "k"); !errors.Is(err, redisx.ErrConnection) || !bytes.Equal(got, dst) {
		t.Errorf("AppendGet on a failing backend = %q, %v; want %q, ErrConnection", got, err, dst)
	}
}
