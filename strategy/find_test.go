package strategy_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/redisx-go/kit/strategy"
)

// A chain of test backends: an outer decorator that is a SelfRetrier
// saying no, over one that dials sessions and retries, over a Doer.
type (
	leaf  struct{ strategy.Backend }
	inner struct{ in strategy.Backend }
	outer struct{ in strategy.Backend }
)

func (leaf) Do(context.Context, ...any) (any, error) { return "leaf", nil }

func (i inner) Unwrap() strategy.Backend { return i.in }
func (inner) RetriesCalls() bool         { return true }
func (inner) DialSession(context.Context, int, func(net.Conn) error) (net.Conn, error) {
	return nil, errors.New("inner dials")
}
func (i inner) Get(context.Context, string) ([]byte, error)              { return nil, nil }
func (i inner) Set(context.Context, string, []byte, time.Duration) error { return nil }
func (i inner) Del(context.Context, ...string) (int64, error)            { return 0, nil }
func (i inner) Close() error                                             { return nil }

func (o outer) Unwrap() strategy.Backend                                 { return o.in }
func (outer) RetriesCalls() bool                                         { return false }
func (o outer) Get(context.Context, string) ([]byte, error)              { return nil, nil }
func (o outer) Set(context.Context, string, []byte, time.Duration) error { return nil }
func (o outer) Del(context.Context, ...string) (int64, error)            { return 0, nil }
func (o outer) Close() error                                             { return nil }

func TestFindWalksTheUnwrapChainOutermostFirst(t *testing.T) {
	b := outer{inner{leaf{}}}
	if d, ok := strategy.Find[strategy.Doer](b); !ok || d != (leaf{}) {
		t.Errorf("Find[Doer] = %v, %v; want the leaf", d, ok)
	}
	if r, ok := strategy.Find[strategy.SelfRetrier](b); !ok || r.RetriesCalls() {
		t.Errorf("Find[SelfRetrier] = %v, %v; want the outer one (which says false)", r, ok)
	}
	if _, ok := strategy.Find[strategy.NodeDoer](b); ok {
		t.Error("Find[NodeDoer] found one in a chain that has none")
	}
	if _, ok := strategy.Find[strategy.Doer](nil); ok {
		t.Error("Find on a nil Backend found something")
	}
}

func TestCapabilitiesLookAlongTheChainOnlyWhereDecoratorsNeedNot(t *testing.T) {
	c := strategy.CapabilitiesOf(outer{inner{leaf{}}})
	// Do must be the outer backend's own: a decorator hides what it does
	// not implement.
	if c.HasDo() {
		t.Error("HasDo: Do found along the chain")
	}
	if _, err := c.Do(context.Background(), "PING"); !errors.Is(err, strategy.ErrUnsupported) {
		t.Errorf("Do = %v, want ErrUnsupported", err)
	}
	// Sessions and self-retries are found along it; a SelfRetrier that
	// says false does not hide one further in that says true.
	if _, err := c.DialSession(context.Background(), -1, nil); err == nil || err.Error() != "inner dials" {
		t.Errorf("DialSession = %v, want the inner backend's", err)
	}
	if !c.RetriesCalls() {
		t.Error("RetriesCalls = false, want the inner SelfRetrier's true")
	}
	if c.Masters() != nil {
		t.Errorf("Masters = %v without a NodeDoer, want none", c.Masters())
	}
	if _, err := c.Dedicated(context.Background(), nil); !errors.Is(err, strategy.ErrUnsupported) {
		t.Errorf("Dedicated = %v, want ErrUnsupported", err)
	}
}
