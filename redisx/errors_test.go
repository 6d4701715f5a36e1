package redisx_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redisx-go/kit/redisx"
)

// TestFacadeErrorsHaveOnePrefix: every error the facade builds or wraps
// reads "redisx: …" once, however many redisx errors it wraps, and
// matches its sentinels with errors.Is.
func TestFacadeErrorsHaveOnePrefix(t *testing.T) {
	ctx := context.Background()
	closed := redisx.NewFromBackend(newFake())
	closed.Close()
	tests := []struct {
		name string
		call func(c *redisx.Client) error
		want []error
	}{
		{"GetOrLoad nil loader", func(c *redisx.Client) error {
			_, err := c.GetOrLoad(ctx, "k", 0, nil)
			return err
		}, []error{redisx.ErrInvalidArgument}},
		{"Set negative ttl", func(c *redisx.Client) error {
			return c.Set(ctx, "k", nil, -time.Second)
		}, []error{redisx.ErrInvalidArgument}},
		{"GetOrLoad negative ttl", func(c *redisx.Client) error {
			_, err := c.GetOrLoad(ctx, "k", -time.Second, func(context.Context) ([]byte, error) { return nil, nil })
			return err
		}, []error{redisx.ErrInvalidArgument}},
		{"MSet nil map", func(c *redisx.Client) error {
			return c.MSet(ctx, nil, 0)
		}, []error{redisx.ErrInvalidArgument}},
		{"load error", func(c *redisx.Client) error {
			_, err := c.GetOrLoad(ctx, "k", 0, func(context.Context) ([]byte, error) { return nil, errors.New("database down") })
			return err
		}, []error{redisx.ErrLoad}},
		{"load error that is a redisx error", func(c *redisx.Client) error {
			_, err := c.GetOrLoad(ctx, "k", 0, func(ctx context.Context) ([]byte, error) {
				// A loader reading another key through the same client.
				return c.Get(ctx, "source")
			})
			return err
		}, []error{redisx.ErrLoad, redisx.ErrNotFound}},
		{"load error wrapping a redisx error", func(c *redisx.Client) error {
			_, err := c.GetOrLoad(ctx, "k", 0, func(context.Context) ([]byte, error) {
				return nil, fmt.Errorf("%w: upstream", redisx.ErrConnection)
			})
			return err
		}, []error{redisx.ErrLoad, redisx.ErrConnection}},
		{"loaded value over MaxValueSize", func(c *redisx.Client) error {
			_, err := c.GetOrLoad(ctx, "k", 0, func(context.Context) ([]byte, error) { return tooBig(), nil })
			return err
		}, []error{redisx.ErrLoad, redisx.ErrInvalidArgument}},
		{"Do without Doer", func(c *redisx.Client) error {
			_, err := c.Do(ctx, "PING")
			return err
		}, []error{redisx.ErrUnsupported}},
		{"Ping without Doer", func(c *redisx.Client) error {
			return c.Ping(ctx)
		}, []error{redisx.ErrUnsupported}},
		{"Get after Close", func(*redisx.Client) error {
			_, err := closed.Get(ctx, "k")
			return err
		}, []error{redisx.ErrClosed}},
		{"GetOrLoad after Close", func(*redisx.Client) error {
			_, err := closed.GetOrLoad(ctx, "k", 0, func(context.Context) ([]byte, error) { return nil, nil })
			return err
		}, []error{redisx.ErrClosed}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newFakeClient(t)
			err := tt.call(c)
			if err == nil {
				t.Fatal("no error")
			}
			if n := strings.Count(err.Error(), "redisx:"); n != 1 {
				t.Errorf("error %q has %d redisx: prefixes; want 1", err, n)
			}
			if !strings.HasPrefix(err.Error(), "redisx: ") {
				t.Errorf("error %q does not start with redisx:", err)
			}
			for _, want := range tt.want {
				if !errors.Is(err, want) {
					t.Errorf("error %q does not wrap %q", err, want)
				}
			}
		})
	}
}

// TestCallsWithDoneContextReturnContextError: a call whose context is
// already done returns that context's error, from every method, even on
// the facade's own paths that need no round trip (no keys, an empty map,
// no Doer) and even when the key is cached; the backend sees nothing.
func TestCallsWithDoneContextReturnContextError(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want error
	}{{"cancelled", cancelled, context.Canceled}, {"expired", expired, context.DeadlineExceeded}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := tc.ctx
			load := func(context.Context) ([]byte, error) { return []byte("v"), nil }
			calls := map[string]func(c *redisx.Client) error{
				"Get":               func(c *redisx.Client) error { _, err := c.Get(ctx, "cached"); return err },
				"AppendGet":         func(c *redisx.Client) error { _, err := c.AppendGet(ctx, nil, "cached"); return err },
				"Set":               func(c *redisx.Client) error { return c.Set(ctx, "k", []byte("v"), 0) },
				"Del":               func(c *redisx.Client) error { _, err := c.Del(ctx, "k"); return err },
				"Del no keys":       func(c *redisx.Client) error { _, err := c.Del(ctx); return err },
				"MGet":              func(c *redisx.Client) error { _, err := c.MGet(ctx, "cached"); return err },
				"MGet no keys":      func(c *redisx.Client) error { _, err := c.MGet(ctx); return err },
				"MSet":              func(c *redisx.Client) error { return c.MSet(ctx, map[string][]byte{"k": nil}, 0) },
				"MSet empty map":    func(c *redisx.Client) error { return c.MSet(ctx, map[string][]byte{}, 0) },
				"GetOrLoad hit":     func(c *redisx.Client) error { _, err := c.GetOrLoad(ctx, "cached", 0, load); return err },
				"GetOrLoad miss":    func(c *redisx.Client) error { _, err := c.GetOrLoad(ctx, "k", 0, load); return err },
				"Do without Doer":   func(c *redisx.Client) error { _, err := c.Do(ctx, "PING"); return err },
				"Ping without Doer": func(c *redisx.Client) error { return c.Ping(ctx) },
			}
			for name, call := range calls {
				c, f := newFakeClient(t)
				if err := c.Set(context.Background(), "cached", []byte("v"), 0); err != nil {
					t.Fatal(err)
				}
				before := f.calls()
				if err := call(c); !errors.Is(err, tc.want) {
					t.Errorf("%s with a %s context = %v; want %v", name, tc.name, err, tc.want)
				}
				if n := f.calls() - before; n != 0 {
					t.Errorf("%s with a %s context: backend saw %d calls; want 0", name, tc.name, n)
				}
			}
		})
	}
}
