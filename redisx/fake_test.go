package redisx_test

import (
	"context"
	"fmt"

	"github.com/redisx-go/kit/strategy"
)

// fakeStrategy opens a backend that already runs, so that tests of pure
// facade logic can go through New (options, telemetry) without a server.
type fakeStrategy struct{ b strategy.Backend }

func (s fakeStrategy) Open(context.Context, strategy.Config) (strategy.Backend, error) {
	return s.b, nil
}

// fakeAppendBackend is the in-memory fakeBackend with strategy.Appender
// (appending allocates nothing when dst has room) and strategy.Doer (do
// answers every command; nil: PONG). It counts AppendGet calls.
type fakeAppendBackend struct {
	*fakeBackend
	do      func(args []any) (any, error)
	appends int
}

func newFakeAppend() *fakeAppendBackend { return &fakeAppendBackend{fakeBackend: newFake()} }

func (f *fakeAppendBackend) AppendGet(ctx context.Context, dst []byte, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return dst, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.appends++
	v, ok := f.data[key]
	if !ok {
		return dst, fmt.Errorf("%w: fake", strategy.ErrNotFound)
	}
	return append(dst, v...), nil
}

func (f *fakeAppendBackend) Do(ctx context.Context, args ...any) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if f.do == nil {
		return "PONG", nil
	}
	return f.do(args)
}

func (f *fakeAppendBackend) appendCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.appends
}
