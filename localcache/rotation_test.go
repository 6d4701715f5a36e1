package localcache_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redisx-go/kit/internal/launcher"
	"github.com/redisx-go/kit/localcache"
	"github.com/redisx-go/kit/redisx"
	"github.com/redisx-go/kit/strategy"
)

// invalidationIDs returns the client IDs of the server's connections
// named name.
func invalidationIDs(t *testing.T, srv *launcher.Server, name string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list, err := srv.CLI(ctx, "CLIENT", "LIST")
	if err != nil {
		t.Fatalf("CLIENT LIST: %v", err)
	}
	var ids []string
	for line := range strings.Lines(list) {
		fields := strings.Fields(line)
		if len(fields) > 0 && strings.Contains(" "+strings.TrimSpace(line)+" ", " name="+name+" ") {
			ids = append(ids, strings.TrimPrefix(fields[0], "id="))
		}
	}
	return ids
}

// TestInvalidationConnectionRotates: with MaxConnAge 100 ms the
// invalidation connection is replaced again and again — by a successor
// subscribed before the old one is closed — and writes of another client
// keep invalidating local copies across the replacements. With
// TrackBroadcast the cache is never flushed and each write is an
// invalidation; with TrackKeys the data connections, replaced for their
// age too, take what they tracked with them (a flush each), and an old
// invalidation connection lives until they are replaced.
//
// The invalidation connections are pinged at the default interval (1 s):
// a connection silent for three intervals is taken for lost, which
// flushes the cache, as it must. Three intervals of a few tens of
// milliseconds are a silence a loaded machine causes now and then (the
// test, or the redis-server it starts, waiting for a CPU); the
// handovers, not the pings, are under test here — internal/subscribe's
// handover tests interleave the two.
func TestInvalidationConnectionRotates(t *testing.T) {
	const age = 100 * time.Millisecond
	srv := launcher.Standalone(t, launcher.Options{})
	for _, mode := range []localcache.Tracking{localcache.TrackBroadcast, localcache.TrackKeys} {
		for _, inner := range []strategy.Strategy{strategy.Multiplexed{}, strategy.Pool{Size: 2}} {
			t.Run(fmt.Sprintf("%v/%T", mode, inner), func(t *testing.T) { rotate(t, srv, mode, inner, age) })
		}
	}
}

func rotate(t *testing.T, srv *launcher.Server, mode localcache.Tracking, inner strategy.Strategy, age time.Duration) {
	const patience = 5 * time.Second
	name := fmt.Sprintf("rot-%d", time.Now().UnixNano())
	c, err := redisx.New(t.Context(), redisx.Options{
		Addrs:      []string{srv.Addr()},
		Strategy:   localcache.Near{Inner: inner, Tracking: mode},
		MaxConnAge: age,
		ClientName: name,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	key := "rot:" + name
	seen := map[string]bool{}
	most := 0
	for i := range 10 {
		want := fmt.Sprint("v", i)
		ctx, cancel := context.WithTimeout(context.Background(), 2*patience)
		if out, err := srv.CLI(ctx, "SET", key, want); err != nil {
			t.Fatalf("redis-cli SET: %v (%s)", err, out)
		}
		// The local copy of the last round is invalidated; read the
		// new value until it is served (and cached) again. The bound
		// is generous: a lost invalidation leaves the old copy served
		// for as long as it lives (Near.TTL, a minute).
		deadline := time.Now().Add(patience)
		for {
			v, err := c.Get(ctx, key)
			if err == nil && string(v) == want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: Get(%q) = %q, %v %v after another client set %q: the write did not invalidate the local copy", i, key, v, err, patience, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
		// Once it is served locally (ristretto stores
		// asynchronously), the next round's write must invalidate
		// a cached copy.
		for hits := c.Stats().LocalHits; c.Stats().LocalHits == hits; {
			if v, err := c.Get(ctx, key); err != nil || string(v) != want {
				t.Fatalf("round %d: Get(%q) = %q, %v; want %q", i, key, v, err, want)
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %q not served locally within %v", i, key, patience)
			}
			time.Sleep(time.Millisecond)
		}
		cancel()
		ids := invalidationIDs(t, srv, name+"-invalidation")
		most = max(most, len(ids))
		for _, id := range ids {
			seen[id] = true
		}
		time.Sleep(age / 2)
	}
	st := c.Stats()
	t.Logf("%d invalidation connections seen, at most %d at once; %d local hits, %d invalidations, %d flushes",
		len(seen), most, st.LocalHits, st.Invalidations, st.LocalFlushes)
	if len(seen) < 3 {
		t.Errorf("%d invalidation connections over %v with MaxConnAge %v; want them replaced", len(seen), 15*age, age)
	}
	if mode == localcache.TrackKeys {
		// The current one, one read until the data connections
		// pointed to it are replaced, and one more while those of
		// the last are.
		if most > 3 {
			t.Errorf("%d invalidation connections at once; want at most 3", most)
		}
		return
	}
	if most > 2 {
		t.Errorf("%d invalidation connections at once; want the old one closed after the handover", most)
	}
	if st.LocalFlushes != 0 {
		t.Errorf("Stats().LocalFlushes = %d; want 0: a handover flushed the cache", st.LocalFlushes)
	}
	if st.Invalidations < 9 {
		t.Errorf("Stats().Invalidations = %d; want at least one per write of another client", st.Invalidations)
	}
}

// TestNearRefusedInvalidationChannelFailsNew: a user the server does not
// let subscribe to the invalidation channel (no &__redis__:invalidate)
// makes New fail at once with ErrAuth and the server's NOPERM, rather
// than wait for invalidations that never come until its context ends.
func TestNearRefusedInvalidationChannelFailsNew(t *testing.T) {
	srv := launcher.Private(t, launcher.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if out, err := srv.CLI(ctx, "ACL", "SETUSER", "u", "reset", "on", ">pw-u", "~*", "resetchannels", "+@all"); err != nil {
		t.Fatalf("ACL SETUSER: %v (%s)", err, out)
	}
	open, cancelOpen := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelOpen()
	start := time.Now()
	c, err := redisx.New(open, redisx.Options{Addrs: []string{srv.Addr()}, Username: "u", Password: "pw-u", Strategy: localcache.Near{}})
	took := time.Since(start)
	if c != nil {
		c.Close()
	}
	if !errors.Is(err, redisx.ErrAuth) || !strings.Contains(fmt.Sprint(err), "NOPERM") || errors.Is(err, redisx.ErrConnection) {
		t.Errorf("New with a user refused the invalidation channel = %v; want ErrAuth with the server's NOPERM, not ErrConnection", err)
	}
	if took > 2*time.Second {
		t.Errorf("New returned after %v; want at once, not at its context's end", took)
	}
}
