package mux

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/faultproxy"
	"github.com/redisx-go/kit/internal/launcher"
)

// A lone caller's big values: read on its own goroutine, as a pooled
// connection's caller would, and still within its context.

// callsMade makes n's calls observable: every call the node creates from
// now on is recorded, and mark sets the state of those made so far to a
// value no call takes, so that used returns the calls used since.
type callsMade struct {
	mu   sync.Mutex
	made []*call
}

const callUnused uint32 = 99

func recordCalls(n *Node) *callsMade {
	r := &callsMade{}
	n.calls.p.New = func() any {
		c := &call{done: make(chan struct{}, 1)}
		r.mu.Lock()
		r.made = append(r.made, c)
		r.mu.Unlock()
		return c
	}
	return r
}

func (r *callsMade) mark() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.made {
		c.state.Store(callUnused)
	}
}

func (r *callsMade) used() []*call {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*call
	for _, c := range r.made {
		if c.state.Load() != callUnused {
			out = append(out, c)
		}
	}
	return out
}

// TestMuxLoneCallerReadsItsOwnBigReply: a lone Get of a 32 KiB value
// with a context that can end is read by its caller, as any reply that
// fits the read buffer whole, not handed to the drainer: its call ends
// leading, not delivered.
func TestMuxLoneCallerReadsItsOwnBigReply(t *testing.T) {
	plain, secure, _ := muxReviewTargets(t)
	for _, tg := range []muxReviewTarget{plain, secure} {
		t.Run(tg.name, func(t *testing.T) {
			n := muxReviewNode(t, tg.addr, tg.tls, Options{}, 10*time.Second)
			calls := recordCalls(n)
			v := reviewBigValue("lone", 32<<10)
			if err := n.Set(context.Background(), "lone", v, time.Minute); err != nil {
				t.Fatal(err)
			}
			for range 3 {
				calls.mark()
				ctx, cancel := context.WithCancel(context.Background())
				got, err := n.Get(ctx, "lone")
				cancel()
				if err != nil || !bytes.Equal(got, v) {
					t.Fatalf("Get(lone) = %d bytes, %v; want its 32 KiB", len(got), err)
				}
				used := calls.used()
				if len(used) != 1 {
					t.Fatalf("%d calls used by one Get", len(used))
				}
				if s := used[0].state.Load(); s != callLeading {
					t.Errorf("the Get's call ended in state %d, want %d (leading: read by its caller)", s, callLeading)
				}
			}
		})
	}
}

// TestMuxLeaderLeavesAReplyItWasFilling: a lone caller whose reply fits
// the read buffer but comes slowly waits for it whole within its
// context; when the context ends mid-reply, it returns at once, the
// drainer reads and drops the rest, and the connection serves on.
func TestMuxLeaderLeavesAReplyItWasFilling(t *testing.T) {
	srv := launcher.Standalone(t, launcher.Options{})
	p, err := faultproxy.Start(context.Background(), srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	n := muxReviewNode(t, p.Addr(), nil, Options{Conns: 1}, 30*time.Second)
	bg := context.Background()
	v := reviewBigValue("filling", 40<<10)
	if err := n.Set(bg, "filling", v, time.Minute); err != nil {
		t.Fatal(err)
	}
	p.Bandwidth(faultproxy.Downstream, 8<<10) // ~5 s for the reply
	ctx, cancel := context.WithTimeout(bg, 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	got, err := n.Get(ctx, "filling")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Get = %d bytes, %v; want DeadlineExceeded", len(got), err)
	}
	if d := time.Since(start); d > 2500*time.Millisecond {
		t.Errorf("Get returned after %v, its deadline 500 ms", d)
	}
	p.Heal()
	for range 3 {
		if got, err := n.Get(bg, "filling"); err != nil || !bytes.Equal(got, v) {
			t.Errorf("Get after the abandoned reply = %d bytes, %v; want its 40 KiB", len(got), err)
		}
	}
}
