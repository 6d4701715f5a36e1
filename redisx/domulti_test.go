package redisx_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/redisx-go/kit/redisx"
)

// DoMulti's facade logic: the fallback over Do, the batch refused before
// anything is sent, and the retry rule (every command unsent, or none).

func TestDoMultiFallsBackToDoPerCommandInOrder(t *testing.T) {
	f := newFakeAppend()
	var seen []string
	f.do = func(args []any) (any, error) {
		seen = append(seen, args[1].(string))
		return args[1], nil
	}
	c := redisx.NewFromBackend(f)
	defer c.Close()
	res := c.DoMulti(t.Context(), []any{"ECHO", "a"}, []any{"ECHO", "b"}, []any{"ECHO", "c"})
	if !slices.Equal(seen, []string{"a", "b", "c"}) {
		t.Errorf("Do calls %q; want a, b, c in order", seen)
	}
	for i, want := range []string{"a", "b", "c"} {
		if res[i].Err != nil || res[i].Value != want {
			t.Errorf("result %d = %v, %v; want %q", i, res[i].Value, res[i].Err, want)
		}
	}
}

func TestDoMultiFallbackRefusesTheBatchBeforeSending(t *testing.T) {
	f := newFakeAppend()
	calls := 0
	f.do = func(args []any) (any, error) { calls++; return "OK", nil }
	c := redisx.NewFromBackend(f)
	defer c.Close()
	res := c.DoMulti(t.Context(), []any{"SET", "k", "v"}, []any{"WATCH", "k"})
	if calls != 0 {
		t.Errorf("%d commands sent; want none", calls)
	}
	for i, r := range res {
		if !errors.Is(r.Err, redisx.ErrUnsupported) {
			t.Errorf("result %d = %v; want ErrUnsupported", i, r.Err)
			continue
		}
		// One prefix, and the refused command named as people count.
		if msg := r.Err.Error(); !strings.HasPrefix(msg, "redisx: ") || strings.Count(msg, "redisx:") != 1 || !strings.Contains(msg, "command #2 (index 1)") {
			t.Errorf("result %d: error %q; want one \"redisx:\" prefix, at its start, naming command #2 (index 1)", i, msg)
		}
	}
}

func TestDoMultiWithoutDoerIsUnsupported(t *testing.T) {
	c, _ := newFakeClient(t)
	for i, r := range c.DoMulti(t.Context(), []any{"GET", "k"}, []any{"GET", "j"}) {
		if !errors.Is(r.Err, redisx.ErrUnsupported) {
			t.Errorf("result %d = %v; want ErrUnsupported", i, r.Err)
		}
	}
}

func TestDoMultiRetriesOnlyABatchOfWhichNothingRan(t *testing.T) {
	notSent := unsentErr(t)
	t.Run("EveryCommandUnsent", func(t *testing.T) {
		c, _ := newFlaky(t, fast, nil, notSent, notSent)
		res := c.DoMulti(t.Context(), []any{"SET", "a", "1"}, []any{"SET", "b", "2"})
		for i, r := range res {
			if r.Err != nil {
				t.Errorf("result %d after a retry: %v; want success", i, r.Err)
			}
		}
		if n := c.Stats().Retries; n != 1 {
			t.Errorf("Retries = %d; want 1", n)
		}
	})
	t.Run("OneCommandRan", func(t *testing.T) {
		c, _ := newFlaky(t, fast, nil, notSent, nil)
		res := c.DoMulti(t.Context(), []any{"SET", "a", "1"}, []any{"SET", "b", "2"})
		if !errors.Is(res[0].Err, redisx.ErrConnection) || res[1].Err != nil {
			t.Errorf("results = %v; want the first's failure and the second's success, as they came", res)
		}
		if n := c.Stats().Retries; n != 0 {
			t.Errorf("Retries = %d; want 0: part of the batch ran", n)
		}
	})
}

func TestDoMultiHonoursDoneContextAndClose(t *testing.T) {
	c, _ := newFakeClient(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if r := c.DoMulti(ctx, []any{"GET", "k"}); !errors.Is(r[0].Err, context.Canceled) {
		t.Errorf("DoMulti with a done context = %v; want context.Canceled", r[0].Err)
	}
	c.Close()
	if r := c.DoMulti(t.Context(), []any{"GET", "k"}); !errors.Is(r[0].Err, redisx.ErrClosed) {
		t.Errorf("DoMulti after Close = %v; want ErrClosed", r[0].Err)
	}
}
