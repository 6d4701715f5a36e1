package localcache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redisx-go/kit/strategy"
)

// TestStoreRecoveryFlushesBeforeServing: reads in flight when an
// invalidation connection is lost, or started while it is down, may have
// missed an invalidation: once it is back, none of them may store (let
// alone serve) its reply; a read started after the recovery may. Losses
// and recoveries count as flushes, the first subscription (Open) not.
func TestStoreRecoveryFlushesBeforeServing(t *testing.T) {
	s, err := newStore(1<<20, time.Minute, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	s.ttlKnown = true
	s.up() // Open: every listener subscribed
	if n := s.flushes.Load(); n != 0 {
		t.Fatalf("LocalFlushes = %d after the first subscription, want 0", n)
	}

	beforeLoss := s.reserve("a")
	s.down()
	whileDown := s.reserve("b")
	s.settle(whileDown, []byte("down"), true, strategy.NoTTL) // settles while down
	whileDown2 := s.reserve("c")
	s.up()
	s.settle(beforeLoss, []byte("stale"), true, strategy.NoTTL)
	s.settle(whileDown2, []byte("stale"), true, strategy.NoTTL)
	afterRecovery := s.reserve("d")
	s.settle(afterRecovery, []byte("fresh"), true, strategy.NoTTL)
	s.c.Wait()

	for _, k := range []string{"a", "b", "c"} {
		if e, ok := s.get(k); ok {
			t.Errorf("get(%q) = %q: a read begun before the recovery was served after it", k, e.val)
		}
	}
	if e, ok := s.get("d"); !ok || string(e.val) != "fresh" {
		t.Errorf("get(d) = %v, %v; want the read begun after the recovery", e, ok)
	}
	if n := s.flushes.Load(); n != 2 {
		t.Errorf("LocalFlushes = %d after one loss and its recovery, want 2", n)
	}
	s.stopServing()
	if _, ok := s.get("d"); ok {
		t.Errorf("get(d) served after stopServing")
	}
	if n := s.flushes.Load(); n != 2 {
		t.Errorf("LocalFlushes = %d after stopServing, want still 2", n)
	}
}

func openTestStore(t *testing.T, maxBytes int64) *store {
	t.Helper()
	s, err := newStore(maxBytes, time.Minute, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	s.up()
	return s
}

// TestStoreInvalidationIsImmediate: an invalidation takes effect when it
// returns, without waiting for ristretto's buffer — neither a reply
// stored just before it (whose Set ristretto has not applied yet) nor a
// read in flight across it is served afterwards, then or once ristretto
// has applied everything queued.
func TestStoreInvalidationIsImmediate(t *testing.T) {
	s := openTestStore(t, 1<<20)
	for i := range 100 {
		stored, inFlight := fmt.Sprintf("stored:%d", i), fmt.Sprintf("in-flight:%d", i)
		s.settle(s.reserve(stored), []byte("old"), true, strategy.NoTTL)
		if _, ok := s.get(stored); !ok {
			t.Fatalf("get(%q) right after its read settled: a miss, want a hit", stored)
		}
		tk := s.reserve(inFlight)
		s.invalidate(stored, inFlight)
		s.settle(tk, []byte("old"), true, strategy.NoTTL)
		for _, k := range []string{stored, inFlight} {
			if e, ok := s.get(k); ok {
				t.Fatalf("get(%q) = %q after its invalidation returned", k, e.val)
			}
		}
	}
	s.c.Wait()
	for i := range 100 {
		for _, k := range []string{fmt.Sprintf("stored:%d", i), fmt.Sprintf("in-flight:%d", i)} {
			if e, ok := s.get(k); ok {
				t.Fatalf("get(%q) = %q once ristretto applied its buffer", k, e.val)
			}
		}
	}
}

// TestStoreConcurrentReadsOfOneKeyKeepItsEntry: two reads of a key in
// flight together both settle; the key stays served once ristretto has
// applied both Sets. (Ristretto takes a second Set of a key new to it,
// queued behind the first, for one to reject: the index must not lose
// the key to that rejection.)
func TestStoreConcurrentReadsOfOneKeyKeepItsEntry(t *testing.T) {
	s := openTestStore(t, 1<<20)
	for i := range 100 {
		k := fmt.Sprintf("k:%d", i)
		t1, t2 := s.reserve(k), s.reserve(k)
		s.settle(t1, []byte("v"), true, strategy.NoTTL)
		s.settle(t2, []byte("v"), true, strategy.NoTTL)
	}
	s.c.Wait()
	for i := range 100 {
		if _, ok := s.get(fmt.Sprintf("k:%d", i)); !ok {
			t.Fatalf("get(k:%d) after two reads of it settled: a miss, want a hit", i)
		}
	}
}

// TestStoreStaysWithinMaxBytes: what the index serves is what ristretto
// holds, within MaxBytes, however many replies are stored: ristretto's
// evictions and rejections take entries out of the index too.
func TestStoreStaysWithinMaxBytes(t *testing.T) {
	const maxBytes = 64 << 10
	s := openTestStore(t, maxBytes)
	val := make([]byte, 100)
	for i := range 5000 {
		s.settle(s.reserve(fmt.Sprintf("key:%d", i)), val, true, strategy.NoTTL)
		if i%500 == 0 {
			s.c.Wait()
		}
	}
	s.c.Wait()
	var n, indexed int64
	for _, e := range s.index.All() {
		n++
		indexed += e.cost
	}
	t.Logf("%d entries (%d bytes) indexed, %d bytes held by ristretto, %d evictions", n, indexed, s.bytes.Load(), s.evictions.Load())
	if indexed > maxBytes || s.bytes.Load() > maxBytes {
		t.Errorf("indexed %d bytes, ristretto holds %d; want both <= MaxBytes %d", indexed, s.bytes.Load(), maxBytes)
	}
	if n == 0 {
		t.Errorf("nothing indexed after 5000 stores: the check proves nothing")
	}
}

// TestStoreCountsEveryLookup: hits and misses are counted on stripes, and
// summed exactly.
func TestStoreCountsEveryLookup(t *testing.T) {
	s := openTestStore(t, 1<<20)
	s.settle(s.reserve("hit"), []byte("v"), true, strategy.NoTTL)
	const goroutines, lookups = 16, 1000
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range lookups {
				s.get("hit")
				s.get("miss")
			}
		})
	}
	wg.Wait()
	if h, m := s.hits(), s.misses(); h != goroutines*lookups || m != goroutines*lookups {
		t.Errorf("hits %d, misses %d; want %d each", h, m, goroutines*lookups)
	}
}

