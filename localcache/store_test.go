package localcache

import (
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