// TestStoreFlights: a miss joins the key's read in flight while that
// read's reply may still be stored, and gets that reply, found or not, in
// a copy of its own; it leads a new flight instead after an invalidation
// of the key, a flush, or while the store is down; a failed flight sends
// its waiters to read for themselves.
func TestStoreFlights(t *testing.T) {
	s := openTestStore(t, 1<<20)
	ctx := context.Background()
	lead := func(key string) ticket {
		t.Helper()
		tk, f := s.reserveOrJoin(key)
		if f != nil {
			t.Fatalf("reserveOrJoin(%q) joined a flight, want to lead one", key)
		}
		return tk
	}
	join := func(key string) *flight {
		t.Helper()
		_, f := s.reserveOrJoin(key)
		if f == nil {
			t.Fatalf("reserveOrJoin(%q) leads a flight, want to join the one in flight", key)
		}
		return f
	}

	// Joined: the leader's reply, in the joiner's own buffer.
	tk := lead("a")
	f := join("a")
	val := []byte("value")
	s.settle(tk, val, true, strategy.NoTTL)
	val[0] = 'X' // the leader's caller owns its value
	if got, _, ok, err := f.wait(ctx, []byte("dst:")); !ok || err != nil || string(got) != "dst:value" {
		t.Fatalf("joined flight: wait = %q, ok %v, %v; want \"dst:value\"", got, ok, err)
	}
	tk = lead("missing")
	f = join("missing")
	s.settle(tk, nil, false, strategy.NoTTL)
	if _, _, ok, err := f.wait(ctx, nil); !ok || !errors.Is(err, strategy.ErrNotFound) {
		t.Fatalf("joined flight of a missing key: wait = ok %v, %v; want ErrNotFound", ok, err)
	}

	// Not joined once the flight's reply can no longer be stored.
	for name, void := range map[string]func(key string){
		"invalidation": func(key string) { s.invalidate(key) },
		"flush":        func(string) { s.flush() },
		"loss":         func(string) { s.down(); s.up() },
	} {
		key := "b:" + name
		old := lead(key)
		void(key)
		fresh := lead(key) // fails the test if it joins old's flight
		s.settle(old, []byte("old"), true, strategy.NoTTL)
		s.settle(fresh, []byte("fresh"), true, strategy.NoTTL)
		if e, ok := s.get(key); !ok || string(e.val) != "fresh" {
			t.Errorf("after %s: get = %v, %v; want the fresh read's reply stored", name, e, ok)
		}
	}
	s.down()
	lead("c")
	lead("c") // down: no joining
	s.up()

	// A failed flight: its waiters read for themselves.
	tk = lead("d")
	f = join("d")
	s.release(tk)
	if _, _, ok, err := f.wait(ctx, nil); ok || err != nil {
		t.Fatalf("failed flight: wait = ok %v, %v; want not ok, no error", ok, err)
	}
	// A done context ends the wait, with its error.
	lead("e")
	f = join("e")
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, ok, err := f.wait(done, nil); !ok || !errors.Is(err, context.Canceled) {
		t.Fatalf("wait with a done context = ok %v, %v; want context.Canceled", ok, err)
	}
}
